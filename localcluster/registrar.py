"""New EC2 instances of a GPU pool become kwok nodes, as EKS and the device plugin would make them.

A real instance of a managed node group boots the AL2023 AMI, whose nodeadm registers it with
``providerID aws:///<zone>/<instance-id>`` and the node group's labels and taints; the device
plugin then advertises ``nvidia.com/gpu`` per the pool's sharing, seconds after the node registered
(its DaemonSet pod must start first). Here a thread polls moto's
Auto Scaling instances and registers each new instance as a kwok node with what
``localcluster/nodes.py`` derives from the platform's registrations, and deletes the node of an
instance that is gone (what the cloud node lifecycle controller does on EKS). Each node registers
without ``nvidia.com/gpu`` and gets it :data:`DEVICE_PLUGIN_START_SECONDS` later, as a real one
does: the autoscaler must hold such a node as unready (it knows GPU nodes by the label
``k8s.amazonaws.com/accelerator``, processors/customresources/gpu_processor.go), or it scales up again. Only GPU pools are
watched: the system group's nodes are the local cluster's mirrored ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client.rest import ApiException

from infra.workloads.placement import GPU_RESOURCE
from localcluster.aws_seed import SeededGroup
from localcluster.kube import Kube
from localcluster.nodes import MirroredGroup, node_object, resources

POLL_SECONDS = 0.5
# From a node's registration to its device plugin advertising GPUs: the plugin's DaemonSet pod is
# scheduled, pulls its image and registers with the kubelet; a few seconds on a warm node, more on a
# cold one. Short here, but longer than an autoscaler loop of the test run, so the gap is seen.
DEVICE_PLUGIN_START_SECONDS = 3.0
LIVE_STATES = {"Pending", "InService"}


PROVIDER_ID = "aws:///"  # what the AWS cloud provider gives a node: aws:///<zone>/<instance-id>


def provider_id(zone: str, instance_id: str) -> str:
    return f"{PROVIDER_ID}{zone}/{instance_id}"


class Registrar:
    def __init__(
        self,
        kube: Kube,
        client: Callable[[str], Any],
        seeded: Mapping[str, SeededGroup],
        pools: Mapping[str, MirroredGroup],
    ) -> None:
        self.kube, self.client = kube, client
        self.watched = {seeded[name].asg: (seeded[name], pool) for name, pool in pools.items()}
        self.nodes: dict[str, str] = {}
        """instance id -> node name, for the instances registered so far."""
        self.plugin_due: dict[str, tuple[float, dict[str, str]]] = {}
        """node name -> (when its device plugin advertises, the GPUs it advertises)."""
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="registrar", daemon=True)

    def start(self) -> None:
        self.sync()
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self.sync()
            except BaseException as error:  # reported by check(), on the test's thread
                self.error = error
                return

    def check(self) -> None:
        if self.error is not None:
            raise RuntimeError(f"registering instances as nodes failed: {self.error!r}") from self.error

    def sync(self) -> None:
        # DescribeAutoScalingInstances, not DescribeAutoScalingGroups: the instances are all a sync
        # reads, and serializing whole groups made these polls most of moto's CPU.
        pages = self.client("autoscaling").get_paginator("describe_auto_scaling_instances").paginate()
        live: dict[str, tuple[dict[str, Any], str]] = {}
        for instance in (i for page in pages for i in page["AutoScalingInstances"]):
            asg = instance["AutoScalingGroupName"]
            if asg in self.watched and instance["LifecycleState"] in LIVE_STATES:
                live[instance["InstanceId"]] = (instance, asg)
        for instance_id, (instance, asg) in live.items():
            if instance_id not in self.nodes:
                self._register(instance, *self.watched[asg])
        for instance_id in set(self.nodes) - set(live):
            self._delete(self.nodes.pop(instance_id))
        self._advertise(time.monotonic())

    def _advertise(self, now: float) -> None:
        """The device plugin of each node whose time has come advertises its GPUs."""
        for name, (due, gpus) in list(self.plugin_due.items()):
            if now >= due and name in self.nodes.values():
                body = {"status": {"capacity": gpus, "allocatable": gpus}}
                self.kube.core.patch_node_status(name, body)
            if now >= due or name not in self.nodes.values():
                del self.plugin_due[name]

    def _register(self, instance: dict[str, Any], seeded: SeededGroup, pool: MirroredGroup) -> None:
        described = self.client("ec2").describe_instances(InstanceIds=[instance["InstanceId"]])
        ec2 = described["Reservations"][0]["Instances"][0]
        name, zone = ec2["PrivateDnsName"], instance["AvailabilityZone"]
        # moto launches a mixed-instances group's instances with no type; AWS's on-demand allocation
        # ("prioritized") takes the first override, which is the group's first type.
        instance_type = ec2.get("InstanceType") or pool.instance_type
        labels = {
            **pool.labels,
            "eks.amazonaws.com/nodegroup": seeded.node_group,
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": zone[:-1],
        }
        capacity, offered = resources(pool, instance_type)
        gpus = {GPU_RESOURCE: capacity.pop(GPU_RESOURCE)} if GPU_RESOURCE in capacity else {}
        offered.pop(GPU_RESOURCE, None)  # until the device plugin runs
        self.kube.create_node(
            node_object(
                name, labels, pool.taints, capacity, provider_id(zone, instance["InstanceId"]), offered
            )
        )
        self.nodes[instance["InstanceId"]] = name
        if gpus:
            self.plugin_due[name] = (time.monotonic() + DEVICE_PLUGIN_START_SECONDS, gpus)

    def _delete(self, name: str) -> None:
        try:
            self.kube.core.delete_node(name)
        except ApiException as error:
            if error.status != 404:
                raise

    def stop(self) -> None:
        """Stop polling and delete every node registered."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        for name in self.nodes.values():
            self._delete(name)
        self.nodes.clear()
