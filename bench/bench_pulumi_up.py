"""``pulumi up`` of a GpuDeployment vs the same Deployment written by hand, on the local cluster.

Both programs send the same Deployment object (the hand-written one is
``place_deployment_spec``'s output, so only the component's own work differs) and
the provider waits until it is Available in both. Median of ``RUNS`` up/destroy
cycles each. Starts the local cluster with the dev stack's nodes (as ``bin/local-cluster
start``) when it is not running, and stops it afterwards only then; also run by
bench_localcluster.py --up.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from localcluster import cluster as local
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack

RUNS = 3
PROGRAM = """
import pulumi, pulumi_kubernetes as k8s
from infra import GpuDeployment, GpuDeploymentArgs
from infra.tooling.offline import platform_contract
from infra.workloads.deployment import place_deployment_spec

provider = k8s.Provider("local", kubeconfig=open({kubeconfig!r}).read())
opts = pulumi.ResourceOptions(provider=provider)
placement = platform_contract("dev")
labels = {{"app": "bench"}}
spec = {{
    "replicas": 1,
    "selector": {{"matchLabels": labels}},
    "template": {{"metadata": {{"labels": labels}}, "spec": {{"containers": [
        {{"name": "m", "image": "registry.invalid/m:1", "securityContext": {{"runAsUser": 1000}}}}]}}}},
}}
meta = {{"name": "bench", "namespace": "default"}}
if {component!r}:
    GpuDeployment("bench", GpuDeploymentArgs(metadata=meta, spec=spec, gpus=1, pool="inference",
                  placement=placement, check_image_architecture=False), opts=opts)
else:
    k8s.apps.v1.Deployment("bench", metadata=meta,
                           spec=place_deployment_spec(spec, placement, 1, pool="inference"), opts=opts)
"""


def _time_up(component: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-up-") as directory:
        project = Path(directory)
        (project / "Pulumi.yaml").write_text("name: bench-up\nruntime: python\n")
        (project / "__main__.py").write_text(
            f"import sys; sys.path.insert(0, {str(local.ROOT)!r})\n"
            + PROGRAM.format(kubeconfig=str(local.KUBECONFIG), component=component)
        )
        return median_up(project)


def median_up(project: Path) -> float:
    """Median seconds of ``RUNS`` ``pulumi up`` of ``project``'s ``bench`` stack, each destroyed after."""
    stack = Stack(project, "bench")
    stack.init()
    times = []
    try:
        for _ in range(RUNS):
            start = time.perf_counter()
            try:
                stack.up()
                times.append(time.perf_counter() - start)
            finally:
                stack.destroy()  # what a failed up did create goes too
    finally:
        stack.remove()
    return statistics.median(times)


def running() -> bool:
    state = local.status()
    return bool(state) and all(state.values())


def start_cluster() -> None:
    """``bin/local-cluster start``: the control plane plus the dev stack's mirrored nodes, Ready."""
    result = subprocess.run(
        [sys.executable, "-m", "localcluster", "start"], cwd=local.ROOT, capture_output=True, text=True
    )
    if result.returncode != 0:
        local.stop(lambda _: None)  # whatever did start
        raise SystemExit(f"bin/local-cluster start failed:\n{result.stdout}\n{result.stderr}")


def compare() -> tuple[float, float]:
    """(GpuDeployment, plain Deployment) median ``pulumi up`` seconds; starts the cluster if needed,
    and then stops it again (a cluster that was running is left running)."""
    started = not running()
    if started:
        start_cluster()
    try:
        Kube(local.KUBECONFIG)  # fails early on a bad kubeconfig
        return _time_up(True), _time_up(False)
    finally:
        if started:
            local.stop(lambda _: None)


if __name__ == "__main__":
    gpu, plain = compare()
    print(f"pulumi up GpuDeployment / Deployment: {gpu:.1f} s / {plain:.1f} s = {gpu / plain:.2f}x")
