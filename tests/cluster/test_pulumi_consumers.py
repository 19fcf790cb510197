"""The consumer stacks, deployed by the real Pulumi engine onto the local cluster.

``pulumi up`` / ``preview`` / ``destroy`` of each consumer project on its documented
``local`` stack (``Pulumi.local.yaml``), against the stand-in platform stack (the
``platform`` fixture, tests/cluster/conftest.py). The real pulumi-kubernetes provider
waits for the Deployment to be Available and for the Job to complete; the real
scheduler decides where their pods run; kwok runs them (its ``pod-ready`` and
``pod-complete`` stages: a Job's pod succeeds once running, localcluster/cluster.py).

The YAML consumers (pulumi-yaml v1.25.0), the TypeScript one (npm @pulumi/pulumi with the
SDK generated from the package's schema) and the Go one (its SDK from Pulumi's codegen/go) reach the components through the ``eks-gpu``
package: the CLI executes ``provider/pulumi-resource-eks-gpu`` itself, Python source and
all, with no language host in between (localcluster/pulumi/README.md). They run as a user's
project would: copied to a folder outside the checkout, ``packages:`` naming the checkout's
``provider`` by path, the built CLI and hosts on ``PATH``, no ``PULUMI_PYTHON_CMD``, no
``VIRTUAL_ENV``, and a ``python3`` without ``pulumi``; the package runs on ``provider/.venv``,
which ``provider/install`` made (bin/setup runs it). The one thing the copy takes from the
checkout unasked: the TypeScript project's ``node_modules`` is linked, not installed again.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from infra.tooling.offline import PLATFORM_ROOT
from infra.workloads.placement import POOL_LABEL
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack, environment

STACK = "local"
STACKS = PLATFORM_ROOT / "stacks"


@dataclass(frozen=True)
class Consumer:
    """A consumer project and what its local stack runs: the pool its pods ask for, their app label."""

    project: Path
    pool: str
    app: str


CONSUMERS = {
    "python": Consumer(STACKS / "inference", "inference", "triton"),
    "yaml": Consumer(STACKS / "inference-yaml", "inference", "triton"),
    # Through the eks-gpu package's generated SDK, on the npm packages bin/setup installs.
    "typescript": Consumer(STACKS / "inference-ts", "inference", "triton"),
    # Through the SDK Pulumi's codegen/go generates, compiled by the Go host (sdk/v3 v3.66.0).
    "go": Consumer(STACKS / "inference-go", "inference", "triton"),
}
"""Projects whose GpuDeployment serves: up makes it Available."""
"""Projects on a generated SDK export the child Deployment's metadata.uid, read through the component's typed output."""
JOBS = {"yaml": Consumer(STACKS / "training-yaml", "training", "finetune")}
"""Projects whose GpuJob trains: up waits until it completes."""


def outside_the_checkout(project: Path, folder: Path) -> Path:
    """``project`` as a user's own, in ``folder``: ``packages:`` sources made absolute paths into
    the checkout (``eks-gpu: <checkout>/provider``), ``node_modules`` linked, nothing else shared."""
    copy = folder / project.name
    shutil.copytree(project, copy, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))
    if (project / "node_modules").is_dir():
        (copy / "node_modules").symlink_to(project / "node_modules")
    definition = yaml.safe_load((copy / "Pulumi.yaml").read_text())
    definition["packages"] = {
        name: str((project / source).resolve()) for name, source in (definition.get("packages") or {}).items()
    }
    (copy / "Pulumi.yaml").write_text(yaml.safe_dump(definition, sort_keys=False))
    return copy


def assert_a_users_world(project: Path) -> None:
    """What the CLI and the plugins it starts see for ``project``: nothing Python from the harness."""
    assert PLATFORM_ROOT not in (project.resolve(), *project.resolve().parents)
    env = environment(project)
    assert "PULUMI_PYTHON_CMD" not in env and "VIRTUAL_ENV" not in env
    bare = subprocess.run(["python3", "-c", "import pulumi"], env=env, capture_output=True, text=True)
    assert bare.returncode != 0, "python3 on PATH has pulumi: a new user's would not"


def _runs_where_a_user_would(consumer: Consumer, folder: Path) -> Path:
    """The Python consumer in place (a Python program's named kindness, pulumi_cli.environment);
    the YAML and TypeScript ones from ``folder``, outside the checkout."""
    if consumer.project.joinpath("__main__.py").is_file():
        return consumer.project
    project = outside_the_checkout(consumer.project, folder)
    assert_a_users_world(project)
    return project


def fresh_stack(kube: Kube, project: Path, namespace: str | None = None) -> Stack:
    """The project's local stack, from nothing: no state left by an interrupted run, no objects."""
    fresh = Stack(project, STACK)
    fresh.remove()
    if namespace:
        kube.delete_namespace(namespace)
    fresh.init()
    return fresh


def _namespace(project: Path) -> str:
    config = yaml.safe_load((project / f"Pulumi.{STACK}.yaml").read_text())["config"]
    return next(v for k, v in config.items() if k.endswith(":namespace"))


def _assert_on_pool(kube: Kube, pods: list[client.V1Pod], pool: str) -> None:
    for pod in pods:
        node = kube.core.read_node(pod.spec.node_name)
        assert node.metadata.labels.get(POOL_LABEL) == pool, pod.spec.node_name


def _assert_nothing_left(kube: Kube, namespace: str) -> None:
    assert not kube.core.list_namespaced_pod(namespace).items
    assert namespace not in {
        n.metadata.name for n in kube.core.list_namespace().items if n.status.phase == "Active"
    }


@pytest.mark.parametrize("language", sorted(CONSUMERS))
def test_up_makes_the_deployment_available_on_its_pool_and_destroy_leaves_nothing(
    kube: Kube, platform: Stack, language: str, tmp_path: Path
) -> None:
    consumer = CONSUMERS[language]
    namespace = _namespace(consumer.project)
    stack = fresh_stack(kube, _runs_where_a_user_would(consumer, tmp_path), namespace)
    try:
        stack.up()  # pulumi-kubernetes waits until the Deployment is Available, or fails
        outputs = stack.outputs()
        deployment = client.AppsV1Api(kube.api).read_namespaced_deployment(outputs["deployment"], namespace)
        assert deployment.status.available_replicas == deployment.spec.replicas
        pods = kube.pods(namespace, f"app.kubernetes.io/name={consumer.app}")
        assert len(pods) == deployment.spec.replicas
        _assert_on_pool(kube, pods, consumer.pool)
        if language in ("typescript", "go"):  # the child Deployment, read through the SDK's resource output
            assert outputs["deploymentUid"] == deployment.metadata.uid
        # A second preview against what is deployed: nothing to change.
        stack.preview("--expect-no-changes")
    finally:
        stack.destroy()
    _assert_nothing_left(kube, namespace)


@pytest.mark.parametrize("language", sorted(JOBS))
def test_up_runs_the_job_to_completion_on_its_pool_and_destroy_leaves_nothing(
    kube: Kube, platform: Stack, language: str, tmp_path: Path
) -> None:
    consumer = JOBS[language]
    namespace = _namespace(consumer.project)
    stack = fresh_stack(kube, _runs_where_a_user_would(consumer, tmp_path), namespace)
    try:
        stack.up()  # pulumi-kubernetes waits until the Job is Complete, or fails
        job = client.BatchV1Api(kube.api).read_namespaced_job(stack.outputs()["job"], namespace)
        complete = [c for c in job.status.conditions or [] if c.type == "Complete"]
        assert [c.status for c in complete] == ["True"]
        assert job.status.succeeded == (job.spec.completions or 1)
        pods = kube.pods(namespace, f"app.kubernetes.io/name={consumer.app}")
        assert pods and {p.status.phase for p in pods} == {"Succeeded"}
        _assert_on_pool(kube, pods, consumer.pool)
        stack.preview("--expect-no-changes")
    finally:
        stack.destroy()
    _assert_nothing_left(kube, namespace)


def _documented_yaml_example() -> dict[str, Any]:
    """The YAML program docs/components.md shows (readers copy it), made a project of its own."""
    guide = (PLATFORM_ROOT / "docs" / "components.md").read_text()
    start = guide.index("\n## Use the components from TypeScript, Go or YAML\n")
    section = guide[start : guide.index("\n## ", start + 1)]
    (example,) = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    program = {"name": "docs-yaml-example", "runtime": "yaml", **yaml.safe_load(example)}
    program["packages"] = {"eks-gpu": str(PLATFORM_ROOT / "provider")}
    program["resources"]["platform"]["properties"]["name"] = "organization/eks-gpu-platform/local"
    return program


def test_the_documented_yaml_example_previews_on_the_real_engine(
    kube: Kube, platform: Stack, tmp_path: Path
) -> None:
    # The YAML host type-checks it against the package schema, the components construct and
    # place it with the placement the platform exports: a renamed or dropped input fails here.
    program = _documented_yaml_example()
    (tmp_path / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    (tmp_path / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": {"eks-gpu:imageCheck": "off"}}))
    assert_a_users_world(tmp_path)
    stack = Stack(tmp_path, STACK)
    stack.init()
    try:
        steps = json.loads(stack.preview("--json").stdout)["steps"]
    finally:
        stack.remove()
    types = {step["newState"]["type"] for step in steps if step.get("newState")}
    assert types >= {
        "eks-gpu:index:GpuDeployment",
        "kubernetes:apps/v1:Deployment",
        "kubernetes:policy/v1:PodDisruptionBudget",  # replicas: 2
        "eks-gpu:index:GpuJob",
        "kubernetes:batch/v1:Job",
    }
