"""Figures for the real Cluster Autoscaler runs (issue "Scale from zero decided by the real Cluster Autoscaler").

    .venv/bin/python bench/bench_autoscaler.py              # pending pod -> SetDesiredCapacity, 3 runs
    .venv/bin/python bench/bench_autoscaler.py --cold       # + a cold build of the autoscaler (~10+ min)

The latency is from the pod's creation to the inference pool's desired capacity rising in moto,
with the test run's 1 s scan interval (``localcluster.autoscaling.TEST_RUN_ARGS``; the chart and the
platform set none, so EKS runs the autoscaler's 10 s) and, for a GPU pod, its 30 s buffer. Each
run empties moto and starts the autoscaler afresh, so where the pod falls in the loop varies. The local
cluster is started (with the dev stack's nodes) when not running and stopped only then. A cold
build uses a fresh, throwaway GOCACHE (the module cache stays: downloads are not build time).
Nothing here is a test: these are numbers to report.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NAMESPACE = "bench-autoscaler"


def cold_build() -> float:
    with tempfile.TemporaryDirectory(prefix="gocache-") as gocache, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "GOCACHE": gocache, "GOFLAGS": "-mod=readonly -buildvcs=false"}
        start = time.perf_counter()
        subprocess.run([str(ROOT / "localcluster" / "autoscaler" / "build.sh"), out], env=env, check=True)
        return time.perf_counter() - start


def latency(kube, dev) -> float:
    from tests.cluster.autoscaler_run import INFERENCE, pod, scenario

    with scenario(kube, dev, ROOT, NAMESPACE) as run:
        kube.apply(pod("pending", gpus=1, pool="inference"), NAMESPACE)
        created = time.monotonic()
        while run.desired(INFERENCE) == 0:
            run.check()
            time.sleep(0.1)
        return time.monotonic() - created


def latencies(runs: int) -> list[float]:
    from infra.tooling.offline import PLATFORM_ROOT, run_project
    from localcluster import cluster
    from localcluster.__main__ import add_nodes
    from localcluster.kube import Kube
    from tests.cluster.autoscaler_run import pools_at_zero

    started = not all(cluster.status().values() or [False])
    if started:
        cluster.start(lambda _: None)
        add_nodes()
    try:
        kube, dev = Kube(cluster.KUBECONFIG), run_project(PLATFORM_ROOT, "dev")
        result = []
        with pools_at_zero(kube, dev):
            for _ in range(runs):
                result.append(latency(kube, dev))
        return result
    finally:
        if started:
            cluster.stop(lambda _: None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="also time a cold build of the autoscaler")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.cold:
        print(f"cold build of cluster-autoscaler (fresh GOCACHE): {cold_build():.0f} s")
    found = latencies(args.runs)
    print(
        "pending pod -> SetDesiredCapacity: "
        + ", ".join(f"{s:.1f}" for s in found)
        + f" s (median {statistics.median(found):.1f} s)"
    )


if __name__ == "__main__":
    main()
