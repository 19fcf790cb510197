"""nodeadm's reserves (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go): what a real AL2023 node
offers pods, the one source for the autoscaler's template tags, the preview and the kwok nodes."""

from __future__ import annotations

import pytest

from infra.platform.allocatable import ENI_LIMITS, allocatable, cpu_reserved_millis, max_pods
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM, X86_NVIDIA


@pytest.mark.parametrize(
    ("instance_type", "pods"),
    [("g5g.xlarge", 58), ("g5g.4xlarge", 234), ("g5g.16xlarge", 737), ("t4g.medium", 17)],
)
def test_max_pods_is_the_vpc_cnis_eni_formula(instance_type: str, pods: int) -> None:
    """ENIs x (IPv4 per ENI - 1) + 2, from nodeadm's instance-info.jsonl (eni_max_pods.go CalcMaxPods)."""
    assert max_pods(instance_type) == pods


@pytest.mark.parametrize(
    ("millis", "reserved"), [(1000, 60), (2000, 70), (4000, 80), (8000, 90), (64000, 230), (500, 30)]
)
def test_cpu_is_reserved_by_nodeadms_sliding_scale(millis: int, reserved: int) -> None:
    """6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest."""
    assert cpu_reserved_millis(millis) == reserved


def test_a_g5g_xlarge_offers_less_than_its_instance_size() -> None:
    """8 GiB less 11 x 58 + 255 MiB kubeReserved and 100 MiB evictionHard; 4 CPUs less 80m."""
    node = allocatable("g5g.xlarge")
    assert (node.cpu, node.memory, node.pods) == ("3920m", "7199Mi", 58)
    assert (node.capacity_cpu_millis, node.capacity_memory_mib) == (4000, 8192)


def test_every_listed_type_has_its_eni_limits() -> None:
    assert set(ARM_NVIDIA) | set(ARM_SYSTEM) | set(X86_NVIDIA) <= set(ENI_LIMITS)
