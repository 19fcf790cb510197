"""Cluster Autoscaler: GPU nodes only while GPU pods need them, scale from zero included.

The GPU group's ASG carries the node-template tags (the contract's label and taint,
its GPU count) so the autoscaler can build the node a pending pod would get while
the group has no node to look at; ``node_template`` reads them back the way the
autoscaler does (cloudprovider/aws), for the scheduling check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from infra.platform.config import AutoscalerConfig
from infra.platform.instance_types import ARM_NVIDIA
from infra.workloads.placement import GPU_RESOURCE, Placement
from infra.workloads.scheduling import Node

CHART = "cluster-autoscaler"
REPOSITORY = "https://kubernetes.github.io/autoscaler"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
# The autoscaler's image must match the cluster's minor version (newest patch each).
IMAGE_TAGS = {"1.32": "v1.32.7", "1.33": "v1.33.6", "1.34": "v1.34.5", "1.35": "v1.35.2"}

POD_IDENTITY_TRUST_POLICY: dict[str, Any] = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ],
}


def iam_policy(cluster_name: str, region: str, account_id: str) -> dict[str, Any]:
    """The autoscaler's documented permissions, scoped to this cluster where AWS allows it."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Discover",  # Describe* calls take no resource-level scoping
                "Effect": "Allow",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                    "ec2:GetInstanceTypesFromInstanceRequirements",
                ],
                "Resource": "*",
            },
            {
                "Sid": "ReadNodeGroupLabelsAndTaints",  # for groups at zero nodes
                "Effect": "Allow",
                "Action": "eks:DescribeNodegroup",
                "Resource": f"arn:aws:eks:{region}:{account_id}:nodegroup/{cluster_name}/*/*",
            },
            {
                "Sid": "ScaleOnlyThisClustersGroups",
                "Effect": "Allow",
                "Action": [
                    "autoscaling:SetDesiredCapacity",
                    "autoscaling:TerminateInstanceInAutoScalingGroup",
                ],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"}
                },
            },
        ],
    }


def asg_tags(cluster_name: str, placement: Placement, instance_types: tuple[str, ...]) -> dict[str, str]:
    """Discovery and node-template tags for the GPU group's ASG (EKS does not copy labels or taints there)."""
    taint = placement.node_taint()
    return {
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{cluster_name}": "owned",
        f"{TEMPLATE}/label/{placement.key}": placement.value,
        f"{TEMPLATE}/taint/{taint['key']}": f"{taint['value']}:{taint['effect']}",
        # The fewest GPUs any of the group's types has: never promise more than a node brings.
        f"{TEMPLATE}/resources/{GPU_RESOURCE}": str(min(ARM_NVIDIA[t].gpus for t in instance_types)),
    }


def node_template(name: str, tags: Mapping[str, str], instance_type: str) -> Node:
    """The node the autoscaler imagines for a group at zero, built from its ASG tags."""
    labels = {
        k.removeprefix(f"{TEMPLATE}/label/"): v for k, v in tags.items() if k.startswith(f"{TEMPLATE}/label/")
    }
    taints = []
    for key, value in tags.items():
        if key.startswith(f"{TEMPLATE}/taint/"):
            taint_value, _, effect = value.rpartition(":")
            taints.append(
                {"key": key.removeprefix(f"{TEMPLATE}/taint/"), "value": taint_value, "effect": effect}
            )
    gpus = int(tags.get(f"{TEMPLATE}/resources/{GPU_RESOURCE}", ARM_NVIDIA[instance_type].gpus))
    node = Node.from_node_group(name, labels=labels, instance_type=instance_type, arch="arm64", gpus=gpus)
    return Node(name=node.name, labels=node.labels, taints=tuple(taints), allocatable=node.allocatable)


def helm_values(
    config: AutoscalerConfig, cluster_name: str, region: str, kubernetes_version: str
) -> dict[str, Any]:
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"tag": IMAGE_TAGS[kubernetes_version]},
        "fullnameOverride": "cluster-autoscaler",
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        # On the untainted system nodes, never on the GPU nodes it scales away.
        "nodeSelector": {"node-role": "system"},
        "extraArgs": {
            "expander": config.expander,
            "scale-down-unneeded-time": config.scale_down_unneeded_time,
            "balance-similar-node-groups": str(config.balance_similar_node_groups).lower(),
        },
    }


def autoscaler(
    name: str,
    config: AutoscalerConfig,
    *,
    cluster_name: str,
    region: str,
    kubernetes_version: str,
    placement: Placement,
    gpu_instance_types: tuple[str, ...],
    gpu_asg_name: pulumi.Output[str],
    opts: pulumi.ResourceOptions,
    k8s_opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    for key, value in asg_tags(cluster_name, placement, gpu_instance_types).items():
        aws.autoscaling.Tag(
            f"{name}-tag-{key.removeprefix('k8s.io/cluster-autoscaler/').replace('/', '-').replace('.', '-')}",
            autoscaling_group_name=gpu_asg_name,
            tag={"key": key, "value": value, "propagate_at_launch": False},
            opts=opts,
        )
    account = aws.get_caller_identity_output()
    role = aws.iam.Role(f"{name}-role", assume_role_policy=json.dumps(POD_IDENTITY_TRUST_POLICY), opts=opts)
    aws.iam.RolePolicy(
        f"{name}-policy",
        role=role.id,
        policy=account.account_id.apply(lambda a: json.dumps(iam_policy(cluster_name, region, a))),
        opts=opts,
    )
    aws.eks.PodIdentityAssociation(
        f"{name}-identity",
        cluster_name=cluster_name,
        namespace=NAMESPACE,
        service_account=SERVICE_ACCOUNT,
        role_arn=role.arn,
        opts=opts,
    )
    return k8s.helm.v3.Release(
        name,
        name=CHART,
        chart=CHART,
        version=config.chart_version,
        repository_opts={"repo": REPOSITORY},
        namespace=NAMESPACE,
        values=helm_values(config, cluster_name, region, kubernetes_version),
        atomic=True,
        cleanup_on_fail=True,
        timeout=600,
        opts=k8s_opts,
    )
