"""A consumer whose ``eks-gpu`` package has no working environment, through the real CLI.

The CLI executes ``provider/pulumi-resource-eks-gpu`` with the user's own environment and
installs nothing for it (pulumi/pulumi pkg/v3 ``resource/plugin/plugin.go`` ExecPlugin). Here
the package is a copy of the checkout's (``provider/`` and the source its ``-e ..`` installs),
with its ``.venv`` missing or never filled, and the consumer a YAML project in another folder
outside the checkout, on the harness's user-like environment (no ``PULUMI_PYTHON_CMD``, no
``VIRTUAL_ENV``, a ``python3`` without ``pulumi``). What must hold: one message naming the
package's folder and the command that makes its environment, nothing but the stack registered, and that
command, pasted from yet another folder, makes the next ``pulumi preview`` work.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from localcluster import cluster as local
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack, environment
from tests.cluster.test_pulumi_consumers import assert_a_users_world

ROOT = local.ROOT
NAMESPACE = "package-environment"
FIX = re.compile(
    r"pulumi-resource-eks-gpu: .*Make the package's environment, (\S+)/\.venv, with: (\S+)$", re.M
)


def _checkout_copy(folder: Path) -> Path:
    """``provider/`` and what its requirements install from the checkout (``-e ..``), no .venv."""
    shutil.copytree(
        ROOT / "provider", folder / "provider", ignore=shutil.ignore_patterns(".venv", "__pycache__")
    )
    shutil.copytree(ROOT / "infra", folder / "infra", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, folder / name)
    return folder / "provider"


def _consumer(folder: Path, provider: Path) -> Stack:
    """A YAML project declaring a namespace and a GpuDeployment in it, through ``provider``."""
    folder.mkdir()
    spec = {"selector": {"matchLabels": {"app": "env"}}, "template": {"metadata": {"labels": {"app": "env"}}}}
    spec["template"]["spec"] = {"containers": [{"name": "server", "image": "registry.example/llm:arm64"}]}
    program = {
        "name": "package-environment",
        "runtime": "yaml",
        "packages": {"eks-gpu": str(provider)},
        "resources": {
            "cluster": {
                "type": "pulumi:providers:kubernetes",
                "properties": {"kubeconfig": str(local.KUBECONFIG)},
            },
            "ns": {
                "type": "kubernetes:core/v1:Namespace",
                "properties": {"metadata": {"name": NAMESPACE}},
                "options": {"provider": "${cluster}"},
            },
            "llm": {
                "type": "eks-gpu:GpuDeployment",
                "properties": {"metadata": {"namespace": "${ns.metadata.name}"}, "spec": spec, "gpus": 1},
                "options": {"providers": ["${cluster}"]},
            },
        },
    }
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    (folder / "Pulumi.local.yaml").write_text(yaml.safe_dump({"config": {"eks-gpu:imageCheck": "off"}}))
    assert_a_users_world(folder)
    stack = Stack(folder, "local")
    stack.remove()
    stack.init()
    return stack


def _broken(provider: Path) -> None:
    """provider/.venv as an interrupted install leaves it: a Python with nothing installed."""
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(provider / ".venv")], check=True)


@pytest.mark.parametrize("state", ["missing", "broken"])
def test_up_says_which_folder_and_which_command_and_registers_nothing(
    kube: Kube, tmp_path: Path, state: str
) -> None:
    provider = _checkout_copy(tmp_path / "checkout")
    if state == "broken":
        _broken(provider)
    stack = _consumer(tmp_path / "consumer", provider)
    try:
        result = stack.run("up", "--yes", "--skip-preview", check=False)
        resources = stack.run("stack", "export").stdout
    finally:
        stack.remove()
    output = result.stdout + result.stderr
    assert result.returncode != 0
    # One message (the CLI shows the plugin's output in its progress lines and again in its
    # diagnostics), after "Detected that ... exited prematurely" and before its own error.
    assert set(FIX.findall(output)) == {(str(provider), str(provider / "install"))}
    assert "ModuleNotFoundError" not in output and "Traceback" not in output
    assert output.index("Make the package's environment") < output.index("Error loading schema from plugin")
    registered = {r["type"] for r in json.loads(resources)["deployment"].get("resources") or []}
    assert registered <= {"pulumi:pulumi:Stack"}
    assert NAMESPACE not in {n.metadata.name for n in kube.core.list_namespace().items}


def test_the_printed_fix_pasted_from_another_folder_makes_the_package_run(kube: Kube, tmp_path: Path) -> None:
    provider = _checkout_copy(tmp_path / "checkout")
    _broken(provider)
    stack = _consumer(tmp_path / "consumer", provider)
    try:
        failed = stack.preview(check=False)
        ((_, command),) = set(FIX.findall(failed.stdout + failed.stderr))
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        fix = subprocess.run(
            [command], cwd=elsewhere, env=environment(), capture_output=True, text=True, timeout=1200
        )
        assert fix.returncode == 0, fix.stderr
        steps = stack.preview("--json").stdout
    finally:
        stack.remove()
    assert '"eks-gpu:index:GpuDeployment"' in steps and '"kubernetes:apps/v1:Deployment"' in steps
    assert not list(elsewhere.iterdir())  # pip worked in the package's folder, not here
