"""``pulumi up`` of the TypeScript GpuDeployment vs the same Deployment written by hand in TypeScript.

    .venv/bin/python bench/bench_pulumi_up_ts.py

Two TypeScript programs on the TypeScript stack's npm packages (``bin/setup`` installs them):
one declares ``GpuDeployment`` through the generated SDK (``@pulumi/eks-gpu``, a remote
component: the CLI starts the package's plugin file and the Python component builds the
Deployment), the other a plain ``k8s.apps.v1.Deployment`` whose spec already carries the
nodeSelector, toleration and GPU limit (``place_deployment_spec``'s output, written into the
program as a literal), so both send the same object and the provider waits until it is Available
in both. Median of ``RUNS`` up/destroy cycles each; starts the local cluster when it is not
running, and stops it afterwards only then (as bench_pulumi_up.py).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # localcluster/, as bench_localcluster.py

from bench_pulumi_up import median_up, running, start_cluster

from infra.tooling.offline import platform_contract
from infra.workloads.deployment import place_deployment_spec
from localcluster import cluster as local

STACK = local.ROOT / "stacks" / "inference-ts"
LABELS = {"app": "bench"}
SPEC = {
    "replicas": 1,
    "selector": {"matchLabels": LABELS},
    "template": {
        "metadata": {"labels": LABELS},
        "spec": {
            "containers": [
                {"name": "m", "image": "registry.invalid/m:1", "securityContext": {"runAsUser": 1000}}
            ]
        },
    },
}
HEAD = """import * as fs from "fs";
import * as k8s from "@pulumi/kubernetes";
const provider = new k8s.Provider("local", {{ kubeconfig: fs.readFileSync({kubeconfig}, "utf8") }});
const metadata = {{ name: "bench", namespace: "default" }};
"""
COMPONENT = """import * as eksGpu from "@pulumi/eks-gpu";
new eksGpu.GpuDeployment(
    "bench",
    {{ metadata, spec: {spec}, gpus: 1, pool: "inference", placement: {placement}, checkImageArchitecture: false }},
    {{ providers: [provider] }},
);
"""
BY_HAND = """new k8s.apps.v1.Deployment("bench", {{ metadata, spec: {placed} }}, {{ provider }});
"""


def _project(directory: Path, component: bool) -> Path:
    """A TypeScript project on the stack's installed packages, declaring one of the two."""
    placement = platform_contract("dev")
    program = HEAD.format(kubeconfig=json.dumps(str(local.KUBECONFIG)))
    if component:
        program += COMPONENT.format(spec=json.dumps(SPEC), placement=json.dumps(placement))
    else:
        placed = place_deployment_spec(SPEC, placement, 1, pool="inference")
        program += BY_HAND.format(placed=json.dumps(_quantities_as_strings(placed)))
    (directory / "index.ts").write_text(program)
    (directory / "Pulumi.yaml").write_text(
        "name: bench-up-ts\nruntime: nodejs\n"
        + (f"packages:\n  eks-gpu: {local.ROOT / 'provider'}\n" if component else "")
    )
    for name in ("package.json", "tsconfig.json"):
        shutil.copy(STACK / name, directory / name)
    (directory / "node_modules").symlink_to(STACK / "node_modules")
    return directory


def _quantities_as_strings(spec: dict) -> dict:
    """As written in TypeScript: @pulumi/kubernetes types resource quantities as strings ("1")."""
    for container in spec["template"]["spec"]["containers"]:
        for kind, amounts in container.get("resources", {}).items():
            container["resources"][kind] = {name: str(amount) for name, amount in amounts.items()}
    return spec


def compare() -> tuple[float, float]:
    """(GpuDeployment, plain Deployment) median ``pulumi up`` seconds of the TypeScript programs."""
    if not (STACK / "node_modules").is_dir():
        raise SystemExit(f"{STACK}/node_modules is missing: run bin/setup")
    started = not running()
    if started:
        start_cluster()
    try:
        times = []
        for component in (True, False):
            with tempfile.TemporaryDirectory(prefix="bench-up-ts-") as directory:
                times.append(median_up(_project(Path(directory), component)))
        return times[0], times[1]
    finally:
        if started:
            local.stop(lambda _: None)


if __name__ == "__main__":
    gpu, plain = compare()
    print(
        f"pulumi up TypeScript GpuDeployment / Deployment: {gpu:.1f} s / {plain:.1f} s = {gpu / plain:.2f}x"
    )
