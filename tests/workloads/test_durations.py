"""Go durations are read as Go's ``time.ParseDuration`` reads them.

The expected values are what Go 1.26's ``time.ParseDuration`` printed for each input (None: an error).
"""

from __future__ import annotations

import pytest

from infra.workloads.durations import go_duration_seconds

GO = {
    "0": 0,
    "+0": 0,
    "-0": 0,
    "90s": 90,
    "1h30m": 5400,
    "+45m": 2700,
    "-1m": -60,
    "++1m": None,
    "1.5h": 5400,
    ".5s": 0.5,
    "1.s": 1,
    "1": None,
    "1d": None,
    "": None,
    "+": None,
    "300ms": 0.3,
    "2h45m0.5s": 9900.5,
    "1us": 1e-06,
    "1µs": 1e-06,
    "1m-1s": None,
}


@pytest.mark.parametrize(("text", "seconds"), GO.items())
def test_a_duration_reads_as_go_reads_it(text: str, seconds: float | None) -> None:
    assert go_duration_seconds(text) == (None if seconds is None else pytest.approx(seconds))
