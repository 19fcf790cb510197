"""Offline preview: what ``pulumi up`` would create, with no cloud account and no Pulumi CLI.

Runs each Pulumi program (the platform at the repository root and every project in
``stacks/``) with its ``Pulumi.<stack>.yaml`` on Pulumi's mock engine, then prints
the resource tree, the GPU-relevant inputs and a placement table, writes every
Kubernetes object as YAML (schema-checked for the cluster's version), each Helm
release's values and one JSON file of all resources.

    python -m infra.tooling.preview --stack dev [--out preview-out] [--project DIR ...]

Where the time goes (profiled on a 2-core machine): importing the provider SDK
modules the programs touch (the platform alone pulls in ~800 modules, among them
``pulumi_aws.ec2``'s ~180 and ``pulumi_kubernetes.core.v1``, one 2.5 MB module),
then Pulumi resolving each Args class's type hints on first use, then tearing the
interpreter down (~0.5 s). Running the programs again in the same process takes a
tenth of the first run, and checking manifests far less. So: the platform runs in
a forked worker while this process runs the stacks and parses the Kubernetes
schemas; the report is still built and printed here, project by project in the
usual order, so the output is what one process prints (``--jobs 1``). The command
line also turns off the cyclic garbage collector (the objects are not garbage; its
passes only slowed the imports, by about a fifth) and skips the teardown.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import io
import json
import multiprocessing
import os
import pickle
import sys
import threading
import traceback
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from infra.platform import config as platform_config
from infra.platform.device_plugin import CHART as DEVICE_PLUGIN_CHART
from infra.platform.instance_types import ARM_NVIDIA
from infra.platform.node_pools import TEMPLATE
from infra.tooling.agents import landings
from infra.tooling.agents import table as agent_table
from infra.tooling.chart_models import device_plugin_pod
from infra.tooling.costs import lines as cost_lines
from infra.tooling.costs import stack_cost
from infra.tooling.manifests import (
    HELM_RELEASE_TYPE,
    ManifestError,
    is_manifest_type,
    manifest_of,
    preload,
    validate_manifest,
)
from infra.tooling.offline import (
    ProjectError,
    Registration,
    Run,
    Secret,
    load_project,
    platform_contract,
    run_project,
)
from infra.tooling.policy_rules import STACK, Links, resource_key
from infra.tooling.policy_rules import check as check_policies
from infra.workloads.images import image_check_status
from infra.workloads.placement import GPU_RESOURCE, POOL_LABEL, Placement
from infra.workloads.quantity import whole_count
from infra.workloads.scheduling import Node, pods_per_node

ROOT = Path(__file__).resolve().parents[2]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
SECRET_INPUTS = {"pulumi:providers:kubernetes": ("kubeconfig",)}
# Imported before the workers fork, so that it is imported once for them and this
# process: every project here declares Kubernetes objects (the platform its device
# plugin's namespace, each stack its workloads), and core/v1 is one 2.5 MB module, ~0.2 s.
SHARED_IMPORTS = ("pulumi_kubernetes.core.v1",)


class PreviewError(Exception):
    """Something the user must fix; the message says what."""


# What ``main`` reports as "error: ..." with exit code 1, rather than a traceback.
USER_ERRORS = (PreviewError, ProjectError, ManifestError, platform_config.ConfigError, ValueError)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _runtime(project: Path) -> str:
    """The project's language runtime (``runtime: python`` or ``runtime: {name: python, ...}``)."""
    runtime = (yaml.safe_load((project / "Pulumi.yaml").read_text()) or {}).get("runtime")
    return str(runtime.get("name") if isinstance(runtime, dict) else runtime)


def _projects(stack: str, chosen: Sequence[str]) -> list[Path]:
    if chosen:
        return [Path(p).resolve() for p in chosen]
    candidates = [ROOT, *sorted(p.parent for p in (ROOT / "stacks").glob("*/Pulumi.yaml"))]
    found = []
    for project in (p for p in candidates if (p / f"Pulumi.{stack}.yaml").is_file()):
        runtime = _runtime(project)
        if runtime == "python":
            found.append(project)
        else:  # e.g. stacks/inference-yaml: a Pulumi YAML program has no __main__.py to run here
            _say(
                f"skipping {project.relative_to(ROOT)}: runtime {runtime}; the offline preview runs Python programs"
            )
    return found


def _masked(registration: Registration) -> dict[str, Any]:
    inputs = dict(registration.inputs)
    for key in SECRET_INPUTS.get(registration.type, ()):
        if key in inputs:
            inputs[key] = "[secret]"
    return inputs


def _pod_spec(manifest: dict[str, Any]) -> dict[str, Any] | None:
    kind, spec = manifest.get("kind"), manifest.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec")
    if kind in WORKLOAD_KINDS:
        return (spec.get("template") or {}).get("spec")
    return None


def nodes_of(run: Run) -> list[Node]:
    """One node per node group and instance type, offering what a real one would.

    A pool's ``nvidia.com/gpu`` is what its node group tells the autoscaler
    (``node-template/resources``: GPUs x time-slicing replicas), else the type's GPUs.
    """
    nodes = []
    for group in run.of_type(NODE_GROUP):
        advertised = (group.inputs.get("tags") or {}).get(f"{TEMPLATE}/resources/{GPU_RESOURCE}")
        for instance_type in group.inputs.get("instanceTypes", []):
            gpus = ARM_NVIDIA[instance_type].gpus if instance_type in ARM_NVIDIA else 0
            nodes.append(
                Node.from_node_group(
                    f"{group.name}/{instance_type}",
                    labels=group.inputs.get("labels") or {},
                    eks_taints=group.inputs.get("taints") or [],
                    instance_type=instance_type,
                    arch="arm64",
                    gpus=whole_count(advertised) if advertised else gpus,
                )
            )
    return nodes


def _column(node: Node) -> str:
    """A node group's column: its pool's name, else the node group's own."""
    return node.labels.get(POOL_LABEL) or node.name.split("/")[0]


def workloads_of(run: Run) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for r in run.resources:
        if is_manifest_type(r.type) and r.custom:
            manifest = manifest_of(r.type, r.name, r.inputs)
            pod = _pod_spec(manifest)
            if pod is not None:
                found.append((f"{manifest['kind']}/{manifest['metadata']['name']}", pod))
        elif r.type == HELM_RELEASE_TYPE and r.inputs.get("chart") == DEVICE_PLUGIN_CHART:
            pod = device_plugin_pod(r.inputs.get("values") or {})
            found.append((f"DaemonSet/{r.inputs.get('name', r.name)} (helm)", pod))
    return found


def _tree(run: Run) -> list[str]:
    by_parent: dict[str, list[Registration]] = {}
    urns = {r.urn for r in run.resources}
    for r in run.resources:
        by_parent.setdefault(r.parent if r.parent in urns else "", []).append(r)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for r in by_parent.get(parent, []):
            lines.append(f"{'  ' * depth}{r.type}  {r.name}{'  [protected]' if r.protect else ''}")
            walk(r.urn, depth + 1)

    walk("", 1)
    return lines


def _gpu_inputs(run: Run) -> list[str]:
    lines = []
    for g in run.of_type(NODE_GROUP):
        i = g.inputs
        scaling = i.get("scalingConfig", {})
        lines.append(
            f"  node group {g.name}: amiType={i.get('amiType')} instanceTypes={i.get('instanceTypes')} "
            f"labels={i.get('labels')} taints={i.get('taints', [])} "
            f"scaling={scaling.get('minSize')}/{scaling.get('desiredSize')}/{scaling.get('maxSize')} (min/desired/max)"
        )
    for rel in run.of_type(HELM_RELEASE_TYPE):
        i = rel.inputs
        lines.append(
            f"  helm release {rel.name}: chart={i.get('chart')} version={i.get('version')} namespace={i.get('namespace')}"
        )
        lines.append(f"    values: {json.dumps(i.get('values') or {}, sort_keys=True)}")
    for name, pod in workloads_of(run):
        gpus = [
            ((c.get("resources") or {}).get("limits") or {}).get(GPU_RESOURCE)
            for c in pod.get("containers") or []
        ]
        lines.append(
            f"  workload {name}: nodeSelector={pod.get('nodeSelector') or {}} "
            f"tolerations={pod.get('tolerations') or []} gpu limits per container={gpus}"
        )
    return lines


IMAGE_COLUMN = "linux/arm64 image"


def _image_status(pod: Mapping[str, Any]) -> str:
    """What the image check says of the pod's images (offline: not checked)."""
    images = sorted(
        {
            c.get("image")
            for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
            if c.get("image")
        }
    )
    return "; ".join(f"{image_check_status(i)}" for i in images) or "-"


def placement_table(run: Run, nodes: list[Node]) -> list[str]:
    """Which pools (node groups) each workload can land on: ``-``, ``yes``, or GPU pods per node.

    The last column is the image architecture check of the workload's images.
    """
    groups = sorted({_column(n) for n in nodes})
    rows = [["workload", *groups, IMAGE_COLUMN]]
    plain = ("(any pod without the toleration)", {"containers": [{"name": "app"}]})
    for name, pod in [*workloads_of(run), plain]:
        cells = []
        for group in groups:
            counts = [pods_per_node(pod, n) for n in nodes if _column(n) == group]
            if all(c == 0 for c in counts):
                cells.append("-")
            elif any(c is None for c in counts):
                cells.append("yes")  # lands there; asks for no GPU, so GPUs set no bound
            else:
                cells.append(f"{min(c for c in counts if c)}/node")
        rows.append([name, *cells, _image_status(pod)])
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def spot_notes(run: Run) -> list[str]:
    """What a SPOT pool means for the workloads on it."""
    notes = []
    for group in run.of_type(NODE_GROUP):
        if group.inputs.get("capacityType") == "SPOT":
            pool = (group.inputs.get("labels") or {}).get(POOL_LABEL, group.name)
            notes.append(
                f"  {pool} is SPOT: a node can be reclaimed with 2 minutes' notice; EKS drains it and its pods "
                "go back to Pending and reschedule (a PodDisruptionBudget limits drains, not the reclaim). "
                "A pod that names no pool gets the cheapest pool that fits it; spot wins only over "
                "an on-demand pool of the same price rank (infra/platform/autoscaler.py)."
            )
    return notes


def _jsonable(value: Any) -> Any:
    if isinstance(value, Secret):
        return "[secret]"
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def write_outputs(run: Run, out: Path, kubernetes_version: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for r in run.resources:
        if is_manifest_type(r.type) and r.custom:
            manifest = manifest_of(r.type, r.name, r.inputs)
            validate_manifest(manifest, kubernetes_version)
            namespace = manifest["metadata"].get(
                "namespace", "cluster" if manifest["kind"] == "Namespace" else "default"
            )
            path = out / f"{manifest['kind'].lower()}-{namespace}-{manifest['metadata']['name']}.yaml"
            path.write_text(yaml.safe_dump(manifest, sort_keys=False))
            written.append(path)
        elif r.type == HELM_RELEASE_TYPE:
            path = out / f"helm-{r.name}.values.yaml"
            path.write_text(yaml.safe_dump(r.inputs.get("values") or {}, sort_keys=False))
            written.append(path)
    resources = [
        {"type": r.type, "name": r.name, "parent": r.parent, "protect": r.protect, "inputs": _masked(r)}
        for r in run.resources
    ]
    path = out / "resources.json"
    path.write_text(
        json.dumps(
            {"resources": resources, "outputs": _jsonable(run.stack_outputs)}, indent=2, sort_keys=True
        )
    )
    written.append(path)
    return written


class WorkerTraceback(Exception):
    """Where in a worker an unexpected error came from (shown as the cause of the re-raised error)."""

    def __str__(self) -> str:
        return f'\n"""\n{self.args[0]}"""'


@dataclass
class ProjectRun:
    """One project's program run, as a worker hands it back: its name and run, or the error it raised.

    Workers return the run, not a printed report: the placement table of a stack
    needs the node groups the platform (another project) declared, and the schema
    check uses the definitions this process parsed while the workers ran.
    """

    name: str = ""
    run: Run | None = None
    error: BaseException | None = None
    traceback: str = ""
    stdout: str = ""  # what the program printed, replayed where a sequential run prints it
    stderr: str = ""

    def result(self) -> tuple[str, Run]:
        """The name and run, or the worker's error raised here."""
        sys.stdout.write(self.stdout)
        sys.stderr.write(self.stderr)
        if self.error is not None:
            if isinstance(self.error, USER_ERRORS):
                raise self.error  # reported as "error: <message>", as without workers
            raise self.error from WorkerTraceback(self.traceback)
        assert self.run is not None
        return self.name, self.run


def _run_one(project: Path, stack: str) -> ProjectRun:
    """Run one project's program (inline, or in a worker)."""
    run = run_project(project, stack)
    name, _ = load_project(project, stack)
    return ProjectRun(name=name, run=run)


def _captured(project: Path, stack: str) -> ProjectRun:
    """``_run_one`` with what the program prints kept, and any error it raises kept too, for later."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            outcome = _run_one(project, stack)
    except Exception as error:
        outcome = ProjectRun(error=error, traceback=traceback.format_exc())
    outcome.stdout, outcome.stderr = out.getvalue(), err.getvalue()
    return outcome


def _run_in_worker(project: Path, stack: str) -> bytes:
    """``_captured`` in a worker process, pickled here so that nothing can fail on the way back.

    Never raises: an error travels as itself, or, if it cannot be pickled, as a
    PreviewError with the same message (a user error) or a RuntimeError naming it.
    """
    outcome = _captured(project, stack)
    try:
        return pickle.dumps(outcome)
    except Exception as unpicklable:
        if isinstance(outcome.error, USER_ERRORS):
            outcome.error = PreviewError(str(outcome.error))
        else:
            problem = outcome.error or unpicklable
            outcome.error = RuntimeError(f"{type(problem).__name__}: {problem} (in a preview worker)")
            outcome.traceback = outcome.traceback or traceback.format_exc()
        outcome.run = None
        return pickle.dumps(outcome)


def _workers(projects: int, jobs: int | None) -> int:
    """How many projects run at once (this process being one of them); 0 or 1: one after the other.

    Default: one per core. Never more than one when this process has other threads
    (e.g. a test process that already ran a program: Pulumi's event loop keeps
    executor threads): a forked child gets only the forking thread, and an executor
    that believes it has idle threads would wait on them for ever.
    """
    cores = os.cpu_count() or 1
    wanted = min(jobs if jobs is not None else cores, projects)
    if wanted < 2 or "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 0
    return wanted


def _runs(
    projects: Sequence[Path], stack: str, kubernetes_version: str, jobs: int | None = None
) -> Iterator[tuple[str, Run]]:
    """Each project's (name, run), in the given order, announced as it is reached.

    In parallel, all but the last project run in forked worker processes (fork:
    what this process imported is not imported again) while this process runs the
    last one, then parses the Kubernetes schemas. The first project is the
    platform, by far the heaviest (the AWS SDK); the stacks after it only declare
    Kubernetes objects, so this process has time to spare for the schemas; and one
    process fewer was faster and ~15% less memory (PSS) than a worker per project.
    Results are still taken in order, so a failing project stops the preview where
    a sequential run stops: nothing after it is printed or written (though the
    programs after it have run).
    """
    workers = _workers(len(projects), jobs)

    def announce(index: int, project: Path) -> None:
        shown = project.relative_to(ROOT) if project.is_relative_to(ROOT) else project
        _say(f"[{index}/{len(projects)}] running {shown} (stack {stack}) on the mock engine ...")

    if not workers:
        for index, project in enumerate(projects, 1):
            announce(index, project)
            yield _run_one(project, stack).result()
        return
    for module in SHARED_IMPORTS:
        vars(importlib.import_module(module))  # touching it loads it, where the SDK imports lazily
    sys.stdout.flush()  # a child must not inherit (and later write) anything still buffered
    sys.stderr.flush()
    # Every worker is forked at the first submit, before this process runs a program
    # (which starts threads); the pool's own thread starts after them.
    executor = ProcessPoolExecutor(workers - 1, mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [executor.submit(_run_in_worker, project, stack) for project in projects[:-1]]
        last = _captured(projects[-1], stack)
        preload(kubernetes_version)
        for index, project in enumerate(projects, 1):
            announce(index, project)
            outcome = pickle.loads(futures[index - 1].result()) if index <= len(futures) else last
            yield outcome.result()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def _unsecret(value: Any) -> Any:
    """What a policy sees of a stack output: pulumi_policy hands secrets over as their values."""
    if isinstance(value, Secret):
        return _unsecret(value.value)
    if isinstance(value, dict):
        return {k: _unsecret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unsecret(v) for v in value]
    return value


def policy_input(project: str, stack: str, run: Run) -> tuple[list[tuple[str, str, Any]], Links]:
    """What the engine shows the pack of one project's stack: (resources, links); no contract of ours.

    The resources' inputs, plus the root stack with its outputs (in ``AnalyzeStack`` the
    ``pulumi:pulumi:Stack`` resource's properties are the stack's outputs: that is where
    a platform declares its contract), and their parents and dependencies.
    """
    key_of = {r.urn: resource_key(r.type, r.name) for r in run.resources}
    root = (STACK, f"{project}-{stack}", _unsecret(run.stack_outputs))
    links = Links(
        parents={key_of[r.urn]: key_of[r.parent] for r in run.resources if r.parent in key_of},
        dependencies={
            key_of[r.urn]: [key_of[d] for d in r.dependencies if d in key_of] for r in run.resources
        },
    )
    return [root, *((r.type, r.name, r.inputs) for r in run.resources)], links


def project_report(
    name: str, stack: str, run: Run, nodes: list[Node], placement: Placement, region: str | None = None
) -> tuple[list[str], int]:
    """One project's report as printed blocks (each block one ``print``), and its mandatory violations.

    New sections go here, in the order they should print.
    """
    blocks = [f"\n== {name} ({stack}): {len(run.resources)} resources", "\n".join(_tree(run))]
    blocks.append("\ncount per type:")
    blocks += [f"  {n:3d}  {typ}" for typ, n in sorted(Counter(r.type for r in run.resources).items())]
    blocks.append("\nGPU-relevant inputs:")
    blocks.append("\n".join(_gpu_inputs(run)) or "  (none)")
    if nodes and workloads_of(run):
        blocks.append(
            "\nplacement (can the pods be scheduled on the node group? N/node: GPU pods one node holds):"
        )
        blocks.append("\n".join(placement_table(run, nodes)))
    notes = spot_notes(run)
    if notes:
        blocks.append("\n" + "\n".join(notes))
    resources = [(r.type, r.name, r.inputs) for r in run.resources]
    if run.of_type(NODE_GROUP):
        blocks.append("\nagents (DaemonSets): on which node groups each lands:")
        blocks.append("\n".join(agent_table(landings(resources, placement))))
        blocks.append("\n" + "\n".join(cost_lines(stack_cost(resources), region)))
    # Judged as the pack judges the stack: by the contract the stack itself declares.
    policy_resources, links = policy_input(name, stack, run)
    violations = check_policies(policy_resources, links=links)
    blocks.append(
        "\npolicy pack (policy/): "
        + ("no violations" if not violations else f"{len(violations)} violation(s)")
    )
    blocks += [f"  [{v.level}] {v.rule}: {v.resource} {v.message}" for v in violations]
    return blocks, sum(1 for v in violations if v.level == "mandatory")


def preview(stack: str, out: Path, projects: Sequence[str] = (), jobs: int | None = None) -> int:
    """Preview every project; return the number of Kubernetes manifests written.

    ``jobs``: how many projects run at once (default: one per core); 1 runs them in
    this process, one after the other (e.g. to profile a program).
    """
    chosen = _projects(stack, projects)
    if not chosen:
        raise PreviewError(f"no project has a Pulumi.{stack}.yaml; create one or pass --project")
    # The platform's stack decides the Kubernetes version and the contract for every project.
    root_config = load_project(ROOT, stack)[1] if (ROOT / f"Pulumi.{stack}.yaml").is_file() else {}
    version = root_config.get(
        "eks-gpu-platform:kubernetesVersion", platform_config.DEFAULT_KUBERNETES_VERSION
    )
    placement = Placement.from_dict(platform_contract(stack))  # the contract with its pools
    nodes: list[Node] = []
    count = 0
    mandatory = 0
    # closing: on an error below, the workers are shut down here, not whenever the generator is freed.
    with contextlib.closing(_runs(chosen, stack, version, jobs)) as runs:
        for name, run in runs:
            nodes = nodes or nodes_of(run)
            blocks, project_mandatory = project_report(
                name, stack, run, nodes, placement, root_config.get("aws:region")
            )
            print("\n".join(blocks))
            mandatory += project_mandatory
            written = write_outputs(run, out / name, version)
            count += sum(1 for p in written if not p.name.startswith(("helm-", "resources")))
            print(f"\nwrote {len(written)} files to {out / name} (manifests valid for Kubernetes {version})")
            if run.stack_outputs:
                print("outputs: " + json.dumps(_jsonable(run.stack_outputs), sort_keys=True))
    if mandatory:
        raise PreviewError(f"{mandatory} mandatory policy violation(s); each line above names the fix")
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.tooling.preview", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--stack", default="dev", help="stack whose Pulumi.<stack>.yaml to use (default: dev)"
    )
    parser.add_argument(
        "--out", default="preview-out", type=Path, help="where to write manifests (default: preview-out)"
    )
    parser.add_argument(
        "--project", action="append", default=[], help="a project directory (repeatable; default: all)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="projects run at once, the others in forked processes (default: one per core; 1: all in this one)",
    )
    args = parser.parse_args(argv)
    try:
        preview(args.stack, args.out, args.project, args.jobs)
    except USER_ERRORS as error:
        _say(f"error: {error}")
        return 1
    return 0


def _cli() -> NoReturn:
    """``main`` as a short-lived command: no cyclic GC, no interpreter teardown.

    The run allocates about a million long-lived objects (SDK classes, type hints)
    and almost no cyclic garbage, so the collector's passes only slow the imports
    (about a fifth of their time; peak memory is unchanged). Tearing the interpreter
    down frees all of it one object at a time (~0.5 s); the OS reclaims it at once.
    Every file is closed by then; stdout and stderr are flushed first.
    """
    gc.disable()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    # Run as the importable module, not as __main__: a worker's function and result
    # travel as pickled references by module name, and while this process runs a
    # program (runpy, run_name="__main__") __main__ is that program, not this file.
    from infra.tooling import preview

    preview._cli()
