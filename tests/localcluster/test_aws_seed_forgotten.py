"""A world without DescribeNodegroup: moto forgets the node groups, their ASGs and template tags stay.

Its own module: it starts moto itself, which would stop test_aws_seed's module-scoped one.
"""

from __future__ import annotations

import os
from functools import partial

import pytest

from infra.tooling.offline import PLATFORM_ROOT, Run, run_project
from localcluster import autoscaling, services
from localcluster.aws_seed import seed

REGION = "us-west-2"
# A moto of this test process's own: pytest-xdist runs other modules that start one beside it.
OWN_MOTO = f"moto-test-{os.getpid()}"
CLUSTER = "eks-gpu-platform-dev"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(PLATFORM_ROOT, "dev")


def test_a_world_without_describe_nodegroup_keeps_the_asgs_and_their_template_tags(dev: Run) -> None:
    """``running(describe_nodegroup=False)``: DescribeNodegroup fails as when denied; the ASG tags stay."""
    from botocore.exceptions import ClientError

    endpoint = autoscaling.start_moto(name=OWN_MOTO)
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
        assert tags["k8s.io/cluster-autoscaler/node-template/resources/memory"] == "7199Mi"
    finally:
        services.stop(OWN_MOTO)
