"""The controller's IAM, the interruption queue's policy and its rules, statement by statement against
our specification of Karpenter's getting-started CloudFormation template (below, as data): the code is
compared with what the template asks for, never with itself.

Where the specification was read (docs/decisions/0080): github.com/aws/karpenter-provider-aws,
website/content/en/preview/getting-started/getting-started-with-karpenter/cloudformation.yaml at
commit 1d927085dd81a9df9301e613f371dac5b4d16bfe (release v1.14.1). The pinned v1.15.0's module zip has
no website/ (its test/cloudformation/iam_cloudformation.yaml is the e2e test's IAM, not this template):
re-read the template at the pinned tag when the pin moves. Left out on purpose: ZonalShiftPolicy (the
chart's enableZonalShift stays off)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.platform.karpenter import EVENT_RULES, controller_policy, event_pattern, queue_policy

CLUSTER, REGION, ACCOUNT = "eks-gpu-platform-dev", "us-west-2", "123456789012"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:karpenter"
NODE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/karpenter-node"
ARGS = {
    "cluster_name": CLUSTER,
    "region": REGION,
    "account_id": ACCOUNT,
    "partition": "aws",
    "queue_arn": QUEUE,
    "node_role_arn": NODE_ROLE,
}


def _ec2(*kinds: str, account: str = "*") -> list[str]:
    return [f"arn:aws:ec2:{REGION}:{account}:{kind}/*" for kind in kinds]


PROFILES = f"arn:aws:iam::{ACCOUNT}:instance-profile/*"
OWNED = f"kubernetes.io/cluster/{CLUSTER}"
NODEPOOL_TAGGED = {"StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}
RESOURCE_OWNED = {"StringEquals": {f"aws:ResourceTag/{OWNED}": "owned"}, **NODEPOOL_TAGGED}
REQUEST_OWNED = {
    f"aws:RequestTag/{OWNED}": "owned",
    "aws:RequestTag/eks:eks-cluster-name": CLUSTER,
}
NEW_EC2 = _ec2(
    "fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request"
)
PROFILE_RESOURCE = {
    "aws:ResourceTag/kubernetes.io/cluster/" + CLUSTER: "owned",
    "aws:ResourceTag/topology.kubernetes.io/region": REGION,
}
PROFILE_REQUEST = {**REQUEST_OWNED, "aws:RequestTag/topology.kubernetes.io/region": REGION}
NODECLASS = "karpenter.k8s.aws/ec2nodeclass"
RUN = ["ec2:RunInstances", "ec2:CreateFleet"]

# Sid: (Action, Resource, Condition), every statement Allow: our reading of the template.
CONTROLLER: dict[str, tuple[Any, Any, dict[str, Any] | None]] = {
    # NodeLifecyclePolicy
    "AllowScopedEC2InstanceAccessActions": (
        RUN,
        [
            f"arn:aws:ec2:{REGION}::image/*",
            f"arn:aws:ec2:{REGION}::snapshot/*",
            *_ec2("security-group", "subnet", "capacity-reservation", "placement-group"),
        ],
        None,
    ),
    "AllowScopedEC2LaunchTemplateAccessActions": (RUN, _ec2("launch-template")[0], RESOURCE_OWNED),
    "AllowScopedEC2InstanceActionsWithTags": (
        [*RUN, "ec2:CreateLaunchTemplate"],
        NEW_EC2,
        {"StringEquals": REQUEST_OWNED, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
    ),
    "AllowScopedResourceCreationTagging": (
        "ec2:CreateTags",
        NEW_EC2,
        {
            "StringEquals": {
                **REQUEST_OWNED,
                "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
            },
            "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
        },
    ),
    "AllowScopedResourceTagging": (
        "ec2:CreateTags",
        _ec2("instance")[0],
        {
            **RESOURCE_OWNED,
            "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": CLUSTER},
            "ForAllValues:StringEquals": {
                "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
            },
        },
    ),
    "AllowScopedDeletion": (
        ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
        _ec2("instance", "launch-template"),
        RESOURCE_OWNED,
    ),
    # IAMIntegrationPolicy
    "AllowPassingInstanceRole": (
        "iam:PassRole",
        NODE_ROLE,
        {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
    ),
    "AllowScopedInstanceProfileCreationActions": (
        "iam:CreateInstanceProfile",
        PROFILES,
        {"StringEquals": PROFILE_REQUEST, "StringLike": {f"aws:RequestTag/{NODECLASS}": "*"}},
    ),
    "AllowScopedInstanceProfileTagActions": (
        "iam:TagInstanceProfile",
        PROFILES,
        {
            "StringEquals": {**PROFILE_RESOURCE, **PROFILE_REQUEST},
            "StringLike": {f"aws:ResourceTag/{NODECLASS}": "*", f"aws:RequestTag/{NODECLASS}": "*"},
        },
    ),
    "AllowScopedInstanceProfileActions": (
        ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
        PROFILES,
        {"StringEquals": PROFILE_RESOURCE, "StringLike": {f"aws:ResourceTag/{NODECLASS}": "*"}},
    ),
    # EKSIntegrationPolicy
    "AllowAPIServerEndpointDiscovery": (
        "eks:DescribeCluster",
        f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}",
        None,
    ),
    # InterruptionPolicy
    "AllowInterruptionQueueActions": (
        ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        QUEUE,
        None,
    ),
    # ResourceDiscoveryPolicy
    "AllowRegionalReadActions": (
        [
            f"ec2:Describe{what}"
            for what in (
                "CapacityReservations",
                "Images",
                "Instances",
                "InstanceStatus",
                "InstanceTypeOfferings",
                "InstanceTypes",
                "LaunchTemplates",
                "PlacementGroups",
                "SecurityGroups",
                "SpotPriceHistory",
                "Subnets",
            )
        ],
        "*",
        {"StringEquals": {"aws:RequestedRegion": REGION}},
    ),
    "AllowSSMReadActions": ("ssm:GetParameter", f"arn:aws:ssm:{REGION}::parameter/aws/service/*", None),
    "AllowPricingReadActions": ("pricing:GetProducts", "*", None),
    "AllowUnscopedInstanceProfileListAction": ("iam:ListInstanceProfiles", "*", None),
    "AllowInstanceProfileReadActions": ("iam:GetInstanceProfile", PROFILES, None),
}

# The queue's policy: EventBridge and SQS may send; anything over plain HTTP is denied.
QUEUE_POLICY = {
    "Id": "EC2InterruptionPolicy",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
            "Action": "sqs:SendMessage",
            "Resource": QUEUE,
        },
        {
            "Sid": "DenyHTTP",
            "Effect": "Deny",
            "Action": "sqs:*",
            "Resource": QUEUE,
            "Condition": {"Bool": {"aws:SecureTransport": False}},
            "Principal": "*",
        },
    ],
}

# The five rules feeding the queue: (source, detail-type).
RULES = {
    "ScheduledChangeRule": ("aws.health", "AWS Health Event"),
    "SpotInterruptionRule": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "RebalanceRule": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "InstanceStateChangeRule": ("aws.ec2", "EC2 Instance State-change Notification"),
    "CapacityReservationInterruptionRule": (
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
    ),
}


def _normal(value: Any) -> Any:
    """One-element lists as their element, booleans as IAM's strings: what IAM treats as the same."""
    if isinstance(value, list):
        return _normal(value[0]) if len(value) == 1 else sorted(json.dumps(_normal(v)) for v in value)
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, bool):
        return str(value).lower()
    return value


def _specified(sid: str) -> dict[str, Any]:
    action, resource, condition = CONTROLLER[sid]
    statement = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    return _normal(statement | ({"Condition": condition} if condition else {}))


def test_the_controller_policy_has_the_templates_statements_and_no_other() -> None:
    ours = {s["Sid"] for s in controller_policy(**ARGS)["Statement"]}
    assert sorted(ours) == sorted(CONTROLLER)


@pytest.mark.parametrize("sid", sorted(CONTROLLER))
def test_each_controller_statement_grants_what_the_template_does(sid: str) -> None:
    ours = {s["Sid"]: _normal(s) for s in controller_policy(**ARGS)["Statement"]}
    assert ours.get(sid) == _specified(sid)


def test_the_queue_policy_is_the_templates_with_deny_http() -> None:
    ours = queue_policy(QUEUE)
    assert ours["Id"] == QUEUE_POLICY["Id"]
    assert [_normal(s) for s in ours["Statement"]] == [_normal(s) for s in QUEUE_POLICY["Statement"]]


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_of_the_template_feeds_the_queue(rule: str) -> None:
    source, detail = RULES[rule]
    pattern = {"source": [source], "detail-type": [detail]}
    assert pattern in [event_pattern(s, d) for s, d in EVENT_RULES.values()], rule


def test_no_rule_beyond_the_templates() -> None:
    assert len(EVENT_RULES) == len(RULES) == 5
