"""New instances become nodes as on EKS: the GPUs come seconds later, when the device plugin runs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

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

    def patch_node_status(self, name: str, body: dict[str, Any]) -> None:
        self.patched.append((name, body))


def _aws(service: str) -> Any:
    instance = {"InstanceId": "i-1", "LifecycleState": "InService", "AvailabilityZone": "us-west-2a"}
    groups = {"AutoScalingGroups": [{"AutoScalingGroupName": "asg", "Instances": [instance]}]}
    described = {
        "Reservations": [{"Instances": [{"PrivateDnsName": "ip-10-0-0-1", "InstanceType": "g5g.xlarge"}]}]
    }
    return SimpleNamespace(
        describe_auto_scaling_groups=lambda **_: groups, describe_instances=lambda **_: described
    )


def test_a_new_gpu_node_registers_without_gpus_and_the_plugin_advertises_them_later(monkeypatch) -> None:
    core = _Core()
    kube = SimpleNamespace(core=core, create_node=core.created.append)
    run = registrar.Registrar(
        kube, _aws, {"p": SeededGroup("gpu-inference", "gpu-inference-1", "asg")}, {"p": POOL}
    )
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
    assert core.patched == [("ip-10-0-0-1", {"status": {"capacity": gpus, "allocatable": gpus}})]
    run.sync()
    assert len(core.patched) == 1
