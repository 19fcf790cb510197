"""Karpenter's real core: how long from a pending GPU pod to its NodeClaim, and to the pod bound.

    .venv/bin/python bench/bench_karpenter.py [--rounds 5]

Starts the local cluster if none runs (and stops it after), installs the CRDs and the NodePools
the platform program declares (localcluster/karpenter.py, as tests/cluster/test_karpenter.py
does), starts the pinned ``karpenter-kwok``, then per round creates one one-GPU pod on the
``batch`` pool and polls (every 20 ms) until Karpenter's NodeClaim exists, then until the
scheduler binds the pod to the node kwok brings up. Each round ends with no Karpenter node left.
Karpenter batches pending pods (BATCH_IDLE_DURATION, 1 s by default): the first figure includes it.
Nothing here is a test: these are numbers to report.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infra.workloads.podspec import place_pod_spec  # noqa: E402
from localcluster import cluster, karpenter  # noqa: E402
from localcluster.kube import Kube  # noqa: E402

NAMESPACE = "karpenter-bench"


def _until(check, timeout: float = 120) -> float:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the bench round did not finish")
        time.sleep(0.02)
    return time.monotonic()


def one_round(kube: Kube, contract, index: int) -> tuple[float, float]:
    container = {"name": "model", "image": "registry.invalid/model:1", "securityContext": {"runAsUser": 1000}}
    spec = place_pod_spec({"containers": [container]}, contract, gpus=1, pool="batch")
    name = f"bench-{index}"
    start = time.monotonic()
    kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}, NAMESPACE)
    claimed = _until(lambda: karpenter.nodeclaims(kube, "batch"))
    bound = _until(lambda: kube.core.read_namespaced_pod(name, NAMESPACE).spec.node_name)
    kube.core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
    for claim in karpenter.nodeclaims(kube):
        kube.resource({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim"}).delete(name=claim.metadata.name)
    _until(lambda: not karpenter.nodeclaims(kube))
    return claimed - start, bound - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    python = str(ROOT / ".venv" / "bin" / "python")
    running = cluster.status()
    started = not (running and all(running.values()))
    if started:
        subprocess.run(
            [python, "-m", "localcluster", "start"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
        )
    kube = Kube(cluster.KUBECONFIG)
    settings, run = karpenter.platform_run()
    objects = karpenter.install(kube, run)
    ports = (cluster.free_port(), cluster.free_port())
    controller = karpenter.start(kube, run, cluster.KUBECONFIG, cluster.RUN / "karpenter-bench", ports)
    plugin = karpenter.DevicePlugin(kube, run)
    kube.namespace(NAMESPACE, pod_security="baseline")
    try:
        rounds = [one_round(kube, settings.contract, i) for i in range(args.rounds)]
    finally:
        kube.delete_namespace(NAMESPACE, timeout=120)
        karpenter.uninstall(kube, objects, controller)
        plugin.stop()
        if started:
            subprocess.run(
                [python, "-m", "localcluster", "stop"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
            )
    for label, values in (
        ("pending pod -> NodeClaim", [r[0] for r in rounds]),
        ("pending pod -> bound", [r[1] for r in rounds]),
    ):
        print(
            f"{label}: median {statistics.median(values):.2f} s, min {min(values):.2f} s, "
            f"max {max(values):.2f} s over {len(values)} rounds (Karpenter {karpenter.version()}, kwok provider)"
        )


if __name__ == "__main__":
    main()
