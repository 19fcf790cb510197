"""Benchmarks for the offline preview and GpuDeployment (figures for docs/benchmarks.md; not a test).

    .venv/bin/python bench/bench.py [--sizes 1 10 100 1000] [--only preview|deployments|suite]

Each measurement runs in its own child process; wall time and peak RSS come from
the child's own rusage (os.wait4), so runs do not disturb each other. On a shared
machine, compare figures taken in the same run only: load from other processes
moves them all.
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
PY = sys.executable

_WORKLOAD = """
import sys, time, resource
import pulumi_kubernetes as k8s
from infra import GpuDeployment
from infra.tooling.offline import run_program
kind, n = sys.argv[1], int(sys.argv[2])
def spec(i):
    labels = {"app": f"w{i}"}
    return {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "m", "image": "img", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                     "nodeSelector": {"GPU": "true"},
                     "tolerations": [{"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]}}}
def program():
    for i in range(n):
        if kind == "gpu":
            GpuDeployment(f"w{i}", spec=spec(i))
        else:
            k8s.apps.v1.Deployment(f"w{i}", spec=spec(i))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
run_program(program)
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def child(args: list[str]) -> tuple[float, float, str]:
    """Run a child; return (wall seconds, peak RSS MiB, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(args)}")
    return wall, usage.ru_maxrss / 1024, out


def best(args: list[str], repeat: int = 3) -> tuple[float, float, str]:
    runs = [child(args) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--only", choices=["preview", "deployments", "suite"], help="run one part only")
    args = parser.parse_args()
    if args.only in (None, "preview"):
        preview()
    if args.only in (None, "deployments"):
        deployments(args.sizes)
    if args.only in (None, "suite"):
        suite_t, _, _ = child([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
        print(f"\nfull test suite: {suite_t:.1f} s wall (target < 3 min)")


def preview() -> None:
    """The offline preview of dev (one process) against importing the SDKs it uses."""
    floor_t, floor_m, _ = best([PY, "-c", "import pulumi, pulumi_aws, pulumi_eks, pulumi_kubernetes"])
    command = [PY, "-m", "infra.tooling.preview", "--stack", "dev", "--out"]
    with tempfile.TemporaryDirectory() as out:
        prev_t, prev_m, _ = best([*command, out])
    print(f"import floor: {floor_t:.2f} s, {floor_m:.0f} MiB peak")
    print(f"offline preview of dev: {prev_t:.2f} s, {prev_m:.0f} MiB peak")
    print(f"  ratio to floor: time {prev_t / floor_t:.2f}x, memory {prev_m / floor_m:.2f}x (target <= 3x)")


def deployments(sizes: list[int]) -> None:
    print(
        "\nper-deployment cost, run_program only (GpuDeployment vs hand-written Deployment, same pod spec):"
    )
    print(f"  {'N':>5}  {'gpu s':>7}  {'plain s':>7}  {'ratio':>5}  {'gpu MiB':>7}  {'plain MiB':>9}")
    results = {}
    for n in sizes:
        row = {}
        for kind in ("gpu", "plain"):
            _, _, out = best([PY, "-c", _WORKLOAD, kind, str(n)], repeat=2 if n >= 1000 else 3)
            seconds, rss_kib = out.split()
            row[kind] = (float(seconds), float(rss_kib) / 1024)
        results[n] = row
        print(
            f"  {n:>5}  {row['gpu'][0]:7.3f}  {row['plain'][0]:7.3f}  {row['gpu'][0] / row['plain'][0]:5.2f}"
            f"  {row['gpu'][1]:7.1f}  {row['plain'][1]:9.1f}"
        )
    lo, hi = min(results), max(results)
    if hi > lo:
        for kind in ("gpu", "plain"):
            per = (results[hi][kind][0] - results[lo][kind][0]) / (hi - lo) * 1000
            mem = (results[hi][kind][1] - results[lo][kind][1]) / (hi - lo) * 1024
            print(f"  marginal {kind}: {per:.2f} ms and {mem:.0f} KiB per deployment ({lo}->{hi})")
        ratio = (results[hi]["gpu"][0] - results[lo]["gpu"][0]) / (
            results[hi]["plain"][0] - results[lo]["plain"][0]
        )
        print(f"  marginal time ratio gpu/plain: {ratio:.2f}x (target <= 2.2x)")


if __name__ == "__main__":
    main()
