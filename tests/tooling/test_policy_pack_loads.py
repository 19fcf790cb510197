"""The pack file starts the CrossGuard pack in its own environment, as `pulumi preview --policy-pack` does.

The CLI executes ``policy/eks-gpu-guardrails`` with the engine's address as its one argument
(pulumi/pulumi pkg/v3 ``resource/plugin/analyzer_plugin.go``); the file runs the pack with the
virtualenv ``PulumiPolicy.yaml`` names, the one ``policy/install`` builds (as ``.ci/run`` does on
a fresh clone), and the pack prints the port it serves the Analyzer API on. Here it is started
that way with no other Python to fall back on, and asked what it enforces; the real engine's
verdicts are tests/cluster/test_policy_pack.py's.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from infra.tooling import gomod
from infra.tooling.policy_rules import RULES

POLICY = Path(__file__).resolve().parents[2] / "policy"
PACK = POLICY / "eks-gpu-guardrails"
PYTHON = POLICY / ".venv" / "bin" / "python"


def test_the_pack_file_uses_the_virtualenv_its_installer_builds() -> None:
    options = yaml.safe_load((POLICY / "PulumiPolicy.yaml").read_text())["runtime"]["options"]
    assert options["virtualenv"] == ".venv"
    assert ".venv" in (POLICY / "install").read_text()
    assert '"$here/.venv/bin/python"' in PACK.read_text()
    assert os.access(PACK, os.X_OK)


def _own_environment() -> dict[str, str]:
    """This environment with nothing but the pack's own virtualenv able to run it."""
    if not PYTHON.exists():
        pytest.skip("policy/.venv is missing: bin/setup (or policy/install) builds it")
    env = {k: v for k, v in os.environ.items() if k not in ("PULUMI_PYTHON_CMD", "VIRTUAL_ENV")}
    env["PATH"] = "/nonexistent"
    return env


@contextlib.contextmanager
def _serving(argv: list[str], cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """The address the pack serves on, started as ``argv`` (the CLI's command line) from ``cwd``."""
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), process.stderr.read()
        yield f"127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def pack(tmp_path: Path) -> Iterator[str]:
    # the CLI runs it from the project's folder, not the pack's
    with _serving(["/bin/sh", str(PACK), "127.0.0.1:1"], tmp_path, _own_environment()) as address:
        yield address


def test_the_pack_file_starts_the_pack_in_its_own_environment_serving_every_rule(pack: str) -> None:
    with grpc.insecure_channel(pack) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == "eks-gpu-guardrails"
    assert [p.name for p in info.policies] == [r.name for r in RULES]
    # each described by one whole sentence, printed above each violation: nothing cut mid-way, and no
    # path into this repository, which a pack's user may not have
    descriptions = [p.description for p in info.policies]
    assert descriptions == [r.description for r in RULES]
    assert all(d.endswith(".") and d.count(". ") == 0 for d in descriptions), descriptions
    assert not [d for d in descriptions if "docs/" in d or ".go" in d or "decision" in d.lower()]


def test_the_pack_file_takes_the_flags_the_cli_adds_before_the_engine_address(tmp_path: Path) -> None:
    """``pulumi -v=9 --logflow --logtostderr --tracing ...`` puts its logging and tracing flags
    before the engine's address (pkg/v3 resource/plugin/plugin.go, buildPluginArguments)."""
    flags = ["--logtostderr", "-v=9", "--tracing", "file:///dev/null"]
    with _serving(["/bin/sh", str(PACK), *flags, "127.0.0.1:1"], tmp_path, _own_environment()):
        pass


def test_the_pack_file_finds_its_own_folder_under_an_exported_cdpath(tmp_path: Path) -> None:
    """The CLI executes the path as the user gave it (relative to the project), and hands the
    pack the user's environment (ExecPlugin: os.Environ()): a CDPATH with a ``policy`` folder of
    its own must not move the pack there."""
    (tmp_path / "policy").mkdir()
    env = {**_own_environment(), "CDPATH": str(tmp_path)}
    relative = str(PACK.relative_to(POLICY.parent))
    with _serving(["/bin/sh", relative, "127.0.0.1:1"], POLICY.parent, env):
        pass


def test_an_interpreter_without_the_packs_requirements_is_named_with_the_fix(tmp_path: Path) -> None:
    copy = tmp_path / PACK.name  # a pack folder with no .venv
    shutil.copy(PACK, copy)
    bare = tmp_path / "python"  # a Python without site-packages: no pulumi_policy, no infra
    bare.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    bare.chmod(0o755)
    env = {"PATH": "/nonexistent", "PULUMI_PYTHON_CMD": str(bare)}
    result = subprocess.run(["/bin/sh", str(copy), "127.0.0.1:1"], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert (
        f"{bare} cannot run the pack (ModuleNotFoundError: No module named 'pulumi_policy')" in result.stderr
    )
    assert f"Make the pack's environment with {tmp_path}/install" in result.stderr


@pytest.mark.parametrize(
    ("python_cmd", "looked"),
    [
        ("/nowhere/python", "then $PULUMI_PYTHON_CMD (/nowhere/python)."),
        (None, "then $PULUMI_PYTHON_CMD (unset), then python3 on PATH."),
    ],
)
def test_without_an_interpreter_the_pack_file_names_each_one_it_looked_for(
    tmp_path: Path, python_cmd: str | None, looked: str
) -> None:
    copy = tmp_path / PACK.name  # a pack folder with no .venv
    shutil.copy(PACK, copy)
    env = {"PATH": "/nonexistent", **({"PULUMI_PYTHON_CMD": python_cmd} if python_cmd else {})}
    result = subprocess.run(["/bin/sh", str(copy), "127.0.0.1:1"], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert (
        f"no Python interpreter to run the policy pack: looked for {tmp_path}/.venv/bin/python, {looked}"
        in (result.stderr)
    )
    assert f"{tmp_path}/install" in result.stderr


def _pulumi_action_steps() -> list[dict]:
    """Every step of the workflows that runs the Pulumi CLI through ``pulumi/actions``."""
    return [
        step
        for workflow in (POLICY.parent / ".github" / "workflows").glob("*.yml")
        for job in yaml.safe_load(workflow.read_text())["jobs"].values()
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("pulumi/actions@")
    ]


def test_the_workflows_run_the_pack_with_the_cli_the_tests_run() -> None:
    """pulumi/actions keeps a CLI already on the runner when it satisfies its default ``^3``
    (its src/libs/pulumi-cli.ts, downloadCli), and a CLI older than the file form of
    ``--policy-pack`` (not in v3.226's analyzer_plugin.go) fails to load the pack: each step
    names the CLI localcluster/pulumi/cli pins, the one tests/cluster/test_policy_pack.py runs."""
    pinned = gomod.pinned_version(
        POLICY.parent / "localcluster" / "pulumi" / "cli", "github.com/pulumi/pulumi/pkg/v3"
    )
    steps = _pulumi_action_steps()
    assert steps and {str(step["with"].get("pulumi-version")) for step in steps} == {pinned.removeprefix("v")}


def test_the_readme_docs_and_workflows_run_the_pack_file() -> None:
    """One form everywhere: the one tests/cluster/test_policy_pack.py runs on the built CLI."""
    root = POLICY.parent
    named = PACK.relative_to(root).as_posix()
    steps = _pulumi_action_steps()
    assert steps and {step["with"].get("policyPacks") for step in steps} == {named}
    for doc in (root / "README.md", *(root / "docs").glob("*.md")):
        assert set(re.findall(r"--policy-pack ([\w./-]+)", doc.read_text())) <= {named}, doc
