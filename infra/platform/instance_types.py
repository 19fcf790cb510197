"""The EC2 instance types the node groups may use, with the facts the platform needs about them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstanceType:
    name: str
    vcpus: int
    memory_gib: int
    gpus: int
    usd_per_hour: float | None = None
    """us-east-1 on-demand, where the cited price list gave one."""


def _by_name(*types: InstanceType) -> dict[str, InstanceType]:
    return {t.name: t for t in types}


# Arm (Graviton2) + NVIDIA T4G: the only Arm GPU family the AL2023_ARM_64_NVIDIA AMI
# runs on that can be bought on demand. p6e-gb200 (Grace + Blackwell) is left out:
# it is sold only as UltraServers through Capacity Blocks and needs DRA, not the
# device plugin.
ARM_NVIDIA = _by_name(
    InstanceType("g5g.xlarge", 4, 8, 1, 0.420),
    InstanceType("g5g.2xlarge", 8, 16, 1, 0.556),
    InstanceType("g5g.4xlarge", 16, 32, 1, 0.828),
    InstanceType("g5g.8xlarge", 32, 64, 1, 1.372),
    InstanceType("g5g.16xlarge", 64, 128, 2, 2.744),
    InstanceType("g5g.metal", 64, 128, 2, 2.744),
)

# x86 NVIDIA types the Arm AMI cannot run: never in a pool (config refuses them), but AWS sells them,
# some cheaper than a pool's types, so a provisioner not held to arm64 would pick them. The tests
# offer them to Karpenter (localcluster/karpenter.py) to show that the NodePools' requirements hold.
X86_NVIDIA = _by_name(
    InstanceType("g4dn.xlarge", 4, 16, 1, 0.526),
    InstanceType("g6.xlarge", 4, 16, 1, 0.8048),
    InstanceType("g5.xlarge", 4, 16, 1, 1.006),
)

# Graviton general-purpose types for the untainted system node group (CoreDNS,
# the autoscaler, controllers): small, cheap, Arm like the GPU nodes.
ARM_SYSTEM = _by_name(
    InstanceType("t4g.medium", 2, 4, 0, 0.0336),
    InstanceType("t4g.large", 2, 8, 0),
    InstanceType("t4g.xlarge", 4, 16, 0),
    InstanceType("m7g.large", 2, 8, 0, 0.0816),
    InstanceType("m7g.xlarge", 4, 16, 0),
    InstanceType("m8g.large", 2, 8, 0),
    InstanceType("c7g.large", 2, 4, 0),
)

PRICES_SOURCE = "AWS Pricing API, us-east-1, Linux on-demand, as of 2026-07-20"
