"""localcluster/pulumi_cli.py: the CLI's environment in the tests is a user's, bar one named kindness.

The CLI hands its own environment to every plugin it executes (pulumi/pulumi pkg/v3
``resource/plugin/plugin.go`` ExecPlugin: ``os.Environ()``), so whatever the harness sets
reaches provider/pulumi-resource-eks-gpu too. A user's shell has no ``PULUMI_PYTHON_CMD``
pointing at this checkout's .venv, no ``VIRTUAL_ENV`` and no virtualenv on ``PATH``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from localcluster.cluster import ROOT
from localcluster.pulumi_cli import PYTHON, environment

PYTHON_PROGRAM = ROOT / "stacks" / "inference"
NOT_PYTHON = [ROOT / "stacks" / "inference-yaml", ROOT / "stacks" / "inference-ts", None]


@pytest.fixture
def activated_venv(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test runner's shell as a developer may have it: .venv activated, PULUMI_PYTHON_CMD set."""
    monkeypatch.setenv("VIRTUAL_ENV", str(ROOT / ".venv"))
    monkeypatch.setenv("PATH", f"{ROOT / '.venv' / 'bin'}{os.pathsep}/usr/bin")
    monkeypatch.setenv("PULUMI_PYTHON_CMD", str(PYTHON))
    return ROOT / ".venv" / "bin"


@pytest.mark.parametrize("project", NOT_PYTHON, ids=["yaml", "typescript", "no-project"])
def test_yaml_and_typescript_programs_and_their_package_plugins_get_no_python_from_the_harness(
    activated_venv: Path, project: Path | None
) -> None:
    env = environment(project)
    assert "PULUMI_PYTHON_CMD" not in env
    assert "VIRTUAL_ENV" not in env
    assert str(activated_venv) not in env["PATH"].split(os.pathsep)
    assert "/usr/bin" in env["PATH"].split(os.pathsep)


def test_a_python_program_runs_on_the_checkouts_venv_the_one_named_kindness(activated_venv: Path) -> None:
    # The Python host served here (v3.68) cannot read Pulumi.yaml's virtualenv from CLI v3.276.
    env = environment(PYTHON_PROGRAM)
    assert env["PULUMI_PYTHON_CMD"] == str(PYTHON)
    assert "VIRTUAL_ENV" not in env
