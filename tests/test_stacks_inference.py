"""stacks/inference: a consumer stack importing GpuDeployment, run with its dev config."""

from __future__ import annotations

from pathlib import Path

from infra.tooling.manifests import is_manifest_type, manifest_of, validate_manifest
from infra.tooling.offline import run_project
from infra.workloads.scheduling import placeable_on
from tests.conftest import KUBERNETES_VERSION, gpu_node, system_node

PROJECT = Path(__file__).resolve().parents[1] / "stacks" / "inference"


def test_inference_pods_land_on_gpu_nodes_only() -> None:
    result = run_project(PROJECT, "dev")
    deployment = result.one("kubernetes:apps/v1:Deployment", "triton")
    pod = deployment.inputs["spec"]["template"]["spec"]
    nodes = [
        gpu_node("inference", **{"eks-gpu/pool": "inference"}),
        gpu_node("training", **{"eks-gpu/pool": "training"}),
        system_node(),
    ]
    assert placeable_on(pod, nodes) == ["inference"]
    assert deployment.inputs["spec"]["replicas"] == 2
    assert pod["securityContext"]["runAsUser"] == 10001  # the user's value kept beside the defaults


def test_the_pool_is_picked_through_the_platforms_exported_contract_only() -> None:
    """The stack names a pool; the pool label and the GPU limit come from the platform's placement output."""
    result = run_project(PROJECT, "dev")
    pod = result.one("kubernetes:apps/v1:Deployment", "triton").inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"GPU": "true", "eks-gpu/pool": "inference"}
    assert "eks-gpu/pool" not in (PROJECT / "__main__.py").read_text()  # no label name copied


def test_everything_goes_through_the_platforms_cluster_provider() -> None:
    result = run_project(PROJECT, "dev")
    provider = result.one("pulumi:providers:kubernetes", "platform")
    assert provider.inputs["kubeconfig"] == "computed(organization/eks-gpu-platform/dev.kubeconfig)"
    for r in result.resources:
        if is_manifest_type(r.type) and r.custom:
            assert r.provider.startswith(provider.urn), r.name


def test_every_manifest_is_schema_valid() -> None:
    result = run_project(PROJECT, "dev")
    kinds = set()
    for r in result.resources:
        if is_manifest_type(r.type) and r.custom:
            validate_manifest(manifest_of(r.type, r.name, r.inputs), KUBERNETES_VERSION)
            kinds.add(r.inputs["kind"])
    assert kinds == {"Namespace", "Deployment", "PodDisruptionBudget", "Service", "NetworkPolicy"}
