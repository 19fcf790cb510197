"""A test that hangs fails after the suite's limit with its stack, and the run goes on (README).

pytest-timeout (``timeout`` in pyproject.toml) ends a hang in a test or its fixtures; after a
failure it stops its own timer, and ``tests/conftest.py``'s teardown guard ends the worker instead.
Both are run here with a 2 s limit on pytest-xdist, as ``bin/test`` runs the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANGS = """
import time

import pytest


@pytest.fixture
def stuck_teardown():
    yield
    time.sleep(300)


def test_hangs_in_its_call():
    time.sleep(300)


def test_fails_then_hangs_in_its_teardown(stuck_teardown):
    assert False
"""


def test_a_hang_in_a_test_or_in_the_teardown_after_a_failure_fails_with_its_stack(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import STDERR, pytest_configure, pytest_runtest_teardown, pytest_unconfigure\n"
    )
    (tmp_path / "test_hangs.py").write_text(HANGS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LOCALCLUSTER_"))}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "1",
            "-o",
            "timeout=2",
            "-p",
            "no:cacheprovider",
            "test_hangs.py",
        ],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,  # either hang not ended: this test fails here
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Failed: Timeout (>2.0s) from pytest-timeout" in output  # the call, ended by pytest-timeout
    # The teardown after the failure, ended by the guard: the stack says where it hung.
    assert (
        "worker 'gw0' crashed while running 'test_hangs.py::test_fails_then_hangs_in_its_teardown'" in output
    )
    assert 'test_hangs.py", line 10 in stuck_teardown' in output
