"""moto holds what EKS would make of the dev stack's node groups, read from its registrations."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial

import pytest

from infra.tooling.offline import PLATFORM_ROOT, Run, run_project
from localcluster import autoscaling, services
from localcluster.aws_seed import SeededGroup, seed

REGION = "us-west-2"
# A moto of this test process's own: pytest-xdist runs other modules that start one beside it.
OWN_MOTO = f"moto-test-{os.getpid()}"
FORGETFUL_MOTO = f"{OWN_MOTO}-forgetful"  # beside the module's own, which it must not stop
CLUSTER = "eks-gpu-platform-dev"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(PLATFORM_ROOT, "dev")


@pytest.fixture(scope="module")
def moto(dev: Run) -> Iterator[tuple[str, dict[str, SeededGroup]]]:
    endpoint = autoscaling.start_moto(name=OWN_MOTO)
    try:
        groups = seed(partial(autoscaling.boto3_client, endpoint, REGION), dev, REGION)
        yield endpoint, {g.registration: g for g in groups}
    finally:
        services.stop(OWN_MOTO)


def test_each_pool_asg_has_ekss_tags_and_the_programs_own(dev: Run, moto) -> None:
    endpoint, groups = moto
    inference = groups["gpu-platform-gpu-inference"]
    client = autoscaling.boto3_client(endpoint, REGION, "autoscaling")
    (asg,) = client.describe_auto_scaling_groups(AutoScalingGroupNames=[inference.asg])["AutoScalingGroups"]
    tags = {t["Key"]: t["Value"] for t in asg["Tags"]}
    declared = {
        t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
        for t in dev.of_type("aws:autoscaling/tag:Tag")
        if t.name.startswith("cluster-autoscaler-inference-")
    }
    assert tags == {
        "eks:cluster-name": CLUSTER,
        "eks:nodegroup-name": inference.node_group,
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{CLUSTER}": "owned",
        **declared,
    }
    assert inference.asg.startswith(f"eks-{inference.node_group}-")
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == (0, 2, 0)
    overrides = asg["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"]
    assert [o["InstanceType"] for o in overrides] == ["g5g.xlarge", "g5g.2xlarge"]


def test_each_node_group_is_the_declared_one(dev: Run, moto) -> None:
    endpoint, groups = moto
    eks = autoscaling.boto3_client(endpoint, REGION, "eks")
    for name, seeded in groups.items():
        inputs = dev.one("aws:eks/nodeGroup:NodeGroup", name).inputs
        group = eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=seeded.node_group)["nodegroup"]
        assert seeded.node_group.startswith(inputs["nodeGroupNamePrefix"])
        assert group["labels"] == inputs["labels"]
        assert group["taints"] == inputs.get("taints", [])
        assert group["tags"] == (inputs.get("tags") or {})
        assert group["capacityType"] == inputs["capacityType"]


def test_a_world_without_describe_nodegroup_keeps_the_asgs_and_their_template_tags(dev: Run) -> None:
    """``running(describe_nodegroup=False)``: DescribeNodegroup fails as when denied; the ASG tags stay."""
    from botocore.exceptions import ClientError

    endpoint = autoscaling.start_moto(name=FORGETFUL_MOTO)
    try:
        client = partial(autoscaling.boto3_client, endpoint, REGION)
        groups = seed(client, dev, REGION)
        autoscaling.forget_node_groups(client, groups)
        inference = next(g for g in groups if g.registration == "gpu-platform-gpu-inference")
        with pytest.raises(ClientError, match="ResourceNotFoundException"):
            client("eks").describe_nodegroup(clusterName=CLUSTER, nodegroupName=inference.node_group)
        (asg,) = client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[inference.asg])[
            "AutoScalingGroups"
        ]
        tags = {t["Key"]: t["Value"] for t in asg["Tags"]}
        assert tags["k8s.io/cluster-autoscaler/node-template/taint/GPU"] == "true:NoSchedule"
        assert tags["k8s.io/cluster-autoscaler/node-template/label/eks-gpu/pool"] == "inference"
        assert tags["k8s.io/cluster-autoscaler/node-template/resources/memory"] == "6584Mi"
    finally:
        services.stop(FORGETFUL_MOTO)
