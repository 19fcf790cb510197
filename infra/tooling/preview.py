"""Offline preview: what ``pulumi up`` would create, with no cloud account and no Pulumi CLI.

Runs each Pulumi program (the platform at the repository root and every project in
``stacks/``) with its ``Pulumi.<stack>.yaml`` on Pulumi's mock engine, then prints
the resource tree, the GPU-relevant inputs and a placement table, writes every
Kubernetes object as YAML (schema-checked for the cluster's version), each Helm
release's values and one JSON file of all resources.

    python -m infra.tooling.preview --stack dev [--out preview-out] [--project DIR ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from infra.platform import config as platform_config
from infra.platform.device_plugin import CHART as DEVICE_PLUGIN_CHART
from infra.platform.device_plugin import rendered_scheduling
from infra.platform.instance_types import ARM_NVIDIA
from infra.tooling.manifests import (
    HELM_RELEASE_TYPE,
    ManifestError,
    is_manifest_type,
    manifest_of,
    validate_manifest,
)
from infra.tooling.offline import ProjectError, Registration, Run, Secret, load_project, run_project
from infra.tooling.policy_rules import check as check_policies
from infra.workloads.placement import GPU_RESOURCE, Placement
from infra.workloads.scheduling import Node, placeable_on

ROOT = Path(__file__).resolve().parents[2]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
SECRET_INPUTS = {"pulumi:providers:kubernetes": ("kubeconfig",)}


class PreviewError(Exception):
    """Something the user must fix; the message says what."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _projects(stack: str, chosen: Sequence[str]) -> list[Path]:
    if chosen:
        return [Path(p).resolve() for p in chosen]
    candidates = [ROOT, *sorted(p.parent for p in (ROOT / "stacks").glob("*/Pulumi.yaml"))]
    return [p for p in candidates if (p / f"Pulumi.{stack}.yaml").is_file()]


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
    """One node per node group and instance type, carrying what the group declares."""
    nodes = []
    for group in run.of_type(NODE_GROUP):
        for instance_type in group.inputs.get("instanceTypes", []):
            gpus = ARM_NVIDIA[instance_type].gpus if instance_type in ARM_NVIDIA else 0
            nodes.append(
                Node.from_node_group(
                    f"{group.name}/{instance_type}",
                    labels=group.inputs.get("labels") or {},
                    eks_taints=group.inputs.get("taints") or [],
                    instance_type=instance_type,
                    arch="arm64",
                    gpus=gpus,
                )
            )
    return nodes


def workloads_of(run: Run) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for r in run.resources:
        if is_manifest_type(r.type) and r.custom:
            manifest = manifest_of(r.type, r.name, r.inputs)
            pod = _pod_spec(manifest)
            if pod is not None:
                found.append((f"{manifest['kind']}/{manifest['metadata']['name']}", pod))
        elif r.type == HELM_RELEASE_TYPE and r.inputs.get("chart") == DEVICE_PLUGIN_CHART:
            pod = {
                "containers": [{"name": "nvidia-device-plugin-ctr"}],
                **rendered_scheduling(r.inputs.get("values") or {}),
            }
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


def placement_table(run: Run, nodes: list[Node]) -> list[str]:
    groups = sorted({n.name.split("/")[0] for n in nodes})
    rows = [["workload", *groups]]
    plain = ("(any pod without the toleration)", {"containers": [{"name": "app"}]})
    for name, pod in [*workloads_of(run), plain]:
        fits = {n.name.split("/")[0] for n in nodes if n.name in placeable_on(pod, [n])}
        rows.append([name, *("yes" if g in fits else "-" for g in groups)])
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]


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


def preview(stack: str, out: Path, projects: Sequence[str] = ()) -> int:
    """Preview every project; return the number of Kubernetes manifests written."""
    chosen = _projects(stack, projects)
    if not chosen:
        raise PreviewError(f"no project has a Pulumi.{stack}.yaml; create one or pass --project")
    # The platform's stack decides the Kubernetes version and the contract for every project.
    root_config = load_project(ROOT, stack)[1] if (ROOT / f"Pulumi.{stack}.yaml").is_file() else {}
    version = root_config.get(
        "eks-gpu-platform:kubernetesVersion", platform_config.DEFAULT_KUBERNETES_VERSION
    )
    raw_placement = root_config.get("eks-gpu-platform:placement")
    placement = Placement.from_dict(json.loads(raw_placement)) if raw_placement else Placement()
    nodes: list[Node] = []
    count = 0
    mandatory = 0
    for index, project in enumerate(chosen, 1):
        _say(
            f"[{index}/{len(chosen)}] running {project.relative_to(ROOT) if project.is_relative_to(ROOT) else project} (stack {stack}) on the mock engine ..."
        )
        run = run_project(project, stack)
        name, _ = load_project(project, stack)
        nodes = nodes or nodes_of(run)
        print(f"\n== {name} ({stack}): {len(run.resources)} resources")
        print("\n".join(_tree(run)))
        print("\ncount per type:")
        for typ, n in sorted(Counter(r.type for r in run.resources).items()):
            print(f"  {n:3d}  {typ}")
        print("\nGPU-relevant inputs:")
        print("\n".join(_gpu_inputs(run)) or "  (none)")
        if nodes and workloads_of(run):
            print("\nplacement (can the pods be scheduled on the node group?):")
            print("\n".join(placement_table(run, nodes)))
        violations = check_policies([(r.type, r.name, r.inputs) for r in run.resources], placement)
        print(
            "\npolicy pack (policy/): "
            + ("no violations" if not violations else f"{len(violations)} violation(s)")
        )
        for v in violations:
            print(f"  [{v.level}] {v.rule}: {v.resource} {v.message}")
        mandatory += sum(1 for v in violations if v.level == "mandatory")
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
    args = parser.parse_args(argv)
    try:
        preview(args.stack, args.out, args.project)
    except (PreviewError, ProjectError, ManifestError, platform_config.ConfigError, ValueError) as error:
        _say(f"error: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
