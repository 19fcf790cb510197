"""Cluster Autoscaler: GPU nodes only while GPU pods need them, scale from zero included."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from infra.platform import iam
from infra.platform.addons import helm_release
from infra.platform.config import PlatformConfig, Pool
from infra.platform.instance_types import ARM_NVIDIA
from infra.platform.node_pools import (
    AUTOSCALED_TAG,
    AUTOSCALED_VALUE,
    SYSTEM_LABELS,
    TEMPLATE,
    asg_tags,
    discovery_tags,
)
from infra.platform.pool_sizes import UNIQUE_SUFFIX, node_group_name_prefix

CHART = "cluster-autoscaler"
REPOSITORY = "https://kubernetes.github.io/autoscaler"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
# The autoscaler's image must match the cluster's minor version: the newest patch of each (tags
# cluster-autoscaler-1.35.2 and -1.36.1); what the tests' 1.33.0 leaves untested: docs/decisions/0075.
IMAGE_TAGS = {"1.35": "v1.35.2", "1.36": "v1.36.1"}
# Priorities per price rank, plus a bonus for spot inside a rank (docs/platform.md, decision 0002).
TIER_STEP, SPOT_BONUS = 10, 5


def iam_policy(cluster_name: str, region: str, account_id: str, partition: str) -> dict[str, Any]:
    """The autoscaler's documented permissions, scoped to this cluster where AWS allows it."""
    scaled = {
        f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned",
        f"aws:ResourceTag/{AUTOSCALED_TAG}": AUTOSCALED_VALUE,
    }
    discover = [  # Describe* calls take no resource-level scoping
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLaunchConfigurations",
        "autoscaling:DescribeScalingActivities",
        "ec2:DescribeImages",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:GetInstanceTypesFromInstanceRequirements",
    ]
    nodegroups = f"arn:{partition}:eks:{region}:{account_id}:nodegroup/{cluster_name}/*/*"
    scale = ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    return iam.policy_document(
        [
            ("Discover", discover, "*", None),
            ("ReadNodeGroupLabelsAndTaints", "eks:DescribeNodegroup", nodegroups, None),  # groups at zero
            ("ScaleOnlyThisClustersGpuPools", scale, "*", {"StringEquals": scaled}),
        ]
    )


def asg_name_pattern(pool: str) -> str:
    """The ASG of a pool's node group: eks-<node group>-<uuid>, the node group its name prefix plus
    terraform-plugin-sdk's PrefixedUniqueId suffix."""
    return f"^eks-{node_group_name_prefix(re.escape(pool))}{UNIQUE_SUFFIX}-"


def rank(pool: Pool) -> tuple[float, int]:
    """What ranks a pool for a pod that names none: the most one of its nodes costs (the dearest listed
    type's on-demand rate), then the pods a node takes (more first). Equal ranks are interchangeable."""
    return (
        max(ARM_NVIDIA[t].usd_per_hour or 0.0 for t in pool.settings.instance_types),
        -pool.contract.slots_per_node,
    )


def expander_priorities(pools: Sequence[Pool]) -> dict[str, list[str]]:
    """The cheapest node that fits a pod first; spot before on-demand only among interchangeable pools."""
    ranks = sorted({rank(p) for p in pools}, reverse=True)  # dearest first: lowest priority
    priorities: dict[str, list[str]] = {}
    for pool in sorted(pools, key=lambda p: p.name):
        spot = SPOT_BONUS if pool.contract.capacity_type == "SPOT" else 0
        priorities.setdefault(str((ranks.index(rank(pool)) + 1) * TIER_STEP + spot), []).append(
            asg_name_pattern(pool.name)
        )
    return dict(sorted(priorities.items(), key=lambda item: -int(item[0])))


def helm_values(platform: PlatformConfig) -> dict[str, Any]:
    """The chart's values: discover the GPU pools, run on the system nodes, rank the pools."""
    config, cluster_name = platform.autoscaler, platform.cluster_name
    priorities = expander_priorities(platform.node_group_pools)  # never a Karpenter pool
    ranked = len(priorities) > 1
    # The priority expander in front when pools rank apart, and its ConfigMap whenever the chain has it
    # (without one it silently passes every option on): docs/platform.md, "Which pool scales up".
    expander = f"priority,{config.expander}" if ranked and config.expander != "priority" else config.expander
    with_priorities = "priority" in expander.split(",")
    return {
        "cloudProvider": "aws",
        "awsRegion": platform.region,
        "autoDiscovery": {"clusterName": cluster_name, "tags": discovery_tags(cluster_name)},
        "image": {"tag": IMAGE_TAGS[platform.kubernetes_version]},
        "fullnameOverride": "cluster-autoscaler",
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        # On the untainted system nodes, never on the GPU nodes it scales away.
        "nodeSelector": dict(SYSTEM_LABELS),
        "extraArgs": {
            "expander": expander,
            "scale-down-unneeded-time": config.scale_down_unneeded_time,
            "balance-similar-node-groups": str(config.balance_similar_node_groups).lower(),
        },
        **({"expanderPriorities": priorities} if with_priorities else {}),
    }


def autoscaler(
    name: str,
    config: PlatformConfig,
    pools: Sequence[tuple[Pool, aws.eks.NodeGroup]],
    *,
    pod_identity_agent: pulumi.Resource,
    opts: pulumi.ResourceOptions,
    k8s_opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    """The autoscaler for the GPU pools, each given with its node group (whose ASG gets the tags)."""
    cluster_name, region = config.cluster_name, config.region
    for pool, group in pools:
        asg_name = group.resources.apply(lambda r: r[0].autoscaling_groups[0].name)
        for key, value in asg_tags(
            config.contract, pool.contract, pool.settings.instance_types, pool.settings.disk_size_gib
        ).items():
            short = key.removeprefix(f"{TEMPLATE}/").replace("/", "-").replace(".", "-")
            aws.autoscaling.Tag(
                f"{name}-{pool.name}-{short}",
                autoscaling_group_name=asg_name,
                tag={"key": key, "value": value, "propagate_at_launch": False},
                opts=opts,
            )
    document = pulumi.Output.all(iam.account_id(opts), iam.partition(opts)).apply(
        lambda a: json.dumps(iam_policy(cluster_name, region, a[0], a[1]))
    )
    identity = iam.pod_identity(
        name, (f"{name}-role", f"{name}-policy"), document, (cluster_name, NAMESPACE, SERVICE_ACCOUNT), opts
    )
    after = pulumi.ResourceOptions(depends_on=[*identity, pod_identity_agent])
    return helm_release(
        name,
        CHART,
        REPOSITORY,
        version=config.autoscaler.chart_version,
        namespace=NAMESPACE,
        values=helm_values(config),
        opts=pulumi.ResourceOptions.merge(k8s_opts, after),
    )
