"""localcluster/install_guard.py: bin/pulumi refuses what would make a Python folder a virtualenv.

With the Python language host built here (v3.68.0), ``pulumi install`` and the package
commands given a Python plugin folder run ``python -m venv <that folder>`` (seen with
the built CLI on a scratch copy: pyvenv.cfg, bin/, lib/ appear in provider/, then pip
installs into it). The engine's own commands never do.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from localcluster.cluster import ROOT
from localcluster.install_guard import folders_made_virtualenvs

PROVIDER = ROOT / "provider"
YAML_PROJECT = ROOT / "stacks" / "inference-yaml"
PYTHON_PROJECT = ROOT / "stacks" / "inference"


@pytest.mark.parametrize(
    "args",
    [
        ["install"],
        ["package", "get-schema", "../../provider"],
        ["package", "add", "../../provider"],
        ["--color", "never", "package", "gen-sdk", str(PROVIDER), "--language", "nodejs"],
    ],
)
def test_install_and_package_commands_on_the_package_folder_are_refused(args: list[str]) -> None:
    assert folders_made_virtualenvs(args, YAML_PROJECT) == [PROVIDER]


def test_install_in_a_python_project_is_refused_it_would_become_the_virtualenv() -> None:
    assert folders_made_virtualenvs(["install"], PYTHON_PROJECT) == [PYTHON_PROJECT]
    assert folders_made_virtualenvs(["-C", "../inference", "install"], YAML_PROJECT) == [PYTHON_PROJECT]


@pytest.mark.parametrize(
    ("args", "cwd"),
    [
        (["install"], ROOT / "infra"),  # the CLI walks up to the platform's Pulumi.yaml
        (["install"], ROOT / "infra" / "workloads"),
        (["-C", "infra", "install"], ROOT),
        (["--cwd=infra/workloads", "install"], ROOT),
        (["install", "-Cinfra"], ROOT),  # pflag's joined shorthand, after the command
        (["--cwd", "../../infra", "install"], YAML_PROJECT),
    ],
)
def test_install_below_a_python_project_is_refused_as_the_cli_finds_the_project(
    args: list[str], cwd: Path
) -> None:
    assert folders_made_virtualenvs(args, cwd) == [ROOT]


def test_package_add_below_a_python_project_names_the_project_the_cli_would_link() -> None:
    assert folders_made_virtualenvs(["package", "add", "../provider"], ROOT / "infra") == [PROVIDER, ROOT]


def test_install_inside_the_policy_pack_installs_the_pack_not_the_project_around_it() -> None:
    # install.go shouldInstallPolicyPackDependencies: a pack inside the project wins.
    assert folders_made_virtualenvs(["install"], ROOT / "policy") == [ROOT / "policy"]


def test_a_plugin_in_its_own_tree_is_what_install_installs_below_it(tmp_path: Path) -> None:
    plugin = tmp_path / "provider"
    (plugin / "src").mkdir(parents=True)
    (plugin / "PulumiPlugin.yml").write_text("runtime: {name: python}\n")
    assert folders_made_virtualenvs(["install"], plugin / "src") == [plugin]


def test_with_no_project_above_install_has_nothing_to_make(tmp_path: Path) -> None:
    assert folders_made_virtualenvs(["install"], tmp_path) == []


@pytest.mark.parametrize(
    "args",
    [
        ["package", "get-schema", "../../provider/pulumi-resource-eks-gpu"],
        ["up", "--yes"],
        ["preview", "--stack", "install"],  # a stack named like the command is a value, not a command
        ["destroy"],
    ],
)
def test_the_plugin_file_and_the_engines_commands_pass(args: list[str]) -> None:
    assert folders_made_virtualenvs(args, YAML_PROJECT) == []


def test_bin_pulumi_install_refuses_and_leaves_the_package_folder_as_it_was(tmp_path: Path) -> None:
    provider = tmp_path / "provider"
    shutil.copytree(PROVIDER, provider, ignore=shutil.ignore_patterns(".venv", "__pycache__"))
    project = tmp_path / "stacks" / "inference-yaml"
    shutil.copytree(YAML_PROJECT, project)
    before = sorted(p.name for p in provider.iterdir())

    result = subprocess.run(
        [str(ROOT / "bin" / "pulumi"), "install"], cwd=project, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 2
    assert f"would make {provider} a virtualenv itself" in result.stderr
    assert sorted(p.name for p in provider.iterdir()) == before
    assert not (provider / "pyvenv.cfg").exists() and not (PROVIDER / "pyvenv.cfg").exists()
