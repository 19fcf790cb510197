"""The consumer stacks, deployed by the real Pulumi engine onto the local cluster.

``pulumi up`` / ``preview`` / ``destroy`` of ``stacks/inference`` (Python) on its
documented ``local`` stack (``Pulumi.local.yaml``), against a stand-in
platform stack that exports the local kubeconfig and the placement the dev
platform program exports. The real pulumi-kubernetes provider waits for the
Deployment to be Available; the real scheduler decides where its pods run.

The TypeScript consumer goes through the ``eks-gpu`` component package: the CLI executes
its plugin file (``provider/pulumi-resource-eks-gpu``) and the Python component builds the
Deployment, as a remote component of the TypeScript program.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from infra.tooling.offline import PLATFORM_ROOT, run_project
from infra.workloads.placement import POOL_LABEL
from localcluster import cluster as local
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack

STACK = "local"
STAND_IN = local.ROOT / "localcluster" / "platform-stack"
CONSUMERS = {
    "python": PLATFORM_ROOT / "stacks" / "inference",
    # Through the eks-gpu package's generated SDK, on the npm packages bin/setup installs.
    "typescript": PLATFORM_ROOT / "stacks" / "inference-ts",
}


@pytest.fixture(scope="module")
def platform(kube: Kube) -> Iterator[Stack]:
    """The stand-in platform stack, its outputs written from the dev platform program's exports."""
    exports = run_project(PLATFORM_ROOT, "dev").stack_outputs
    config = {
        "eks-gpu-platform:placement": exports["placement"],
        "eks-gpu-platform:kubeconfig": local.KUBECONFIG.read_text(),
    }
    (STAND_IN / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": config}))
    stack = Stack(STAND_IN, STACK)
    stack.init()
    stack.up()
    yield stack
    stack.destroy()
    stack.remove()


def _fresh_consumer(kube: Kube, project: Path, namespace: str) -> Stack:
    """The project's local stack, from nothing: no state left by an interrupted run, no objects."""
    stack = Stack(project, STACK)
    stack.remove()
    kube.delete_namespace(namespace)
    stack.init()
    return stack


def _namespace(project: Path) -> str:
    config = yaml.safe_load((project / f"Pulumi.{STACK}.yaml").read_text())["config"]
    return next(v for k, v in config.items() if k.endswith(":namespace"))


@pytest.mark.parametrize("language", sorted(CONSUMERS))
def test_up_makes_the_deployment_available_on_its_pool_and_destroy_leaves_nothing(
    kube: Kube, platform: Stack, language: str
) -> None:
    project = CONSUMERS[language]
    namespace = _namespace(project)
    stack = _fresh_consumer(kube, project, namespace)
    try:
        stack.up()  # pulumi-kubernetes waits until the Deployment is Available, or fails
        outputs = stack.outputs()
        deployment = client.AppsV1Api(kube.api).read_namespaced_deployment(outputs["deployment"], namespace)
        assert deployment.status.available_replicas == deployment.spec.replicas
        pods = kube.pods(namespace, "app.kubernetes.io/name=triton")
        assert len(pods) == deployment.spec.replicas
        for pod in pods:
            node = kube.core.read_node(pod.spec.node_name)
            assert node.metadata.labels.get(POOL_LABEL) == "inference", pod.spec.node_name
        # A second preview against what is deployed: nothing to change.
        stack.preview("--expect-no-changes")
    finally:
        stack.destroy()
    assert not kube.core.list_namespaced_pod(namespace).items
    assert namespace not in {
        n.metadata.name for n in kube.core.list_namespace().items if n.status.phase == "Active"
    }
