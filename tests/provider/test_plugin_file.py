"""provider/pulumi-resource-eks-gpu: the plugin file the Pulumi CLI executes for the package.

That it serves the package under the real CLI is shown by tests/cluster/test_pulumi_consumers.py
(``pulumi up`` of the YAML consumers) and tests/cluster/test_package_commands.py
(``pulumi package get-schema``), and tests/cluster/test_pulumi_consumers.py runs the fix it prints
from another folder. Here: what it says when it finds no Python, or one that cannot run it.
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
    assert f"Make the package's environment, {folder}/.venv, with: {folder}/install" in result.stderr


def test_a_pulumi_python_cmd_that_does_not_exist_is_named(tmp_path: Path) -> None:
    folder = _copy_without_venv(tmp_path)
    missing = tmp_path / "no" / "python"

    result = _run(folder / PLUGIN, cwd=tmp_path, env={"PATH": "", "PULUMI_PYTHON_CMD": str(missing)})

    assert result.returncode == 1
    assert f"$PULUMI_PYTHON_CMD ({missing})" in result.stderr


def _one_message(stderr: str, folder: Path) -> None:
    """One line naming the package's folder and the command that makes its environment."""
    assert stderr.count("\n") == 1, stderr
    assert stderr.endswith(f"Make the package's environment, {folder}/.venv, with: {folder}/install\n")


def test_a_python3_without_the_packages_dependencies_gets_the_fix_not_a_traceback(tmp_path: Path) -> None:
    # A user's machine: python3 on PATH, no pulumi in it, no PULUMI_PYTHON_CMD, no provider/.venv.
    folder = _copy_without_venv(tmp_path)
    bare = tmp_path / "bare"
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(bare)], check=True)

    result = _run(folder / PLUGIN, cwd=tmp_path, env={"PATH": f"{bare}/bin"})

    assert result.returncode == 1
    assert result.stdout == ""
    assert "ModuleNotFoundError" not in result.stderr
    assert (
        f"{bare}/bin/python3 cannot run the eks-gpu package (lacks pulumi, pulumi_kubernetes, infra)"
        in result.stderr
    )
    _one_message(result.stderr, folder)


def test_a_broken_package_environment_is_named_with_the_command_that_remakes_it(tmp_path: Path) -> None:
    # provider/.venv made but never filled (an interrupted install): it is preferred, and named.
    folder = _copy_without_venv(tmp_path)
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(folder / ".venv")], check=True)

    result = _run(folder / PLUGIN, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})

    assert result.returncode == 1
    assert f"{folder}/.venv/bin/python cannot run the eks-gpu package (lacks pulumi," in result.stderr
    _one_message(result.stderr, folder)
