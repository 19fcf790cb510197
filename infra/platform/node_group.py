"""An EKS managed node group with its own launch template: IMDSv2, encrypted gp3 root volume."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from infra.platform.config import NodeGroupConfig

# IMDSv2 only, with hop limit 1: containers cannot reach IMDS, so not the node role's credentials.
METADATA_OPTIONS = {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 1}
ROOT_DEVICE = "/dev/xvda"  # the AL2023 EKS AMIs' root device
ROOT_VOLUME = {"volume_type": "gp3", "encrypted": "true", "delete_on_termination": "true"}


def managed_node_group(
    name: str,
    *,
    cluster_name: pulumi.Input[str],
    node_group_name_prefix: str,
    node_role_arn: pulumi.Input[str],
    subnet_ids: pulumi.Input[Sequence[str]],
    kubernetes_version: str,
    ami_type: str,
    group: NodeGroupConfig,
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, str]] = (),
    tags: Mapping[str, str] | None = None,
    node_repair: bool | None = None,
    opts: pulumi.ResourceOptions,
    desired_size: int | None = None,
    kept: bool = False,
) -> aws.eks.NodeGroup:
    """A managed node group of ``desired_size`` nodes (default: the group's initial size). ``kept``
    (``keepNodeGroup``): it and its launch template keep every input from state (``ignore_changes``
    ``*``), so the migration's edits replace nothing (docs/platform.md, "Moving a pool")."""
    if kept:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["*"]))
    template = aws.ec2.LaunchTemplate(
        f"{name}-lt",
        update_default_version=True,
        metadata_options=METADATA_OPTIONS,
        block_device_mappings=[
            {"device_name": ROOT_DEVICE, "ebs": {**ROOT_VOLUME, "volume_size": group.disk_size_gib}}
        ],
        opts=opts,
    )
    return aws.eks.NodeGroup(
        name,
        cluster_name=cluster_name,
        # A prefix, not a fixed name: a change that replaces the group (instance types,
        # capacity type) creates the new group before deleting the old one.
        node_group_name_prefix=node_group_name_prefix,
        node_role_arn=node_role_arn,
        subnet_ids=subnet_ids,  # private subnets: nodes get no public IPs
        version=kubernetes_version,
        ami_type=ami_type,
        instance_types=list(group.instance_types),
        capacity_type=group.capacity_type,
        scaling_config={
            "min_size": group.min_size,
            "desired_size": group.initial_size if desired_size is None else desired_size,
            "max_size": group.max_size,
        },
        update_config={"max_unavailable": 1},
        labels=dict(labels),
        taints=[dict(t) for t in taints],
        launch_template={"id": template.id, "version": template.latest_version.apply(str)},
        tags=dict(tags) if tags else None,
        # EKS node auto-repair: replace (or reboot) a node whose health conditions fail.
        node_repair_config=None if node_repair is None else {"enabled": node_repair},
        opts=opts,
    )
