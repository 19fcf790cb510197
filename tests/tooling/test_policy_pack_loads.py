"""The CrossGuard pack starts in its own environment, the way `pulumi preview --policy-pack policy` starts it.

The CLI runs the pack's ``__main__.py`` with the virtualenv ``PulumiPolicy.yaml`` names;
the pack serves the Analyzer gRPC API on loopback and prints its port. Here that
environment is the one ``policy/install`` builds (as ``.ci/run`` does on a fresh
clone), and the test asks the running pack what it enforces.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2_grpc

from infra.tooling.policy_rules import RULES

POLICY = Path(__file__).resolve().parents[2] / "policy"
PYTHON = POLICY / ".venv" / "bin" / "python"


def test_the_pack_names_the_virtualenv_its_installer_builds() -> None:
    options = yaml.safe_load((POLICY / "PulumiPolicy.yaml").read_text())["runtime"]["options"]
    assert options["virtualenv"] == ".venv"
    assert ".venv" in (POLICY / "install").read_text()


@pytest.fixture
def pack():
    if not PYTHON.exists():
        pytest.skip("policy/.venv is missing: bin/setup (or policy/install) builds it")
    process = subprocess.Popen(
        [str(PYTHON), "-u", "__main__.py"],
        cwd=POLICY,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), process.stderr.read()
        yield f"127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(timeout=10)


def test_the_pack_starts_in_its_own_environment_and_serves_every_rule(pack: str) -> None:
    with grpc.insecure_channel(pack) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == "eks-gpu-guardrails"
    assert [p.name for p in info.policies] == [r.name for r in RULES]
