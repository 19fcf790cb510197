"""provider/pulumi-resource-eks-gpu: the plugin file the Pulumi CLI executes for the package.

That it serves the package under the real CLI is shown by tests/cluster/test_pulumi_consumers.py
(``pulumi up`` of the YAML consumers) and tests/cluster/test_package_commands.py
(``pulumi package get-schema``). Here: what it says when it finds no Python.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.provider.conftest import PROVIDER_DIR

PLUGIN = "pulumi-resource-eks-gpu"


def _copy_without_venv(tmp_path: Path) -> Path:
    """The plugin file alone in a folder of its own: no .venv beside it, whatever the checkout has."""
    folder = tmp_path / "provider"
    folder.mkdir()
    shutil.copy2(PROVIDER_DIR / PLUGIN, folder / PLUGIN)
    return folder


def _run(plugin: Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(plugin), "127.0.0.1:1"], cwd=cwd, env=env, capture_output=True, text=True, timeout=30
    )


def test_the_plugin_file_is_executable() -> None:
    # The CLI runs the file only if it can execute it; otherwise it asks the language host.
    assert (PROVIDER_DIR / PLUGIN).stat().st_mode & 0o111 == 0o111


def test_with_no_python_it_names_every_interpreter_it_looked_for(tmp_path: Path) -> None:
    folder = _copy_without_venv(tmp_path)
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()

    result = _run(folder / PLUGIN, cwd=elsewhere, env={"PATH": ""})

    assert result.returncode == 1
    assert result.stdout == ""  # the CLI reads the port from stdout: nothing else may go there
    # Its own folder, not the working directory (the CLI starts it in the consumer's project).
    assert f"looked for {folder}/.venv/bin/python," in result.stderr
    assert "$PULUMI_PYTHON_CMD (unset)" in result.stderr
    assert "python3 on PATH (empty)" in result.stderr
    assert f"python3 -m venv {folder}/.venv" in result.stderr


def test_a_pulumi_python_cmd_that_does_not_exist_is_named(tmp_path: Path) -> None:
    folder = _copy_without_venv(tmp_path)
    missing = tmp_path / "no" / "python"

    result = _run(folder / PLUGIN, cwd=tmp_path, env={"PATH": "", "PULUMI_PYTHON_CMD": str(missing)})

    assert result.returncode == 1
    assert f"$PULUMI_PYTHON_CMD ({missing})" in result.stderr
