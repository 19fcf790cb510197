"""Figures for the local cluster (issue "The Kubernetes half runs for real").

    .venv/bin/python bench/bench_localcluster.py            # warm start, build no-op
    .venv/bin/python bench/bench_localcluster.py --cold     # + a cold Go build (30+ min on 2 cores)
    .venv/bin/python bench/bench_localcluster.py --suite    # + the whole suite's wall time, warm
    .venv/bin/python bench/bench_localcluster.py --up       # + pulumi up: GpuDeployment vs plain Deployment (Python, YAML)

The warm start stops a running cluster first. ``--up`` then starts one (with the dev
stack's nodes) and stops it when done.

A cold build uses a fresh, throwaway GOCACHE (the module cache stays: downloads
are not build time). Nothing here is a test: these are numbers to report.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def cold_build() -> float:
    with tempfile.TemporaryDirectory(prefix="gocache-") as gocache:
        cache = Path(gocache) / "localcluster"
        env = {**os.environ, "GOCACHE": gocache, "LOCALCLUSTER_CACHE": str(cache)}
        return timed(["localcluster/build"], env)


def warm_start() -> tuple[float, float]:
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run([python, "-m", "localcluster", "stop"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    start = timed([python, "-m", "localcluster", "start"])
    stop = timed([python, "-m", "localcluster", "stop"])
    return start, stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="also time a cold Go build of every binary")
    parser.add_argument("--suite", action="store_true", help="also time bin/test, warm")
    parser.add_argument(
        "--up", action="store_true", help="also time pulumi up of GpuDeployment vs Deployment"
    )
    args = parser.parse_args()
    if args.cold:
        print(f"cold build (fresh GOCACHE, all modules): {cold_build():.0f} s")
    print(f"warm build (nothing to do):             {timed(['localcluster/build']):.1f} s")
    start, stop = warm_start()
    print(f"warm bin/local-cluster start:            {start:.1f} s (stop: {stop:.1f} s)")
    if args.suite:
        print(f"whole suite (bin/test), warm:            {timed(['bin/test']):.0f} s")
    if args.up:
        # beside this script (bench/bench.py shadows a "bench" package)
        from bench_pulumi_up import PROJECTS, compare, report

        for language in PROJECTS:
            print(report(language, *compare(language)))


if __name__ == "__main__":
    main()
