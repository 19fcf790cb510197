"""What a node of an EC2 instance type offers pods on the EKS AL2023 AMIs: nodeadm's reserves. Pure."""

from __future__ import annotations

from dataclasses import dataclass, fields

from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM, X86_NVIDIA, InstanceType

VM_MEMORY_OVERHEAD = 0.075  # karpenter-provider-aws --vm-memory-overhead-percent default
# max-pods-calculator.sh: MAX_POD_CEILING_FOR_LOW_CPU / _HIGH_CPU, split at more than 30 vCPUs
MANAGED_MAX_PODS_LOW_CPU, MANAGED_MAX_PODS_HIGH_CPU, MANAGED_HIGH_CPU_ABOVE = 110, 250, 30
EVICTION_MEMORY_MIB = 100
MEMORY_PER_POD_MIB, MEMORY_BASE_MIB = 11, 255
# (upper bound of a CPU range in millicores, or None for the rest; reserved share in 1/10000)
CPU_RESERVE_STEPS = ((1000, 600), (2000, 100), (4000, 50), (None, 25))

# (default network card's ENIs, IPv4 addresses per ENI): nodeadm's instance-info.jsonl (same commit).
ENI_LIMITS: dict[str, tuple[int, int]] = {
    "g5g.xlarge": (4, 15), "g5g.2xlarge": (4, 15), "g5g.4xlarge": (8, 30), "g5g.8xlarge": (8, 30),
    "g5g.16xlarge": (15, 50), "g5g.metal": (15, 50),
    "t4g.medium": (3, 6), "t4g.large": (3, 12), "t4g.xlarge": (4, 15), "m7g.large": (3, 10),
    "m7g.xlarge": (4, 15), "m8g.large": (3, 10), "c7g.large": (3, 10),
    "g4dn.xlarge": (3, 10), "g5.xlarge": (4, 15), "g6.xlarge": (4, 15),
}  # fmt: skip


@dataclass(frozen=True)
class Allocatable:
    """What the kubelet of one node reports as allocatable (and its capacity for CPU and memory)."""

    cpu_millis: int
    memory_mib: int
    pods: int
    capacity_cpu_millis: int
    capacity_memory_mib: int

    @property
    def cpu(self) -> str:
        return f"{self.cpu_millis}m"

    @property
    def memory(self) -> str:
        return f"{self.memory_mib}Mi"


def spec(instance_type: str) -> InstanceType:
    """The listed facts of ``instance_type`` (KeyError naming it when unlisted)."""
    for table in (ARM_NVIDIA, ARM_SYSTEM, X86_NVIDIA):
        if instance_type in table:
            return table[instance_type]
    raise KeyError(f"no capacity known for instance type {instance_type!r}")


def eni_max_pods(instance_type: str) -> int:
    """nodeadm's and Karpenter's figure: ENIs x (IPv4 addresses per ENI - 1) + 2."""
    enis, ips = ENI_LIMITS[instance_type]
    return enis * (ips - 1) + 2


def max_pods(instance_type: str, *, managed_node_group: bool = True) -> int:
    """The kubelet's maxPods: the ENI figure, capped by vCPUs on a managed node group's node."""
    pods = eni_max_pods(instance_type)
    if not managed_node_group:
        return pods
    high_cpu = spec(instance_type).vcpus > MANAGED_HIGH_CPU_ABOVE
    return min(pods, MANAGED_MAX_PODS_HIGH_CPU if high_cpu else MANAGED_MAX_PODS_LOW_CPU)


def memory_capacity_mib(instance_type: str) -> int:
    """What a node of the type reports as memory capacity: the nominal size less the VM's overhead."""
    return int(spec(instance_type).memory_gib * 1024 * (1 - VM_MEMORY_OVERHEAD))


def cpu_reserved_millis(total_millis: int) -> int:
    reserved, start = 0, 0
    for end, share in CPU_RESERVE_STEPS:
        if total_millis > start:
            reserved += (min(total_millis, end if end is not None else total_millis) - start) * share // 10000
        start = end if end is not None else start
    return reserved


def memory_reserved_mib(pods: int) -> int:
    """kubeReserved memory plus the hard eviction threshold: what allocatable lacks of capacity."""
    return MEMORY_PER_POD_MIB * pods + MEMORY_BASE_MIB + EVICTION_MEMORY_MIB


def allocatable(instance_type: str, *, managed_node_group: bool = True) -> Allocatable:
    """What a node of ``instance_type`` offers pods after nodeadm's reserves; ``managed_node_group``
    False for a node Karpenter launches (no maxPods cap)."""
    pods = max_pods(instance_type, managed_node_group=managed_node_group)
    cpu, memory = spec(instance_type).vcpus * 1000, memory_capacity_mib(instance_type)
    reserved = memory_reserved_mib(eni_max_pods(instance_type))  # nodeadm's, before any maxPods drop-in
    return Allocatable(
        cpu_millis=cpu - cpu_reserved_millis(cpu),
        memory_mib=memory - reserved,
        pods=pods,
        capacity_cpu_millis=cpu,
        capacity_memory_mib=memory,
    )


def smallest(instance_types: list[str] | tuple[str, ...]) -> Allocatable:
    """The least any node of these types offers, resource by resource: what a pool can promise."""
    found = [allocatable(t) for t in instance_types]
    return Allocatable(**{f.name: min(getattr(a, f.name) for a in found) for f in fields(Allocatable)})
