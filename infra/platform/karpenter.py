"""Karpenter for the pools whose provisioner is karpenter: the AWS side of its v1.15 getting-started template
(``cloudformation.yaml``) scoped to this cluster, the controller with Pod Identity, and each pool's
nodepool.py objects (docs/platform.md, "Karpenter pools"; why and when: decision 0080). Its nodes get their
own role and access entry: EKS already made one for the node groups' role.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
from pydantic.alias_generators import to_camel

from infra.platform import iam, nodepool
from infra.platform.addons import custom_resource, helm_release
from infra.platform.config import PlatformConfig, Pool
from infra.platform.iam import node_role
from infra.platform.network import Network
from infra.platform.node_group import METADATA_OPTIONS, ROOT_DEVICE, ROOT_VOLUME
from infra.platform.node_pools import SYSTEM_LABELS
from infra.platform.spot_role import spot_role

REPOSITORY = "oci://public.ecr.aws/karpenter"
CHART, CRD_CHART = "karpenter", "karpenter-crd"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "karpenter"
# What the interruption queue hears (getting-started cloudformation.yaml, its five rules): (source, detail-type).
EVENT_RULES = {
    "scheduled-change": ("aws.health", "AWS Health Event"),
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "capacity-reservation": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}
QUEUE_RETENTION_SECONDS = 300  # interruption notices are worthless after five minutes


def _ec2(partition: str, region: str, *kinds: str, account: str = "*") -> list[str]:
    return [f"arn:{partition}:ec2:{region}:{account}:{kind}/*" for kind in kinds]


# What Karpenter launches and tags (pkg/utils/utils.go GetTags), in the order the template lists them.
LAUNCHED = ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
# Read-only calls its controllers make whatever the settings (the template's ResourceDiscoveryPolicy).
REGIONAL_READS = (
    "ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances",
    "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets",
)  # fmt: skip


def controller_policy(
    *, cluster_name: str, region: str, account_id: str, partition: str, queue_arn: str, node_role_arn: str
) -> dict[str, Any]:
    """The controller's permissions, statement for statement those of Karpenter v1.15's getting-started
    template (its policies but ZonalShift: enableZonalShift is off): launches, tags and deletes only
    what carries this cluster's ownership tag and a NodePool tag; passes only the Karpenter node role.
    Tag keys as v1.15 sets them (pkg/apis/v1/ec2nodeclass.go InstanceProfileTags, nodeclaim/tagging)."""
    cluster_tag = f"kubernetes.io/cluster/{cluster_name}"
    owned = {f"aws:RequestTag/{cluster_tag}": "owned", "aws:RequestTag/eks:eks-cluster-name": cluster_name}
    owned_now = {f"aws:ResourceTag/{cluster_tag}": "owned"}
    nodepool_tag = {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    nodepool_now = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    region_tag = {"aws:RequestTag/topology.kubernetes.io/region": region}
    region_now = {"aws:ResourceTag/topology.kubernetes.io/region": region}
    nodeclass_tag = {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    nodeclass_now = {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    profiles = f"arn:{partition}:iam::{account_id}:instance-profile/*"
    launched = _ec2(partition, region, *LAUNCHED)
    statements = [
        ("AllowScopedEC2InstanceAccessActions", ["ec2:RunInstances", "ec2:CreateFleet"],
         [f"arn:{partition}:ec2:{region}::image/*", f"arn:{partition}:ec2:{region}::snapshot/*",
          *_ec2(partition, region, "security-group", "subnet", "capacity-reservation", "placement-group")], None),
        ("AllowScopedEC2LaunchTemplateAccessActions", ["ec2:RunInstances", "ec2:CreateFleet"],
         _ec2(partition, region, "launch-template")[0], {"StringEquals": owned_now, "StringLike": nodepool_now}),
        ("AllowScopedEC2InstanceActionsWithTags", ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
         launched, {"StringEquals": owned, "StringLike": nodepool_tag}),
        ("AllowScopedResourceCreationTagging", "ec2:CreateTags", launched,
         {"StringEquals": {**owned, "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
          "StringLike": nodepool_tag}),
        ("AllowScopedResourceTagging", "ec2:CreateTags", _ec2(partition, region, "instance")[0],
         {"StringEquals": owned_now, "StringLike": nodepool_now,
          "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
          "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]}}),
        ("AllowScopedDeletion", ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
         _ec2(partition, region, "instance", "launch-template"), {"StringEquals": owned_now, "StringLike": nodepool_now}),
        ("AllowPassingInstanceRole", "iam:PassRole", node_role_arn,
         {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}}),
        ("AllowScopedInstanceProfileCreationActions", "iam:CreateInstanceProfile", profiles,
         {"StringEquals": {**owned, **region_tag}, "StringLike": nodeclass_tag}),
        ("AllowScopedInstanceProfileTagActions", "iam:TagInstanceProfile", profiles,
         {"StringEquals": {**owned_now, **region_now, **owned, **region_tag},
          "StringLike": {**nodeclass_now, **nodeclass_tag}}),
        ("AllowScopedInstanceProfileActions",
         ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"], profiles,
         {"StringEquals": {**owned_now, **region_now}, "StringLike": nodeclass_now}),
        ("AllowAPIServerEndpointDiscovery", "eks:DescribeCluster",
         f"arn:{partition}:eks:{region}:{account_id}:cluster/{cluster_name}", None),
        ("AllowInterruptionQueueActions",
         ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], queue_arn, None),
        ("AllowRegionalReadActions", list(REGIONAL_READS), "*", {"StringEquals": {"aws:RequestedRegion": region}}),
        ("AllowSSMReadActions", "ssm:GetParameter", f"arn:{partition}:ssm:{region}::parameter/aws/service/*", None),
        ("AllowPricingReadActions", "pricing:GetProducts", "*", None),
        ("AllowUnscopedInstanceProfileListAction", "iam:ListInstanceProfiles", "*", None),
        ("AllowInstanceProfileReadActions", "iam:GetInstanceProfile", profiles, None),
    ]  # fmt: skip
    return iam.policy_document(statements)


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """Only EventBridge (and SQS itself) may send to the interruption queue, and nobody over plain HTTP
    (the template's DenyHTTP statement)."""
    principal = {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]}
    statement = {
        "Effect": "Allow",
        "Principal": principal,
        "Action": "sqs:SendMessage",
        "Resource": queue_arn,
    }
    deny_http = {
        "Sid": "DenyHTTP",
        "Effect": "Deny",
        "Action": "sqs:*",
        "Resource": queue_arn,
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        "Principal": "*",
    }
    return {"Version": "2012-10-17", "Id": "EC2InterruptionPolicy", "Statement": [statement, deny_http]}


def event_pattern(source: str, detail_type: str) -> dict[str, list[str]]:
    return {"source": [source], "detail-type": [detail_type]}


def helm_values(config: PlatformConfig, queue_name: pulumi.Input[str]) -> dict[str, Any]:
    """The controller on the system nodes, told its cluster and queue; NodeOverlay on for time-sliced pools."""
    pools = config.karpenter_pools
    return {
        "serviceAccount": {"name": SERVICE_ACCOUNT},
        "nodeSelector": dict(SYSTEM_LABELS),  # merged with the chart's kubernetes.io/os: linux
        "settings": {
            "clusterName": config.cluster_name,
            "interruptionQueue": queue_name,
            "featureGates": {
                "nodeOverlay": any(p.contract.shared for p in pools),
                "nodeRepair": all(p.settings.node_repair for p in pools),
            },
        },
    }


def pool_manifests(
    config: PlatformConfig, pool: Pool, node_role_name: pulumi.Input[str]
) -> list[dict[str, Any]]:
    """A Karpenter pool's objects: its EC2NodeClass, NodePool and (time-sliced) NodeOverlay."""
    settings, karpenter = pool.settings, pool.settings.karpenter_settings
    # The node groups' IMDS and root volume, camelCase, the launch template's "true" and "false" as booleans.
    metadata = {to_camel(key): value for key, value in METADATA_OPTIONS.items()}
    ebs = {to_camel(k): v == "true" if v in ("true", "false") else v for k, v in ROOT_VOLUME.items()}
    node_class = nodepool.ec2_node_class(
        pool.name,
        role=node_role_name,
        cluster_name=config.cluster_name,
        disk_gib=settings.disk_size_gib,
        metadata=metadata,
        root={"deviceName": ROOT_DEVICE, "ebs": ebs},
        ami_alias=karpenter.ami_alias,
    )
    pool_object = nodepool.nodepool(
        config.contract,
        pool.contract,
        instance_types=list(settings.instance_types),
        capacity_types=list(settings.capacity_types),
        gpu_limit=pool.reach,
        disruption={
            "consolidationPolicy": karpenter.consolidation_policy,
            "consolidateAfter": karpenter.consolidate_after,
            "budgets": [{"nodes": karpenter.disruption_budget}],
        },
    )
    overlay = nodepool.node_overlay(pool.contract)
    return [node_class, pool_object, *([overlay] if overlay else [])]


def _tag_subnets(
    name: str, net: Network, count: int, cluster_name: str, opts: pulumi.ResourceOptions
) -> None:
    """An existing VPC's ``count`` private subnets get the tag by which Karpenter finds them (a new VPC's
    carry it from the start: none)."""
    for index in range(count):
        aws.ec2.Tag(
            f"{name}-subnet-{index}",
            resource_id=pulumi.Output.from_input(net.private_subnet_ids).apply(lambda ids, i=index: ids[i]),
            key=nodepool.DISCOVERY_TAG,
            value=cluster_name,
            opts=opts,
        )


def _interruption_queue(name: str, opts: pulumi.ResourceOptions) -> aws.sqs.Queue:
    """The queue Karpenter reads spot interruptions, rebalances, health and state changes from."""
    queue = aws.sqs.Queue(
        f"{name}-interruptions",
        message_retention_seconds=QUEUE_RETENTION_SECONDS,
        sqs_managed_sse_enabled=True,
        opts=opts,
    )
    aws.sqs.QueuePolicy(
        f"{name}-interruptions",
        queue_url=queue.url,
        policy=queue.arn.apply(lambda arn: json.dumps(queue_policy(arn))),
        opts=opts,
    )
    for rule_name, (source, detail_type) in EVENT_RULES.items():
        rule = aws.cloudwatch.EventRule(
            f"{name}-{rule_name}", event_pattern=json.dumps(event_pattern(source, detail_type)), opts=opts
        )
        aws.cloudwatch.EventTarget(f"{name}-{rule_name}", rule=rule.name, arn=queue.arn, opts=opts)
    return queue


def karpenter(
    name: str,
    config: PlatformConfig,
    net: Network,
    *,
    pod_identity_agent: pulumi.Resource,
    opts: pulumi.ResourceOptions,
    k8s_opts: pulumi.ResourceOptions,
) -> Sequence[pulumi.Resource]:
    """Everything Karpenter needs, then one NodePool (with its node class) per Karpenter pool."""
    cluster_name, region = config.cluster_name, config.region
    role, attachments = node_role(f"{name}-node", opts)
    access = aws.eks.AccessEntry(
        f"{name}-node-access", cluster_name=cluster_name, principal_arn=role.arn, type="EC2_LINUX", opts=opts
    )
    _tag_subnets(name, net, len(config.network.private_subnet_ids), cluster_name, opts)
    queue = _interruption_queue(name, opts)
    document = pulumi.Output.all(
        account_id=iam.account_id(opts),
        partition=iam.partition(opts),
        queue_arn=queue.arn,
        node_role_arn=role.arn,
    ).apply(lambda a: json.dumps(controller_policy(cluster_name=cluster_name, region=region, **a)))
    identity = iam.pod_identity(
        name,
        (f"{name}-controller", f"{name}-controller"),
        document,
        (cluster_name, NAMESPACE, SERVICE_ACCOUNT),
        opts,
    )
    spot = spot_role(f"{name}-spot", config.karpenter_pools, config.create_spot_service_linked_role, opts)
    # The CRD chart keeps the CRDs current on upgrades (Helm never upgrades a chart's crds/ folder).
    pinned = {"version": nodepool.VERSION, "namespace": NAMESPACE}
    crds = helm_release(f"{name}-crd", CRD_CHART, REPOSITORY, values={}, opts=k8s_opts, **pinned)
    after = pulumi.ResourceOptions(
        depends_on=[crds, *identity, pod_identity_agent, access, *attachments, *spot]
    )
    release = helm_release(
        name,
        CHART,
        REPOSITORY,
        values=helm_values(config, queue.name),  # only the queue name waits for AWS
        opts=pulumi.ResourceOptions.merge(k8s_opts, after),
        skip_crds=True,
        **pinned,
    )
    on_release = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[crds, release]))
    return [
        custom_resource(f"{manifest['kind'].lower()}-{manifest['metadata']['name']}", manifest, on_release)
        for pool in config.karpenter_pools
        for manifest in pool_manifests(config, pool, role.name)
    ]
