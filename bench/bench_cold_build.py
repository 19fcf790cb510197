"""A fresh machine's Go builds: every `localcluster/build` target from empty Go caches (issue 32).

    .venv/bin/python bench/bench_cold_build.py                 # all targets, throwaway caches
    .venv/bin/python bench/bench_cold_build.py helm charts     # what bin/preview needs

Runs `localcluster/build` with GOCACHE, GOMODCACHE and LOCALCLUSTER_CACHE in a temporary folder
(downloads come from the Go module proxy again, as on a fresh machine), and prints the wall time
and each build's own time as the build reports it, as rows for docs/benchmarks.md. Takes most of
an hour on 2 cores: run it on a quiet machine, and say what else ran. Numbers, not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DONE = re.compile(r"^localcluster/build: (\S+) done in (.+)$", re.M)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="localcluster/build targets (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cold-build-") as tmp:
        env = {
            **os.environ,
            "GOCACHE": f"{tmp}/gocache",
            "GOMODCACHE": f"{tmp}/gomod",
            "LOCALCLUSTER_CACHE": f"{tmp}/cache",
        }
        start = time.perf_counter()
        done = subprocess.run(
            [str(ROOT / "localcluster" / "build"), *args.targets], env=env, capture_output=True, text=True
        )
        seconds = time.perf_counter() - start
        subprocess.run(["chmod", "-R", "u+w", f"{tmp}/gomod"], check=False)  # the module cache is read-only
        shutil.rmtree(f"{tmp}/gomod", ignore_errors=True)
    print(
        f"localcluster/build {' '.join(args.targets) or '(all)'}: exit {done.returncode}, wall {seconds:.0f} s"
    )
    print(f"{os.cpu_count()} cores, load average at the end {os.getloadavg()[0]:.1f}\n")
    print("| target | cold |\n|---|---|")
    for name, took in DONE.findall(done.stderr):
        print(f"| `{name}` | {took} |")
    if done.returncode != 0:
        print(done.stderr[-3000:])


if __name__ == "__main__":
    main()
