"""IAM for the nodes: the trust policy and the only managed policies a node needs."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws


def trust_policy(service: str, action: str | list[str]) -> dict[str, Any]:
    """A role's trust policy: AWS ``service`` may assume it (``action``, as the policy writes it)."""
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}
    return {"Version": "2012-10-17", "Statement": [statement]}


EC2_TRUST_POLICY = trust_policy("ec2.amazonaws.com", "sts:AssumeRole")
# Roles that pods assume through EKS Pod Identity (the autoscaler, the CloudWatch agent):
# the agent's service principal, with TagSession for the session tags it sets.
POD_IDENTITY_TRUST_POLICY = trust_policy("pods.eks.amazonaws.com", ["sts:AssumeRole", "sts:TagSession"])

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


def policy_document(statements: list[tuple[str, Any, Any, Any]]) -> dict[str, Any]:
    """An IAM policy of Allow statements, each (Sid, Action, Resource, Condition or None)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": sid,
                "Effect": "Allow",
                "Action": action,
                "Resource": resource,
                **({"Condition": c} if c else {}),
            }
            for sid, action, resource, c in statements
        ],
    }


def partition(opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    """The deploying account's partition (``aws``, ``aws-us-gov``, ``aws-cn``): every ARN names it."""
    return aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=opts.parent)).partition


def in_partition(arn: str, partition: pulumi.Input[str]) -> pulumi.Output[str]:
    """An AWS-owned ARN (written here in the ``aws`` partition) in the account's ``partition``: in
    GovCloud or China ``arn:aws:iam::aws:policy/...`` does not exist and the attachment fails."""
    rest = arn.split(":", 2)[2]
    return pulumi.Output.from_input(partition).apply(lambda p: f"arn:{p}:{rest}")


def node_role(
    name: str, opts: pulumi.ResourceOptions
) -> tuple[aws.iam.Role, tuple[aws.iam.RolePolicyAttachment, ...]]:
    """One role for both node groups (both need exactly the same permissions), and its policy attachments."""
    role = aws.iam.Role(name, assume_role_policy=json.dumps(EC2_TRUST_POLICY), opts=opts)
    account_partition = partition(opts)
    attachments = tuple(
        aws.iam.RolePolicyAttachment(
            f"{name}-{policy.rsplit('/', 1)[1]}",
            role=role.name,
            policy_arn=in_partition(policy, account_partition),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=role)),
        )
        for policy in NODE_MANAGED_POLICIES
    )
    return role, attachments


def account_id(opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    """The deploying account's ID, which a controller's policy names in its ARNs."""
    return aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=opts.parent)).account_id


def pod_identity(
    name: str,
    role_and_policy: tuple[str, str],
    document: pulumi.Input[str],
    service_account: tuple[str, str, str],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """A role (with the inline policy ``document``) that the pods of ``service_account`` (cluster,
    namespace, name) assume through EKS Pod Identity: what a release using it must wait for."""
    role = aws.iam.Role(
        role_and_policy[0], assume_role_policy=json.dumps(POD_IDENTITY_TRUST_POLICY), opts=opts
    )
    inline = aws.iam.RolePolicy(role_and_policy[1], role=role.id, policy=document, opts=opts)
    cluster_name, namespace, account = service_account
    association = aws.eks.PodIdentityAssociation(
        f"{name}-identity",
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=account,
        role_arn=role.arn,
        opts=opts,
    )
    return [association, inline]
