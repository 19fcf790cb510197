"""Offline preview: what ``pulumi up`` would create, with no cloud account and no Pulumi CLI."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from infra.platform import config as platform_config
from infra.tooling.agents import (
    NODE_GROUP,
    NODEPOOL,
    aligned,
    declared_nodes,
    device_plugin_daemonsets,
    landings,
    nodepool_requirement,
    nodepool_template,
)
from infra.tooling.agents import table as agent_table
from infra.tooling.chart_models import DEVICE_PLUGIN_CHART, ChartUnavailable, is_device_plugin
from infra.tooling.costs import lines as cost_lines
from infra.tooling.costs import stack_cost
from infra.tooling.gomod import GoModuleUnavailable
from infra.tooling.manifests import HELM_RELEASE_TYPE, is_manifest_type, manifest_of, validate_manifest
from infra.tooling.offline import Registration, Run, Secret, load_project, run_project
from infra.tooling.policy_rules import STACK, Links, declared_contracts, pod_specs_of
from infra.tooling.policy_rules import check as check_policies
from infra.tooling.queue_rules import quota_lines
from infra.tooling.resource_keys import Named
from infra.workloads.images import image_check_status
from infra.workloads.placement import GPU_RESOURCE, POOL_LABEL
from infra.workloads.scheduling import Node, fits, pods_per_node, too_big

ROOT = Path(__file__).resolve().parents[2]
SECRET_INPUTS = {"pulumi:providers:kubernetes": ("kubeconfig",)}
# The report's section headings
PLACEMENT = "\nplacement (can the pods be scheduled on the node group? N/node: GPU pods one node holds):"
TOO_LARGE = "\ntoo large for every node of a pool it selects (allocatable after nodeadm's reserves):"
TEAMS = "\nteams (Kueue): quota per pool in nvidia.com/gpu as the pool advertises it (slices when shared):"


class PreviewError(Exception):
    """Something the user must fix; the message says what."""


# What ``main`` reports as "error: ..." with exit code 1, rather than a traceback; config,
# project and manifest errors are ValueErrors.
USER_ERRORS = (PreviewError, ChartUnavailable, ValueError)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _projects(stack: str, chosen: Sequence[str]) -> list[Path]:
    if chosen:
        return [Path(p).resolve() for p in chosen]
    candidates = [ROOT, *sorted(p.parent for p in (ROOT / "stacks").glob("*/Pulumi.yaml"))]
    found = []
    for project in (p for p in candidates if (p / f"Pulumi.{stack}.yaml").is_file()):
        # ``runtime: python`` or ``runtime: {name: python, ...}``
        runtime = (yaml.safe_load((project / "Pulumi.yaml").read_text()) or {}).get("runtime")
        runtime = runtime.get("name") if isinstance(runtime, dict) else runtime
        if runtime == "python":
            found.append(project)
        else:  # e.g. stacks/inference-yaml: a Pulumi YAML program has no __main__.py to run here
            _say(
                f"skipping {project.relative_to(ROOT)}: runtime {runtime}; the offline preview runs Python programs"
            )
    return found


def _column(node: Node) -> str:
    """A node group's column: its pool's name, else the node group's own."""
    return node.labels.get(POOL_LABEL) or node.name.split("/")[0]


def workloads_of(run: Run) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for r in run.resources:
        if r.custom and (pods := pod_specs_of(r.type, r.inputs)):
            name = (r.inputs.get("metadata") or {}).get("name", r.name)
            shown = f"{r.type.rsplit(':', 1)[1]}/{name}"
            found += [(shown if len(pods) == 1 else f"{shown} {path}", pod) for path, pod in pods]
        elif r.type == HELM_RELEASE_TYPE and r.inputs.get("chart") == DEVICE_PLUGIN_CHART:
            try:
                rendered, _ = device_plugin_daemonsets(r.name, r.inputs)  # None: the agent table says why
            except ChartUnavailable:
                rendered = None  # the agent table shows the plugin unknown, with what is missing
            for pod in (rendered or {}).values():
                if is_device_plugin(pod):
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
        scaling = i.get("scalingConfig") or {}  # as given: a malformed one is the pack's finding
        sizes = (
            "/".join(str(scaling.get(k)) for k in ("minSize", "desiredSize", "maxSize"))
            if isinstance(scaling, Mapping)
            else repr(scaling)
        )
        lines.append(
            f"  node group {g.name}: amiType={i.get('amiType')} instanceTypes={i.get('instanceTypes')} "
            f"labels={i.get('labels')} taints={i.get('taints', [])} scaling={sizes} (min/desired/max)"
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


def _image_status(pod: Mapping[str, Any]) -> str:
    """What the image check says of the pod's images (offline: not checked)."""
    containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
    images = sorted({c["image"] for c in containers if c.get("image")})
    return "; ".join(image_check_status(i) for i in images) or "-"


def placement_table(run: Run, nodes: list[Node]) -> list[str]:
    """Which pools (node groups) each workload can land on (``-``, ``yes``, or GPU pods per node),
    and the image architecture check of its images."""
    groups = sorted({_column(n) for n in nodes})
    rows = [["workload", *groups, "linux/arm64 image"]]
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
    return aligned(rows)


def _sized_only(pod: Mapping[str, Any], node: Node) -> list[str]:
    """The CPU and memory reasons when they are the only ones the pod does not fit ``node`` for."""
    reasons, size = fits(pod, node).reasons, too_big(pod, node)
    return size if size and set(reasons) == set(size) else []


def _size(node: Node) -> tuple[int, int]:
    return node.allocatable.get("memory", 0), node.allocatable.get("cpu", 0)


def size_notes(run: Run, nodes: list[Node]) -> list[str]:
    """Workloads a pool takes by its labels and taints but whose CPU or memory its nodes cannot hold
    (nodeadm's allocatable, not the instance's size: infra/platform/allocatable.py): none of its
    types (the pod can never run there), or only some: the autoscaler's template for the pool at
    zero is its smallest type (node_pools.template_resources), so it starts no node for the pod
    (Karpenter picks a type that fits: only the first case holds for its NodePools)."""
    notes = []
    for name, pod in workloads_of(run):
        for group in sorted({_column(n) for n in nodes}):
            members = [n for n in nodes if _column(n) == group]
            short = [n for n in members if _sized_only(pod, n)]
            if not short or not all(fits(pod, n).fits or n in short for n in members):
                continue
            if len(short) == len(members):
                node, says = max(short, key=_size), "cannot run on pool {}: its largest type"
            else:
                node, says = min(members, key=_size), "scales nothing from zero on pool {}: its smallest type"
            if node in short and (len(short) == len(members) or "karpenter.sh/nodepool" not in node.labels):
                why = "; ".join(_sized_only(pod, node))
                notes.append(f"  {name} {says.format(group)} {node.name}: {why}")
    return notes


def spot_notes(run: Run) -> list[str]:
    """What a SPOT pool means for the workloads on it."""
    notes = [
        f"  {(group.inputs.get('labels') or {}).get(POOL_LABEL, group.name)} is SPOT: a node can be reclaimed "
        "with 2 minutes' notice; EKS drains it and its pods go back to Pending and reschedule (a "
        "PodDisruptionBudget limits drains, not the reclaim). A pod that names no pool gets the cheapest pool "
        "that fits it; spot wins only over an on-demand pool of the same price rank (infra/platform/autoscaler.py)."
        for group in run.of_type(NODE_GROUP)
        if group.inputs.get("capacityType") == "SPOT"
    ]
    for pool in run.of_type(NODEPOOL):
        capacity = nodepool_requirement(pool.inputs, "karpenter.sh/capacity-type")
        if "spot" in capacity:
            labels = nodepool_template(pool.inputs)[0]
            either = (
                " or on-demand (Karpenter takes spot where it is to be had)"
                if "on-demand" in capacity
                else ""
            )
            notes.append(
                f"  {labels.get(POOL_LABEL, pool.name)} may run on SPOT{either}: Karpenter hears the 2-minute "
                "reclaim notice through its interruption queue and drains the node; its pods go back to Pending "
                "and reschedule."
            )
    return notes


def _secrets(value: Any, reveal: bool = False) -> Any:
    """``value`` with every Secret shown as ``[secret]``, or with ``reveal`` as its value (what a
    policy sees of a stack output: pulumi_policy hands secrets over as their values)."""
    if isinstance(value, Secret):
        return _secrets(value.value, reveal) if reveal else "[secret]"
    if isinstance(value, dict):
        return {k: _secrets(v, reveal) for k, v in value.items()}
    if isinstance(value, list):
        return [_secrets(v, reveal) for v in value]
    return value


def _shown(r: Registration) -> dict[str, Any]:
    """A resource as resources.json shows it, a provider's credentials masked."""
    secret = SECRET_INPUTS.get(r.type, ())
    inputs = {k: "[secret]" if k in secret else v for k, v in r.inputs.items()}
    return {"type": r.type, "name": r.name, "parent": r.parent, "protect": r.protect, "inputs": inputs}


def write_outputs(run: Run, out: Path, kubernetes_version: str) -> int:
    """Write every Kubernetes object (schema-checked), each Helm release's values and resources.json;
    return how many files."""
    files: dict[str, Any] = {}
    for r in run.resources:
        if is_manifest_type(r.type) and r.custom:
            manifest = manifest_of(r.type, r.name, r.inputs)
            try:
                validate_manifest(manifest, kubernetes_version)
            except GoModuleUnavailable as error:  # a custom resource's CRD comes from a pinned Go module
                _say(f"warning: {manifest['kind']}/{r.name} not checked against its CRD: {error}")
            kind, metadata = manifest["kind"], manifest["metadata"]
            namespace = metadata.get("namespace", "cluster" if kind == "Namespace" else "default")
            files[f"{kind.lower()}-{namespace}-{metadata['name']}.yaml"] = manifest
        elif r.type == HELM_RELEASE_TYPE:
            files[f"helm-{r.name}.values.yaml"] = r.inputs.get("values") or {}
    out.mkdir(parents=True, exist_ok=True)
    for filename, content in files.items():
        (out / filename).write_text(yaml.safe_dump(content, sort_keys=False))
    shown = {"resources": [_shown(r) for r in run.resources], "outputs": _secrets(run.stack_outputs)}
    (out / "resources.json").write_text(json.dumps(shown, indent=2, sort_keys=True))
    return len(files) + 1


def policy_input(project: str, stack: str, run: Run) -> tuple[list[tuple[str, str, Any]], Links]:
    """What the engine shows the pack of one project's stack: (resources, links); no contract of ours."""
    urns = {r.urn for r in run.resources}
    root = (STACK, f"{project}-{stack}", _secrets(run.stack_outputs, reveal=True))
    links = Links(
        parents={r.urn: r.parent for r in run.resources if r.parent in urns},
        dependencies={r.urn: [d for d in r.dependencies if d in urns] for r in run.resources},
    )
    return [root, *((r.type, Named(r.name, r.urn), r.inputs) for r in run.resources)], links


def project_report(
    name: str, stack: str, run: Run, nodes: list[Node], region: str | None = None
) -> tuple[list[str], int]:
    """One project's report as printed blocks, in order, and its mandatory violations."""
    policy_resources, links = policy_input(name, stack, run)
    contracts = declared_contracts(policy_resources, links)
    blocks = [f"\n== {name} ({stack}): {len(run.resources)} resources", "\n".join(_tree(run))]
    blocks.append("\ncount per type:")
    blocks += [f"  {n:3d}  {typ}" for typ, n in sorted(Counter(r.type for r in run.resources).items())]
    blocks.append("\nGPU-relevant inputs:")
    blocks.append("\n".join(_gpu_inputs(run)) or "  (none)")
    if nodes and workloads_of(run):
        blocks += [PLACEMENT, "\n".join(placement_table(run, nodes))]
    if nodes and (too_large := size_notes(run, nodes)):
        blocks += [TOO_LARGE, *too_large]
    if notes := spot_notes(run):
        blocks.append("\n" + "\n".join(notes))
    resources = [(r.type, r.name, r.inputs) for r in run.resources]
    if run.of_type(NODE_GROUP) or run.of_type(NODEPOOL):
        blocks.append("\nagents (DaemonSets): on which node groups (and Karpenter NodePools) each lands:")
        blocks.append("\n".join(agent_table(landings(resources, contracts[0]))))
        blocks.append("\n" + "\n".join(cost_lines(stack_cost(resources), region)))
    if teams := quota_lines(resources, contracts[0]):
        blocks += [TEAMS, *teams]
    violations = check_policies(policy_resources, contracts, links=links)
    counted = f"{len(violations)} violation(s)" if violations else "no violations"
    blocks.append(f"\npolicy pack (policy/): {counted}")
    shown = {r.urn: f"{r.type} {r.name}" for r in run.resources}  # violations name resources by URN
    blocks += [f"  [{v.level}] {v.rule}: {shown.get(v.resource, v.resource)} {v.message}" for v in violations]
    return blocks, sum(1 for v in violations if v.level == "mandatory")


def preview(stack: str, out: Path, projects: Sequence[str] = ()) -> None:
    """Preview every project, one after the other; PreviewError if none, or on a mandatory violation."""
    chosen = _projects(stack, projects)
    if not chosen:
        raise PreviewError(f"no project has a Pulumi.{stack}.yaml; create one or pass --project")
    # The platform's stack decides the Kubernetes version for every project.
    root_config = load_project(ROOT, stack)[1] if (ROOT / f"Pulumi.{stack}.yaml").is_file() else {}
    version = root_config.get(
        "eks-gpu-platform:kubernetesVersion", platform_config.DEFAULT_KUBERNETES_VERSION
    )
    nodes: list[Node] = []
    mandatory = 0
    for index, project in enumerate(chosen, 1):
        shown = project.relative_to(ROOT) if project.is_relative_to(ROOT) else project
        _say(f"[{index}/{len(chosen)}] running {shown} (stack {stack}) on the mock engine ...")
        run = run_project(project, stack)
        name = load_project(project, stack)[0]
        # one node per node group and instance type, offering what a real one would
        nodes = nodes or declared_nodes([(r.type, r.name, r.inputs) for r in run.resources])
        blocks, project_mandatory = project_report(name, stack, run, nodes, root_config.get("aws:region"))
        print("\n".join(blocks))
        mandatory += project_mandatory
        written = write_outputs(run, out / name, version)
        print(f"\nwrote {written} files to {out / name} (manifests valid for Kubernetes {version})")
        if run.stack_outputs:
            print("outputs: " + json.dumps(_secrets(run.stack_outputs), sort_keys=True))
    if mandatory:
        raise PreviewError(f"{mandatory} mandatory policy violation(s); each line above names the fix")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.tooling.preview", description=__doc__)
    parser.add_argument(
        "--stack", default="dev", help="stack whose Pulumi.<stack>.yaml to use (default: dev)"
    )
    parser.add_argument(
        "--out", default="preview-out", type=Path, help="where to write manifests (default: preview-out)"
    )
    parser.add_argument(
        "--project", action="append", default=[], help="a project directory (repeatable; default: all)"
    )
    args = parser.parse_args(argv)
    try:
        preview(args.stack, args.out, args.project)
    except USER_ERRORS as error:
        _say(f"error: {error}")
        return 1
    return 0


def _cli() -> NoReturn:
    """``main`` as a short-lived command: no cyclic GC, no interpreter teardown (decision 0026)."""
    gc.disable()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _cli()
