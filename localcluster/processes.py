"""The process bookkeeping the control plane (``cluster``) and the services beside it share.

Each process runs in its own group and is recorded with its start time, so a pid reused
after a reboot is never taken for ours; :func:`end` stops groups as ``bin/local-cluster stop``
and every fresh start do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path

from localcluster.gomod import CACHE

# One control plane per instance: a pytest-xdist worker of the cluster tests sets
# LOCALCLUSTER_INSTANCE (tests/conftest.py) and gets its own run folder, services and Pulumi
# state beside the others; unset (bin/local-cluster, a shell), everything is under the plain names.
INSTANCE_VARIABLE = "LOCALCLUSTER_INSTANCE"


def instance_dir(name: str) -> Path:
    """``.cache/localcluster/<name>``, or ``<name>-<instance>`` for a named instance."""
    instance = os.environ.get(INSTANCE_VARIABLE, "")
    return CACHE / (f"{name}-{instance}" if instance else name)


RUN = instance_dir("run")


class ClusterError(RuntimeError):
    """The local cluster cannot start or answer; the message says what to do."""


def start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/<pid>/stat), None if there is no such live process.

    Recorded at start, it tells our process from another that reuses its pid after a reboot.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]  # a zombie has exited


def alive(pid: int, started: str | None = None) -> bool:
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def end(processes: Mapping[int, str | None], grace: float = 5) -> None:
    """SIGTERM each live group of ``{pid: start time}`` we started, SIGKILL what outlives ``grace`` s."""
    ours = [(pid, started) for pid, started in processes.items() if alive(pid, started)]
    for pid, _ in ours:
        signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace  # throwaway processes: no need for a long graceful shutdown
    while any(alive(*p) for p in ours) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid, started in ours:
        if alive(pid, started):
            signal_group(pid, signal.SIGKILL)
