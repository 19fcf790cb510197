"""Cold and warm compile of the Go consumer (stacks/inference-go), as the Go host compiles it.

The Go language host runs `go build` on the project before every preview/up; the first build
compiles the Kubernetes Go SDK packages the program and its eks-gpu SDK import (core/v1 is the
big one). Cold: a fresh, empty GOCACHE (the module cache stays: bin/setup downloads the modules);
warm: the same cache again.

    .venv/bin/python bench/bench_go_consumer.py
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1] / "stacks" / "inference-go"


def build(cache: str) -> float:
    """Seconds `go build` of the project takes with GOCACHE=cache (offline: modules already downloaded)."""
    env = {**os.environ, "GOCACHE": cache, "GOFLAGS": "-mod=readonly -buildvcs=false", "GOPROXY": "off"}
    start = time.monotonic()
    subprocess.run(["go", "build", "-o", os.devnull, "."], cwd=PROJECT, env=env, check=True)
    return time.monotonic() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        cold, warm = build(cache), build(cache)
    load = os.getloadavg()[0]
    print(f"stacks/inference-go go build: cold {cold:.0f} s, warm {warm:.1f} s (load average {load:.1f})")


if __name__ == "__main__":
    main()
