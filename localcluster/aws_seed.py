"""moto's AWS, seeded from what the platform program registers (the offline engine's record).

Per ``aws.eks.NodeGroup``, what EKS makes of it: the node group (labels, taints, tags, scaling,
capacity type) and its Auto Scaling group ``eks-<node group>-<uuid>``, launching from a copy of
the group's launch template with the group's instance types as mixed-instances overrides and
tagged as EKS tags every managed group's ASG (``eks:cluster-name``, ``eks:nodegroup-name``,
``k8s.io/cluster-autoscaler/enabled``, ``k8s.io/cluster-autoscaler/<cluster>``: owned), plus
the ``aws.autoscaling.Tag`` resources the program declares for it. moto's CreateNodegroup makes
no ASG, so both are created here. Node group names carry terraform-plugin-sdk's unique suffix
after the declared prefix, as the AWS provider names them.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Any

from infra.tooling.offline import Registration, Run
from localcluster.nodes import NODE_GROUP, launch_template

ASG_TAG = "aws:autoscaling/tag:Tag"
ZONES = ("a", "b", "c")
ACCOUNT = "123456789012"  # moto's default account


@dataclass(frozen=True)
class SeededGroup:
    """One node group as moto now holds it."""

    registration: str
    """The Pulumi resource name (``gpu-platform-gpu-inference``)."""
    node_group: str
    asg: str


def _unique_name(prefix: str, counter: int) -> str:
    """terraform-plugin-sdk ``PrefixedUniqueId``: prefix + UTC time to 1/10000 s + an 8-hex counter."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"{prefix}{now.strftime('%Y%m%d%H%M%S')}{now.microsecond // 100:04d}{counter:08x}"


def _declared_asg_tags(group: Registration, run: Run) -> dict[str, str]:
    """The ``aws.autoscaling.Tag`` resources aimed at this group's ASG (its output is their input)."""
    asg = group.outputs["resources"][0]["autoscalingGroups"][0]["name"]
    return {
        t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
        for t in run.of_type(ASG_TAG)
        if t.inputs["autoscalingGroupName"] == asg
    }


def _eks_asg_tags(cluster: str, node_group: str) -> dict[str, str]:
    return {
        "eks:cluster-name": cluster,
        "eks:nodegroup-name": node_group,
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{cluster}": "owned",
    }


def _launch_template_data(template: Registration) -> dict[str, Any]:
    inputs = template.inputs
    return {
        "BlockDeviceMappings": [
            {
                "DeviceName": m["deviceName"],
                "Ebs": {"VolumeSize": int(m["ebs"]["volumeSize"]), "VolumeType": m["ebs"]["volumeType"]},
            }
            for m in inputs["blockDeviceMappings"]
        ],
        "MetadataOptions": {
            "HttpTokens": inputs["metadataOptions"]["httpTokens"],
            "HttpPutResponseHopLimit": int(inputs["metadataOptions"]["httpPutResponseHopLimit"]),
        },
    }


def seed(clients: Any, run: Run, region: str) -> list[SeededGroup]:
    """Create every declared node group in moto; ``clients(service)`` gives a boto3 client."""
    eks, asg, ec2 = clients("eks"), clients("autoscaling"), clients("ec2")
    groups = run.of_type(NODE_GROUP)
    cluster = groups[0].inputs["clusterName"]
    role = f"arn:aws:iam::{ACCOUNT}:role/nodes"
    eks.create_cluster(name=cluster, roleArn=role, resourcesVpcConfig={"subnetIds": []})
    seeded = []
    for counter, group in enumerate(groups, start=1):
        inputs = group.inputs
        name = _unique_name(inputs["nodeGroupNamePrefix"], counter)
        template = f"eks-{uuid.uuid4()}"
        ec2.create_launch_template(
            LaunchTemplateName=template, LaunchTemplateData=_launch_template_data(launch_template(group, run))
        )
        scaling = inputs["scalingConfig"]
        spot = inputs.get("capacityType") == "SPOT"
        asg_name = f"eks-{name}-{uuid.uuid4()}"
        tags = {**_eks_asg_tags(cluster, name), **_declared_asg_tags(group, run)}
        asg.create_auto_scaling_group(
            AutoScalingGroupName=asg_name,
            MinSize=int(scaling["minSize"]),
            MaxSize=int(scaling["maxSize"]),
            DesiredCapacity=int(scaling["desiredSize"]),
            AvailabilityZones=[f"{region}{z}" for z in ZONES],
            MixedInstancesPolicy={
                "LaunchTemplate": {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": template, "Version": "1"},
                    "Overrides": [{"InstanceType": t} for t in inputs["instanceTypes"]],
                },
                "InstancesDistribution": {
                    "OnDemandPercentageAboveBaseCapacity": 0 if spot else 100,
                    "SpotAllocationStrategy": "price-capacity-optimized",
                },
            },
            Tags=[
                {"Key": k, "Value": v, "PropagateAtLaunch": k.startswith("eks:"), "ResourceId": asg_name}
                for k, v in tags.items()
            ],
        )
        eks.create_nodegroup(
            clusterName=cluster,
            nodegroupName=name,
            scalingConfig={k: int(scaling[k]) for k in ("minSize", "maxSize", "desiredSize")},
            subnets=["subnet-private"],
            instanceTypes=list(inputs["instanceTypes"]),
            amiType=inputs["amiType"],
            nodeRole=role,
            labels=dict(inputs.get("labels") or {}),
            taints=[dict(t) for t in inputs.get("taints") or []],
            tags=dict(inputs.get("tags") or {}),
            capacityType=inputs.get("capacityType", "ON_DEMAND"),
            launchTemplate={"name": template, "version": "1"},
        )
        seeded.append(SeededGroup(group.name, name, asg_name))
    return seeded
