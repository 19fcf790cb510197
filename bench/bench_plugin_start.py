"""How long the ``eks-gpu`` plugin takes from exec to the port line the CLI waits for.

    .venv/bin/python bench/bench_plugin_start.py [PACKAGE_DIR ...]   # default: provider/

This is all a GetSchema start costs (the YAML host starts the plugin only to read the schema,
decision 0089), and the first part of a Construct start. Each folder holds a ``__main__.py`` and
``eks_gpu_components.py`` (a copy of an older ``provider/`` to compare); the runs alternate
between the folders so machine load hits them alike. Median of ``RUNS`` each. Numbers to report,
not a test.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 7
PROVIDER = Path(__file__).resolve().parents[1] / "provider"


def time_to_port(package: Path) -> float:
    """Seconds from exec of the package's ``__main__.py`` to its port line (engine address unused)."""
    start = time.perf_counter()
    plugin = subprocess.Popen(
        [sys.executable, str(package / "__main__.py"), "127.0.0.1:1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = plugin.stdout.readline() if plugin.stdout else ""
        elapsed = time.perf_counter() - start
    finally:
        plugin.kill()
        plugin.wait()
    if not port.strip().isdigit():
        raise SystemExit(f"{package}: the plugin printed no port (got {port!r})")
    return elapsed


def main(packages: list[Path]) -> None:
    times: dict[Path, list[float]] = {package: [] for package in packages}
    for _ in range(RUNS):
        for package in packages:
            times[package].append(time_to_port(package))
    for package, runs in times.items():
        print(f"{package}: exec to port {statistics.median(runs):.2f} s (median of {RUNS})")


if __name__ == "__main__":
    main([Path(arg) for arg in sys.argv[1:]] or [PROVIDER])
