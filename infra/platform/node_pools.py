"""What every node of a GPU pool carries, and what the autoscaler is told about it: pure, one place."""

from __future__ import annotations

from collections.abc import Sequence

from infra.platform.allocatable import smallest
from infra.workloads.placement import GPU_RESOURCE, GpuPool, Placement

TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
# Cluster Autoscaler's GPU node label (aws_cloud_provider.go GPULabel; docs/platform.md says why).
# Any value works: it is only reported in metrics (T4G is not in its known list).
ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
ACCELERATOR = "nvidia-t4g"
# The NVIDIA device plugin's config-manager picks the named config in this node label
# (deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml, v0.19.3).
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# The plugin's default config: every pool without sharing (and any node without the label)
# runs it. A time-sliced pool's config takes the pool's name, so no pool may be called this.
WHOLE_GPUS = "whole-gpus"
# Our own discovery tag: EKS tags every managed group's ASG for discovery, the system group's too.
AUTOSCALED_TAG = "eks-gpu/autoscaled"
AUTOSCALED_VALUE = "true"
# What nodeadm's kubelet keeps of the root volume, and the XFS filesystem's overhead: sources in
# docs/platform.md, "Scale from zero".
KUBE_RESERVED_EPHEMERAL_GIB = 1
EVICTION_NODEFS_AVAILABLE = 0.10
FILESYSTEM_OVERHEAD = 0.01
# The system node group's label: the autoscaler runs there, and no pool or contract may reuse the key.
SYSTEM_LABEL = "node-role"
SYSTEM_LABELS = {SYSTEM_LABEL: "system"}


def contract_labels(placement: Placement, pool: GpuPool) -> dict[str, str]:
    """The labels every node of a pool carries, whoever provisions it: the contract's, the pool's, the plugin's."""
    result = placement.pool_labels(pool.name)
    if pool.shared:
        result[DEVICE_PLUGIN_CONFIG_LABEL] = pool.name  # untouched pools take the whole-GPU default
    return result


def labels(placement: Placement, pool: GpuPool) -> dict[str, str]:
    """The node labels of a node group's pool: the contract's, the pool's, the plugin's, the autoscaler's."""
    return {**contract_labels(placement, pool), ACCELERATOR_LABEL: ACCELERATOR}


def node_group_tags(pool: GpuPool) -> dict[str, str]:
    """Tags on the EKS node group itself: read by the autoscaler through DescribeNodegroup, and they win."""
    return {f"{TEMPLATE}/resources/{GPU_RESOURCE}": str(pool.slots_per_node)}


def ephemeral_storage(disk_size_gib: int) -> str:
    """Allocatable ``ephemeral-storage`` of a node whose root volume is ``disk_size_gib``: the
    filesystem less the kubelet's eviction threshold and reserve, rounded down to whole GiB."""
    filesystem = disk_size_gib * (1 - FILESYSTEM_OVERHEAD)
    return f"{int(filesystem * (1 - EVICTION_NODEFS_AVAILABLE) - KUBE_RESERVED_EPHEMERAL_GIB)}Gi"


def template_resources(instance_types: Sequence[str], disk_size_gib: int) -> dict[str, str]:
    """``node-template/resources/*`` tags: what a real node of the pool offers pods."""
    least = smallest(tuple(instance_types))
    return {
        f"{TEMPLATE}/resources/cpu": least.cpu,
        f"{TEMPLATE}/resources/memory": least.memory,
        f"{TEMPLATE}/resources/pods": str(least.pods),
        f"{TEMPLATE}/resources/ephemeral-storage": ephemeral_storage(disk_size_gib),
    }


def asg_tags(
    placement: Placement, pool: GpuPool, instance_types: Sequence[str], disk_size_gib: int
) -> dict[str, str]:
    """Tags we put on the pool's ASG: only ones EKS does not set itself."""
    taint = placement.node_taint()
    return {
        AUTOSCALED_TAG: AUTOSCALED_VALUE,
        **{f"{TEMPLATE}/label/{k}": v for k, v in labels(placement, pool).items()},
        f"{TEMPLATE}/taint/{taint['key']}": f"{taint['value']}:{taint['effect']}",
        **template_resources(instance_types, disk_size_gib),
        **node_group_tags(pool),
    }


def discovery_tags(cluster_name: str) -> list[str]:
    """``--node-group-auto-discovery`` tags: all must match, so only GPU pools are found."""
    return [
        "k8s.io/cluster-autoscaler/enabled",
        f"k8s.io/cluster-autoscaler/{cluster_name}",
        f"{AUTOSCALED_TAG}={AUTOSCALED_VALUE}",
    ]
