"""A consumer stack installs the package without the platform extra and runs the workload components.

``.ci/run`` builds ``.venv-workloads`` from nothing with ``pip install .`` (no extra);
this test runs a GpuDeployment there under Pulumi's mocks and checks that the
platform's dependencies are absent, so nothing in the workload path needs them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv-workloads" / "bin" / "python"

CONSUMER = r"""
import importlib.util, json
import pulumi

absent = [m for m in ("pulumi_aws", "pulumi_eks", "pulumi_awsx", "pydantic") if importlib.util.find_spec(m)]
captured = {}

class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        captured[args.typ] = args.inputs
        return args.name + "_id", args.inputs
    def call(self, args):
        return {}

pulumi.runtime.set_mocks(Mocks(), preview=False)
from infra import GpuDeployment  # after set_mocks, as Pulumi's unit-test docs say

@pulumi.runtime.test
def declare():
    d = GpuDeployment("llm", spec={
        "selector": {"matchLabels": {"app": "llm"}},
        "template": {"metadata": {"labels": {"app": "llm"}},
                     "spec": {"containers": [{"name": "m", "image": "vllm/vllm-openai:latest"}]}}})
    return d.name.apply(lambda _: None)

declare()
pod = captured["kubernetes:apps/v1:Deployment"]["spec"]["template"]["spec"]
import infra
print(json.dumps({"installed_platform_deps": absent, "pod": pod, "infra_file": infra.__file__}))
"""


@pytest.fixture(scope="module")
def consumer_run() -> dict:
    if not PYTHON.exists():
        pytest.skip(".venv-workloads is missing: bin/setup builds it (pip install . without extras)")
    done = subprocess.run(
        [str(PYTHON), "-c", CONSUMER], cwd="/", capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_platform_dependencies_are_not_installed(consumer_run: dict) -> None:
    assert consumer_run["installed_platform_deps"] == []


def test_gpu_deployment_runs_and_lands_its_pods_on_gpu_nodes(consumer_run: dict) -> None:
    pod = consumer_run["pod"]
    assert pod["nodeSelector"] == {"GPU": "true"}
    assert {"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}


def test_it_runs_the_installed_copy_not_this_checkout(consumer_run: dict) -> None:
    """The run above imported ``infra`` from the clean environment's site-packages."""
    assert "site-packages" in consumer_run["infra_file"], consumer_run["infra_file"]
