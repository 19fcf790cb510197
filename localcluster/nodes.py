"""Fake nodes (kwok) that mirror what the platform program declares, never hand-copied.

Each ``aws.eks.NodeGroup`` the dev stack's program registers becomes nodes with
the group's labels and taints (EKS spelling turned into Kubernetes'), the labels
EKS and the kubelet add (arch from the AMI type, instance type, node group,
capacity type), the capacity of its first instance type and the allocatable a
real AL2023 node of it reports (nodeadm's reserves: infra/platform/allocatable.py,
the source the autoscaler's template tags use too). ``nvidia.com/gpu``
is what the NVIDIA device plugin would advertise there: the instance's GPUs
times the time-slicing replicas of the plugin config the node's
``nvidia.com/device-plugin.config`` label picks from the Helm release's values
(the chart's ``config.default`` when it has none).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from infra.platform.allocatable import allocatable
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.platform.node_pools import DEVICE_PLUGIN_CONFIG_LABEL, ephemeral_storage
from infra.tooling.agents import NODE_GROUP
from infra.tooling.offline import Registration, Run
from infra.workloads.placement import EKS_TO_K8S_EFFECT, GPU_RESOURCE

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
"""kwok manages only nodes with this annotation (``--manage-nodes-with-annotation-selector``)."""

# AMI type -> kubernetes.io/arch, as the kubelet on that AMI reports it.
_ARCH = {"ARM_64": "arm64", "x86_64": "amd64"}


@dataclass(frozen=True)
class MirroredGroup:
    """One declared node group, as the nodes it starts will look."""

    name: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    instance_type: str
    gpus: int
    """``nvidia.com/gpu`` each node advertises (0 for groups without GPUs)."""
    size: int
    disk_size_gib: int
    """The root volume of its launch template: the node's ``ephemeral-storage``."""


def _arch(ami_type: str) -> str:
    for marker, arch in _ARCH.items():
        if marker in ami_type:
            return arch
    raise ValueError(f"cannot tell the architecture of AMI type {ami_type!r}")


def _plugin_replicas(run: Run) -> tuple[dict[str, int], str | None]:
    """Time-slicing replicas per named device plugin config, and the default config's name."""
    releases = [r for r in run.of_type(RELEASE) if r.inputs.get("chart") == "nvidia-device-plugin"]
    if not releases:
        return {}, None
    config = (releases[0].inputs.get("values") or {}).get("config") or {}
    replicas: dict[str, int] = {}
    for name, text in (config.get("map") or {}).items():
        sharing = (yaml.safe_load(text) or {}).get("sharing") or {}
        resources = (sharing.get("timeSlicing") or {}).get("resources") or []
        replicas[name] = next((int(r["replicas"]) for r in resources if r["name"] == GPU_RESOURCE), 1)
    return replicas, config.get("default")


def _gpus(labels: Mapping[str, str], physical: int, run: Run) -> int:
    if physical == 0:
        return 0
    replicas, default = _plugin_replicas(run)
    chosen = labels.get(DEVICE_PLUGIN_CONFIG_LABEL, default)
    return physical * replicas.get(chosen, 1) if chosen else physical


def advertised_gpus(labels: Mapping[str, str], physical: int, run: Run) -> int:
    """``nvidia.com/gpu`` the device plugin of ``run`` advertises on a node with ``labels`` and ``physical`` GPUs."""
    return _gpus(labels, physical, run)


def launch_template(group: Registration, run: Run) -> Registration:
    """The launch template the node group starts its instances from (its inputs come from it)."""
    found = [t for t in run.of_type(LAUNCH_TEMPLATE) if t.urn in group.dependencies]
    if len(found) != 1:
        raise ValueError(f"node group {group.name}: expected one launch template among its dependencies")
    return found[0]


def _disk_size(group: Registration, run: Run) -> int:
    mappings = launch_template(group, run).inputs["blockDeviceMappings"]
    return int(mappings[0]["ebs"]["volumeSize"])


def mirror(group: Registration, run: Run, gpu_nodes: int) -> MirroredGroup:
    """The nodes of one declared group: GPU groups get ``gpu_nodes``, others their desired size."""
    inputs = group.inputs
    instance = inputs["instanceTypes"][0]
    physical = ARM_NVIDIA[instance].gpus if instance in ARM_NVIDIA else 0
    if instance not in ARM_NVIDIA and instance not in ARM_SYSTEM:
        raise ValueError(f"node group {group.name}: no capacity known for instance type {instance!r}")
    labels = {
        **inputs.get("labels", {}),
        "kubernetes.io/arch": _arch(inputs["amiType"]),
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance,
        "eks.amazonaws.com/nodegroup": group.name,
        "eks.amazonaws.com/capacityType": inputs.get("capacityType", "ON_DEMAND"),
    }
    taints = [
        {"key": t["key"], "value": t.get("value", ""), "effect": EKS_TO_K8S_EFFECT[t["effect"]]}
        for t in inputs.get("taints", [])
    ]
    size = gpu_nodes if physical else int(inputs["scalingConfig"]["desiredSize"])
    gpus = _gpus(labels, physical, run)
    return MirroredGroup(group.name, labels, taints, instance, gpus, size, _disk_size(group, run))


def mirrored_groups(run: Run, gpu_nodes: int = 1) -> list[MirroredGroup]:
    return [mirror(g, run, gpu_nodes) for g in run.of_type(NODE_GROUP)]


def node_object(
    name: str,
    labels: Mapping[str, str],
    taints: list[dict[str, str]],
    capacity: Mapping[str, str],
    provider_id: str | None = None,
    allocatable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node registered Ready with its capacity and allocatable (default: the capacity), as a kubelet
    would; kwok renews its lease.

    The API server still taints it not-ready at admission (TaintNodesByCondition) and the
    node lifecycle controller lifts that at once: wait for :func:`localcluster.kube.settled`.
    """
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {**labels, "kubernetes.io/hostname": name, "type": "kwok"},
        },
        "spec": {"taints": taints, **({"providerID": provider_id} if provider_id else {})},
        "status": {
            "capacity": dict(capacity),
            "allocatable": dict(allocatable if allocatable is not None else capacity),
            "conditions": [ready],
        },
    }


def resources(
    group: MirroredGroup, instance_type: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """Capacity and allocatable of a node of ``group`` (of ``instance_type``, default the group's first):
    the type's CPUs and memory less nodeadm's reserves, its max pods, the GPUs the device plugin
    advertises, the kubelet's allocatable disk."""
    offered = allocatable(instance_type or group.instance_type)
    disk, gpus = ephemeral_storage(group.disk_size_gib), {GPU_RESOURCE: str(group.gpus)} if group.gpus else {}
    capacity = {
        "cpu": f"{offered.capacity_cpu_millis}m",
        "memory": f"{offered.capacity_memory_mib}Mi",
        "pods": str(offered.pods),
        "ephemeral-storage": disk,
        **gpus,
    }
    return capacity, {**capacity, "cpu": offered.cpu, "memory": offered.memory}


def node_manifest(group: MirroredGroup, index: int) -> dict[str, Any]:
    """Node ``index`` of ``group``, with the capacity of the group's instance type."""
    capacity, offered = resources(group)
    return node_object(f"{group.name}-{index}", group.labels, group.taints, capacity, allocatable=offered)


def node_manifests(run: Run, gpu_nodes: int = 1) -> list[dict[str, Any]]:
    """Every fake node of the dev stack: its groups' nodes, named ``<group>-<n>``."""
    return [node_manifest(g, i) for g in mirrored_groups(run, gpu_nodes) for i in range(g.size)]
