"""Where the suite's CPU goes, by program: sampled from /proc while a command runs (issue 32).

    .venv/bin/python bench/cpu_by_process.py -- bin/test
    .venv/bin/python bench/cpu_by_process.py --every 0.5 -- .venv/bin/python -m pytest tests/cluster/test_kueue.py

Runs the command and, every ``--every`` seconds, reads the CPU time (user + system, /proc/PID/stat)
of each process descended from it, so other work on the machine is not counted. Prints the CPU
seconds per program (its command name; Python split by what it runs: a pytest worker, moto, a
Pulumi program or provider) and the share of the total, as a Markdown table for docs/benchmarks.md.
A process stays counted once seen, also after its parent exits and it is re-parented (the control
planes and services that ``localcluster start`` leaves running: ``/usr/bin/time`` and rusage never see
their CPU, as they are not waited for). A process that ends between two samples loses at most its last
interval: short-lived ones (a ``helm template``, a compiler pass) are undercounted. Also prints how busy
the whole machine was (``/proc/stat``), which says whether a run is bound by its cores. Numbers to
report, never a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections import defaultdict
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
PYTHON_ROLES = (
    ("xdist", "pytest worker"),
    ("exec(eval(sys.stdin.readline()))", "pytest worker"),  # execnet's gateway: how xdist starts one
    ("pytest", "pytest"),
    ("moto_server", "moto"),
    ("moto.server", "moto"),
    ("pulumi-resource-eks-gpu", "eks-gpu provider (python)"),
    ("pulumi-analyzer", "policy pack (python)"),
    ("pulumi-language-python-exec", "pulumi program (python)"),
)


def _stat(pid: str) -> tuple[int, float, int] | None:
    """(parent pid, CPU seconds, start time) of ``pid``, or None once it is gone. The start time tells
    a process from a later one given the same pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS, int(fields[19])


def _program(pid: str) -> str:
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"
    if comm.startswith("python"):
        return next((role for marker, role in PYTHON_ROLES if marker in argv), "python (other)")
    return comm


def _descendants(ours: set[int], parents: dict[int, int]) -> set[int]:
    changed = True
    while changed:
        grown = {pid for pid, parent in parents.items() if parent in ours}
        changed = not grown <= ours
        ours = ours | grown
    return ours


Seen = dict[tuple[int, int], tuple[str, float]]
"""(pid, start time) -> (program, its latest CPU seconds)."""


def sample(root: int, seen: Seen) -> None:
    """Record the latest CPU seconds of each descendant, and of every process seen as one before (its
    program named once)."""
    stats = {int(pid): stat for pid in os.listdir("/proc") if pid.isdigit() and (stat := _stat(pid))}
    alive = {pid for pid, start in seen if pid in stats and stats[pid][2] == start}
    for pid in _descendants({root, *alive}, {pid: stat[0] for pid, stat in stats.items()}):
        if pid in stats:
            key = (pid, stats[pid][2])
            program = seen[key][0] if key in seen else _program(str(pid))
            seen[key] = (program, stats[pid][1])


def machine_ticks() -> tuple[int, int]:
    """(busy, all) CPU ticks of the whole machine since boot, from /proc/stat's first line."""
    # user nice system idle iowait irq softirq steal (guest time is inside user and nice already);
    # steal counts as busy: the run could not have those ticks either
    ticks = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    seen: Seen = {}
    start, (busy, ticks) = time.monotonic(), machine_ticks()
    child = subprocess.Popen(command)
    while child.poll() is None:
        sample(child.pid, seen)
        time.sleep(args.every)
    sample(child.pid, seen)  # what re-parented processes still running have used by now
    wall, (busy_end, ticks_end) = time.monotonic() - start, machine_ticks()
    totals: dict[str, float] = defaultdict(float)
    for program, seconds in seen.values():
        totals[program] += seconds
    total = sum(totals.values())
    machine = (busy_end - busy) / max(ticks_end - ticks, 1)
    print(
        f"\nwall {wall:.0f} s, sampled CPU {total:.0f} s, the machine {machine:.0%} busy, exit {child.returncode}\n"
    )
    print("| program | CPU s | share |\n|---|---|---|")
    for program, seconds in sorted(totals.items(), key=lambda item: -item[1])[:25]:
        print(f"| {program} | {seconds:.0f} | {seconds / max(total, 1e-9):.0%} |")


if __name__ == "__main__":
    main()
