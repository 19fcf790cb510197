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
def test_a_karpenter_node_takes_the_vpc_cnis_eni_formula(instance_type: str, pods: int) -> None:
    """ENIs x (IPv4 per ENI - 1) + 2, from nodeadm's instance-info.jsonl (eni_max_pods.go CalcMaxPods)."""
    assert max_pods(instance_type, managed_node_group=False) == pods
    assert allocatable(instance_type, managed_node_group=False).pods == pods


@pytest.mark.parametrize(
    ("instance_type", "pods"),
    [
        ("g5g.xlarge", 58),
        ("g5g.4xlarge", 110),
        ("g5g.8xlarge", 234),
        ("g5g.16xlarge", 250),
        ("t4g.medium", 17),
    ],
)
def test_a_managed_node_groups_node_caps_it_at_110_or_250_above_30_vcpus(
    instance_type: str, pods: int
) -> None:
    """max-pods-calculator.sh's recommended value, which managed node groups set; the cap also lowers
    kubeReserved memory (11 MiB a pod), so a g5g.4xlarge offers 1.3 GiB more than the ENI figure says."""
    assert max_pods(instance_type) == pods
    capped, uncapped = allocatable(instance_type), allocatable(instance_type, managed_node_group=False)
    assert (capped.pods, capped.memory_mib) == (pods, uncapped.memory_mib)


@pytest.mark.parametrize(
    ("millis", "reserved"), [(1000, 60), (2000, 70), (4000, 80), (8000, 90), (64000, 230), (500, 30)]
)
def test_cpu_is_reserved_by_nodeadms_sliding_scale(millis: int, reserved: int) -> None:
    """6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest."""
    assert cpu_reserved_millis(millis) == reserved


def test_a_g5g_xlarge_offers_less_than_its_instance_size() -> None:
    """8 GiB less the VM's 7.5% is 7577Mi of capacity, less 11 x 58 + 255 MiB kubeReserved and 100 MiB
    evictionHard; 4 CPUs less 80m."""
    node = allocatable("g5g.xlarge")
    assert (node.cpu, node.memory, node.pods) == ("3920m", "6584Mi", 58)
    assert (node.capacity_cpu_millis, node.capacity_memory_mib) == (4000, 7577)


def test_every_listed_type_has_its_eni_limits() -> None:
    assert set(ARM_NVIDIA) | set(ARM_SYSTEM) | set(X86_NVIDIA) <= set(ENI_LIMITS)
