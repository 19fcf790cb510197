"""IAM for the nodes: the trust policy and the only managed policies a node needs."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

EC2_TRUST_POLICY: dict[str, Any] = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}

# Roles that pods assume through EKS Pod Identity (the autoscaler, the CloudWatch agent):
# the agent's service principal, with TagSession for the session tags it sets.
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

# What a managed node needs: join the cluster, pull images (pull-only, not the
# broader ReadOnly), and run the VPC CNI. Pods get their own AWS access through
# EKS Pod Identity, never through this role (IMDS hop limit 1 keeps them off it).
NODE_MANAGED_POLICIES: tuple[str, ...] = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    # Exception: the VPC CNI (aws-node) runs with the node's credentials unless it is
    # given its own Pod Identity role; pulumi-eks installs it that way.
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
)


def node_role(
    name: str, opts: pulumi.ResourceOptions
) -> tuple[aws.iam.Role, tuple[aws.iam.RolePolicyAttachment, ...]]:
    """One role for both node groups (both need exactly the same permissions), and its policy attachments.

    Node groups must depend on the attachments, not only on the role: created
    after them, deleted before them, or EKS cannot clean up the group's EC2
    instances and network interfaces (terraform-provider-aws, docs of
    ``aws_eks_node_group``).
    """
    role = aws.iam.Role(name, assume_role_policy=json.dumps(EC2_TRUST_POLICY), opts=opts)
    attachments = tuple(
        aws.iam.RolePolicyAttachment(
            f"{name}-{policy.rsplit('/', 1)[1]}",
            role=role.name,
            policy_arn=policy,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=role)),
        )
        for policy in NODE_MANAGED_POLICIES
    )
    return role, attachments
