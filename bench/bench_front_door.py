"""Fresh clone -> first complete `bin/preview --stack dev` (issue 26, front door).

    .venv/bin/python bench/bench_front_door.py            # Go's caches warm (as on a developer's machine)
    .venv/bin/python bench/bench_front_door.py --cold-go  # + Go's module and build caches empty

Clones the committed HEAD into a temporary folder and runs the README's first command
there, as a new user would: it makes .venv (pip's own download cache stays warm: the
registry is not what is measured), builds helm and fetches the pinned chart, then
previews. ``--cold-go`` points GOMODCACHE and GOCACHE at empty temporary folders, so
helm's modules come from the proxy and compile from nothing. Numbers to report, not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def first_preview(cold_go: bool) -> tuple[float, str]:
    with tempfile.TemporaryDirectory(prefix="front-door-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("LOCALCLUSTER_CACHE", "EKS_GPU_HELM", "VIRTUAL_ENV")
        }
        if cold_go:
            env |= {"GOMODCACHE": f"{tmp}/gomod", "GOCACHE": f"{tmp}/gocache"}
        start = time.perf_counter()
        done = subprocess.run(
            ["bin/preview", "--stack", "dev"], cwd=clone, env=env, capture_output=True, text=True, check=False
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"bin/preview failed after {seconds:.0f} s:\n{done.stderr[-3000:]}")
        if cold_go:  # the module cache is read-only; make it removable
            subprocess.run(["chmod", "-R", "u+w", f"{tmp}/gomod"], check=False)
            shutil.rmtree(f"{tmp}/gomod", ignore_errors=True)
        steps = [
            line for line in done.stderr.splitlines() if line.startswith(("setup:", "localcluster/build:"))
        ]
        return seconds, "\n".join(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold-go", action="store_true", help="also measure with Go's caches empty")
    args = parser.parse_args()
    runs = [("Go caches warm", False)] + ([("Go caches cold", True)] if args.cold_go else [])
    for label, cold in runs:
        seconds, steps = first_preview(cold)
        print(
            f"fresh clone -> first complete preview, {label}: {seconds:.0f} s ({os.cpu_count()} cores)\n{steps}"
        )


if __name__ == "__main__":
    main()
