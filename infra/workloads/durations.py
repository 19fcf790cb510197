"""Go durations (``time.ParseDuration``, as ``customTimeouts`` and the autoscaler's flags take them)."""

from __future__ import annotations

import re

_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION = re.compile(rf"(?:{_PART.pattern})+")


def duration_seconds(value: str) -> float:
    """The seconds of every number-and-unit part of ``value``: ``"1h30m"`` -> 5400."""
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _PART.findall(value))


def go_duration_seconds(value: str) -> float | None:
    """Seconds in a Go duration string (negative after ``-``), or None if Go would refuse it."""
    body = value[1:] if value.startswith(("+", "-")) else value
    if body == "0":
        return 0.0
    if not _DURATION.fullmatch(body):
        return None
    seconds = duration_seconds(body)
    return -seconds if value.startswith("-") else seconds
