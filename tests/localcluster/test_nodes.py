"""The fake nodes are the dev stack's node groups as EKS and the device plugin would make them."""

from __future__ import annotations

import pytest

from infra.tooling.offline import PLATFORM_ROOT, run_project
from localcluster.nodes import node_manifests


@pytest.fixture(scope="module")
def nodes() -> dict[str, dict]:
    return {n["metadata"]["name"]: n for n in node_manifests(run_project(PLATFORM_ROOT, "dev"))}


def test_every_declared_group_has_nodes_named_after_it(nodes: dict[str, dict]) -> None:
    groups = {n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] for n in nodes.values()}
    assert groups == {"gpu-platform-system", "gpu-platform-gpu-inference", "gpu-platform-gpu-training"}
    assert (
        sum(
            1
            for n in nodes.values()
            if n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] == "gpu-platform-system"
        )
        == 2
    )


def test_gpu_nodes_carry_the_contract_as_kubernetes_spells_it(nodes: dict[str, dict]) -> None:
    node = nodes["gpu-platform-gpu-inference-0"]
    assert node["spec"]["taints"] == [{"key": "GPU", "value": "true", "effect": "NoSchedule"}]
    assert node["metadata"]["labels"]["GPU"] == "true"
    assert node["metadata"]["labels"]["eks-gpu/pool"] == "inference"
    assert node["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"


def test_gpus_advertised_are_physical_times_the_pools_time_slicing(nodes: dict[str, dict]) -> None:
    assert (
        nodes["gpu-platform-gpu-inference-0"]["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    )  # 1 T4G x 4 replicas
    assert (
        nodes["gpu-platform-gpu-training-0"]["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    )  # g5g.16xlarge, whole


def test_system_nodes_have_no_taint_and_no_gpu(nodes: dict[str, dict]) -> None:
    node = nodes["gpu-platform-system-0"]
    assert node["spec"]["taints"] == []
    assert "nvidia.com/gpu" not in node["status"]["allocatable"]


def test_nodes_offer_what_a_real_al2023_node_does_not_the_instance_size(nodes: dict[str, dict]) -> None:
    """nodeadm's reserves (infra/platform/allocatable.py), as the autoscaler's template tags promise: a
    g5g.xlarge has 4 CPUs and 8 GiB (7577Mi as a VM reports it), and offers pods 3920m, 6584Mi and 58 pods."""
    status = nodes["gpu-platform-gpu-inference-0"]["status"]
    assert (status["capacity"]["cpu"], status["capacity"]["memory"]) == ("4000m", "7577Mi")
    offered = status["allocatable"]
    assert (offered["cpu"], offered["memory"], offered["pods"]) == ("3920m", "6584Mi", "58")
