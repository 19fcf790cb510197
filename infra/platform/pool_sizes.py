"""The desired size each GPU pool's node group is given on every run: never below what AWS runs now."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import pulumi
import pulumi_aws as aws

from infra.platform.config import ConfigError, GpuPoolConfig, PlatformConfig

# terraform-plugin-sdk's PrefixedUniqueId suffix after a node group's name prefix:
# 18 timestamp digits and an 8-hex-digit counter (helper/id/id.go).
UNIQUE_SUFFIX = "[0-9]{18}[0-9a-f]{8}"

# Every EKS NodegroupStatus (botocore data/eks/2017-11-01/service-2.json) -> whether a group in it
# runs nodes whose desired size must be kept; tests fail when botocore adds a status not listed here.
RUNS_NODES = {
    "ACTIVE": True,
    "UPDATING": True,  # a config or version update on a running group: its nodes keep running
    "DEGRADED": True,  # running, with health issues (DescribeNodegroup health): its nodes still run pods
    "CREATING": True,  # its ASG is coming up at this desired size (an interrupted replacement, say)
    "DELETING": False,  # its nodes are being drained and terminated: it sizes nothing any more
    "CREATE_FAILED": False,  # never ran (or no longer runs) the nodes it was asked for
    "DELETE_FAILED": False,  # removal was asked for and is stuck; the pool's live group is another one
}


def node_group_name_prefix(pool: str) -> str:
    return f"gpu-{pool}-"


def owns(pool: str, node_group_name: str) -> bool:
    """Whether the node group is this pool's (``gpu-a-`` must not claim ``gpu-a-b-...``)."""
    return re.fullmatch(node_group_name_prefix(re.escape(pool)) + UNIQUE_SUFFIX, node_group_name) is not None


def live_desired_sizes(cluster_name: str, pools: Iterable[str]) -> dict[str, tuple[str, int]]:
    """Each pool's node group and its desired size as EKS reports them now; pools without one are absent."""
    if cluster_name not in (aws.eks.get_clusters().names or []):
        return {}
    groups = aws.eks.get_node_groups(cluster_name=cluster_name).names or []
    sizes: dict[str, tuple[str, int]] = {}
    for pool in pools:
        found = []
        for name in sorted(g for g in groups if owns(pool, g)):
            group = aws.eks.get_node_group(cluster_name=cluster_name, node_group_name=name)
            if RUNS_NODES.get(group.status, True):
                scaling = group.scaling_configs
                found.append((int(scaling[0].desired_size) if scaling else 0, name))
        if found:
            size, group = max(found)
            sizes[pool] = (group, size)
    return sizes


def desired_size(name: str, pool: GpuPoolConfig, live: int | None, autoscaled: bool) -> int:
    """The desired size to send for pool ``name`` given its ``live`` one (None: no node group yet)."""
    if live is None:
        return pool.initial_size
    if live > pool.max_size:
        raise ConfigError(
            f"gpuPools.{name}.maxSize {pool.max_size} is below the {live} nodes the pool runs now: allowed: "
            f"{live} or more. EKS refuses a maximum below the desired size, and lowering both would terminate "
            "nodes that may run pods. Shrink the pool first (the autoscaler removes idle nodes; or drain "
            "nodes and run `aws eks update-nodegroup-config --scaling-config desiredSize=<n>`), then lower maxSize"
        )
    floor = pool.desired_size if not autoscaled and pool.desired_size is not None else pool.min_size
    return max(live, floor)


def desired_sizes(
    config: PlatformConfig, live: Mapping[str, tuple[str, int]] | None = None
) -> dict[str, int]:
    """Every pool's desired size; reads the live ones unless given. Raises ConfigError (see desired_size)."""
    if live is None:
        live = live_desired_sizes(config.cluster_name, config.gpu_pools)
    autoscaled = config.autoscaler.enabled
    sizes = {}
    for name, pool in config.gpu_pools.items():
        group, size = live.get(name, ("", None))
        sizes[name] = desired_size(name, pool, size, autoscaled)
        if not autoscaled and size is not None and pool.desired_size is not None and pool.desired_size < size:
            pulumi.log.warn(
                f"gpuPools.{name}.desiredSize {pool.desired_size} is below the {size} nodes node group {group} "
                "runs now: they are kept (a resize never removes nodes that may run pods); drain the extra "
                "nodes, then scale in with `aws eks update-nodegroup-config`"
            )
    return sizes
