"""New instances become nodes as on EKS: the GPUs come seconds later, when the device plugin runs."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcluster import registrar
from localcluster.aws_seed import SeededGroup
from localcluster.nodes import MirroredGroup

POOL = MirroredGroup(
    name="gpu-inference",
    labels={"eks-gpu/pool": "inference", "k8s.amazonaws.com/accelerator": "nvidia-t4g"},
    taints=[],
    instance_type="g5g.xlarge",
    gpus=4,
    size=0,
    disk_size_gib=100,
)


class _Core:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.deleted: list[str] = []

    def delete_node(self, name: str) -> None:
        self.deleted.append(name)

    def patch_node_status(self, name: str, body: dict[str, Any]) -> None:
        self.patched.append((name, body))


REGION = "us-west-2"


@pytest.fixture
def aws() -> Iterator[Any]:
    """moto's AWS in this process, with a launch template for the groups."""
    with mock_aws():
        boto3.client("ec2", region_name=REGION).create_launch_template(
            LaunchTemplateName="gpu", LaunchTemplateData={"ImageId": "ami-12c6146b"}
        )
        yield partial(boto3.client, region_name=REGION)


def _group(aws: Any, name: str, size: int) -> None:
    aws("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=name,
        MinSize=0,
        MaxSize=4,
        DesiredCapacity=size,
        AvailabilityZones=[f"{REGION}a"],
        LaunchTemplate={"LaunchTemplateName": "gpu", "Version": "$Latest"},
    )


def _registrar(aws: Any, core: _Core) -> registrar.Registrar:
    kube = SimpleNamespace(core=core, create_node=core.created.append)
    return registrar.Registrar(
        kube, aws, {"p": SeededGroup("gpu-inference", "gpu-inference-1", "asg")}, {"p": POOL}
    )


def test_a_new_gpu_node_registers_without_gpus_and_the_plugin_advertises_them_later(aws, monkeypatch) -> None:
    _group(aws, "asg", 1)
    core = _Core()
    run = _registrar(aws, core)
    clock = [100.0]
    monkeypatch.setattr(registrar.time, "monotonic", lambda: clock[0])
    run.sync()
    (node,) = core.created
    assert "nvidia.com/gpu" not in node["status"]["capacity"]
    assert "nvidia.com/gpu" not in node["status"]["allocatable"]
    assert node["metadata"]["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-t4g"  # what CA keys on
    clock[0] += registrar.DEVICE_PLUGIN_START_SECONDS - 0.1
    run.sync()
    assert core.patched == []
    clock[0] += 0.2
    run.sync()
    gpus = {"nvidia.com/gpu": "4"}
    assert core.patched == [(node["metadata"]["name"], {"status": {"capacity": gpus, "allocatable": gpus}})]
    run.sync()
    assert len(core.patched) == 1


def test_only_the_watched_groups_instances_become_nodes(aws) -> None:
    _group(aws, "asg", 1)
    _group(aws, "system-asg", 2)  # the system group's nodes are the mirrored ones
    core = _Core()
    _registrar(aws, core).sync()
    (node,) = core.created
    (instance,) = aws("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=["asg"])[
        "AutoScalingGroups"
    ][0]["Instances"]
    assert node["spec"]["providerID"] == registrar.provider_id(f"{REGION}a", instance["InstanceId"])


def test_a_terminated_instance_s_node_is_deleted(aws) -> None:
    _group(aws, "asg", 1)
    core = _Core()
    run = _registrar(aws, core)
    run.sync()
    (node,) = core.created
    (instance,) = aws("autoscaling").describe_auto_scaling_instances()["AutoScalingInstances"]
    aws("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=instance["InstanceId"], ShouldDecrementDesiredCapacity=True
    )
    run.sync()
    assert core.deleted == [node["metadata"]["name"]]
