"""Where the test suite's time goes: wall time and the 20 slowest tests (issue 32).

    .venv/bin/python bench/bench_suite.py          # the quick loop: pytest -m "not cluster" -n 3 --dist worksteal
    .venv/bin/python bench/bench_suite.py tests/cluster/test_autoscaler.py --checkout /work/main
    .venv/bin/python bench/bench_suite.py --all   # the whole suite as bin/test runs it (-n 6 --dist loadfile)

Runs pytest with ``--durations=20`` in ``--checkout`` (default: this one, so an older commit's
checkout gives the "before"), with that checkout's own .venv, and prints the wall and CPU time
(the CPU figure holds under other load, the wall time does not), pytest's summary line, what
failed, and the slowest 20 (setup, call and teardown each, as pytest counts them) as a Markdown
table for docs/benchmarks.md. Nothing here is a test: these are numbers to report.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOWEST = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)$", re.M)


def cpu_seconds() -> float:
    """User + system CPU of the finished children (pytest and everything it ran): load-independent."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run(checkout: Path, args: list[str]) -> tuple[float, str]:
    # The checkout's own .venv, whatever venv is active. And bytecode written, as Python's default:
    # this sandbox sets PYTHONDONTWRITEBYTECODE, which makes every run recompile (and pytest
    # re-rewrite) all of the project's modules, about 2 s more per worker (docs/benchmarks.md).
    dropped = ("VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    command = [str(checkout / ".venv" / "bin" / "python"), "-m", "pytest", "-rfEs", "--durations=20", *args]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.stdout + done.stderr


def table(output: str) -> str:
    rows = ["| seconds | phase | test |", "|---|---|---|"]
    rows += [f"| {s} | {phase} | `{test}` |" for s, phase, test in SLOWEST.findall(output)]
    return "\n".join(rows)


def summary(output: str) -> str:
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    return lines[-1].strip("= ") if lines else "(no summary line)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout to run in (its own .venv)")
    parser.add_argument("--all", action="store_true", help="the whole suite, cluster tests included")
    args, extra = parser.parse_known_args()  # the rest, in order, is pytest's (default: -m "not cluster")
    # The contributor's loop: three workers on two cores (a third of the time is waits on go, tsc, helm
    # and the Pulumi CLI); worksteal evens out the long toolchain tests.
    quick = ["-m", "not cluster", "-n", "3", "--dist", "worksteal"]
    pytest_args = extra or (["-n", "6", "--dist", "loadfile"] if args.all else quick)  # --all: bin/test's
    seconds, output = run(args.checkout.resolve(), pytest_args)
    head = subprocess.run(
        ["git", "-C", str(args.checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    load = os.getloadavg()[0]
    print(
        f"pytest {' '.join(pytest_args)} in {args.checkout} ({head.stdout.strip()}), {os.cpu_count()} cores"
    )
    print(
        f"wall {seconds:.0f} s, CPU {cpu_seconds():.0f} s; {summary(output)}; load average at the end {load:.1f}"
    )
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            print(line[:200])
    print()
    print(table(output))


if __name__ == "__main__":
    main()
