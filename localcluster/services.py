"""Processes started beside the local control plane (moto's AWS emulator, Cluster Autoscaler).

Same rules as the control plane (``localcluster/cluster.py``, :mod:`localcluster.processes`):
loopback only, each in its own process group, recorded with its start time in ``.cache/localcluster/run/services.json`` so
``stop_all`` (called by ``bin/local-cluster stop`` and before every cluster start) ends whatever a
killed test left running. A start that fails says which component, why, and where its log is,
and leaves nothing running.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from localcluster import processes
from localcluster.processes import RUN, ClusterError

STATE = RUN / "services.json"
STARTUP_SECONDS = 60


def log_path(name: str) -> Path:
    return RUN / "logs" / f"{name}.log"


def _read() -> dict[str, dict]:
    try:
        return json.loads(STATE.read_text())
    except (OSError, ValueError):
        return {}


def _write(state: dict[str, dict]) -> None:
    STATE.parent.mkdir(parents=True, exist_ok=True)
    STATE.write_text(json.dumps(state))


def alive(name: str) -> bool:
    entry = _read().get(name)
    return bool(entry) and processes.alive(entry["pid"], entry["started"])


def log_tail(name: str, lines: int = 15) -> str:
    try:
        return "\n".join(log_path(name).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start(
    name: str,
    argv: Sequence[str],
    ready: Callable[[], bool],
    env: Mapping[str, str] | None = None,
    timeout: float = STARTUP_SECONDS,
) -> int:
    """Start ``name`` and wait until ``ready()``; on failure stop it and raise ``ClusterError``."""
    stop(name)
    log_path(name).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path(name), "wb") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    _write({**_read(), name: {"pid": proc.pid, "started": processes.start_time(proc.pid)}})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stop(name)
            raise ClusterError(
                f"{name} exited during start-up (code {proc.returncode}); its log {log_path(name)} ends:\n"
                + log_tail(name)
            )
        if ready():
            return proc.pid
        time.sleep(0.2)
    stop(name)
    raise ClusterError(
        f"{name} not ready after {timeout:.0f} s; its log {log_path(name)} ends:\n{log_tail(name)}"
    )


def stop(name: str) -> None:
    """End ``name``'s process group if it is still the process we started, and forget it."""
    state = _read()
    entry = state.pop(name, None)
    if entry is not None:
        processes.end({entry["pid"]: entry["started"]})
        _write(state)


def stop_all() -> None:
    for name in list(_read()):
        stop(name)
    STATE.unlink(missing_ok=True)
