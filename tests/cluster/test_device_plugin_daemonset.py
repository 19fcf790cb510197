"""The real NVIDIA chart, with the platform's values, runs one plugin pod on every GPU node, none elsewhere.

The chart comes from its Go module at the pinned version, helm renders it, the API
server takes every object, and the real DaemonSet controller and scheduler place
the pods on the dev stack's mirrored nodes. What they do is also what the preview's
model (``infra.tooling.agents``, its agent table) says, per node group.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from infra.tooling import pinned_chart
from infra.tooling.agents import landings
from infra.tooling.chart_models import is_device_plugin
from infra.tooling.offline import PLATFORM_ROOT, Run, platform_contract, run_project
from infra.workloads.placement import Placement
from localcluster.kube import Kube, wait_for
from localcluster.nodes import node_manifests

NAMESPACE = "nvidia-device-plugin"


@pytest.fixture(scope="module")
def platform() -> Run:
    return run_project(PLATFORM_ROOT, "dev")


def _release(platform: Run) -> Any:
    (release,) = [
        r
        for r in platform.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs["chart"] == "nvidia-device-plugin"
    ]
    return release


def _modelled_plugin_groups(platform: Run) -> tuple[str, set[str]]:
    """The device plugin's DaemonSet and the node groups the preview's model lands it on, built as
    ``infra.tooling.preview`` builds its agent table for the Run."""
    resources = [(r.type, r.name, r.inputs) for r in platform.resources]
    placement = Placement.from_dict(platform_contract("dev"))
    (plugin,) = [
        landing
        for landing in landings(resources, placement)
        if landing.agent.pod is not None and is_device_plugin(landing.agent.pod)
    ]
    assert "unknown" not in plugin.where.values() and "partial" not in plugin.where.values(), plugin.where
    return plugin.agent.name.split(" ")[0], {group for group, lands in plugin.where.items() if lands == "yes"}


def test_the_platform_deploys_the_chart_version_the_tests_render(platform: Run) -> None:
    assert _release(platform).inputs["version"] == pinned_chart.version()


def test_one_plugin_pod_per_gpu_node_and_none_elsewhere(kube: Kube, platform: Run) -> None:
    release = _release(platform)
    namespace = release.inputs["namespace"]
    objects = pinned_chart.render(
        release.inputs["values"],
        release=release.inputs["name"],
        namespace=namespace,
    )
    # The plugin mounts host paths: its namespace is privileged, as on EKS.
    kube.namespace(namespace, pod_security="privileged")
    kube.apply_all(objects, namespace)
    mirrored = {n["metadata"]["name"]: n for n in node_manifests(platform)}
    gpu_nodes = {name for name, n in mirrored.items() if "nvidia.com/gpu" in n["status"]["allocatable"]}
    assert gpu_nodes and len(gpu_nodes) < len(mirrored), "the dev stack mirrors GPU and system nodes"

    apps = client.AppsV1Api(kube.api)

    def rolled_out() -> bool:
        ds = apps.read_namespaced_daemon_set("nvidia-device-plugin", namespace)
        status = ds.status
        return (
            status.observed_generation == ds.metadata.generation
            and status.desired_number_scheduled == status.current_number_scheduled == status.number_ready
            and status.desired_number_scheduled > 0
        )

    try:
        wait_for("the device plugin DaemonSet to be scheduled and ready", rolled_out, timeout=60)
        pods = kube.pods(namespace, "app.kubernetes.io/name=nvidia-device-plugin")
        on = [p.spec.node_name for p in pods if p.spec.node_name in mirrored]
        assert sorted(on) == sorted(gpu_nodes)  # one per GPU node, none on the system nodes

        # The preview's model agrees with the real DaemonSet controller, node group by node group.
        daemonset, modelled = _modelled_plugin_groups(platform)
        group_of = {
            name: n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] for name, n in mirrored.items()
        }
        plugin_pods = [
            p
            for p in kube.pods(namespace)
            if p.spec.node_name in mirrored
            and any(o.kind == "DaemonSet" and o.name == daemonset for o in p.metadata.owner_references or [])
        ]
        real = {group_of[p.spec.node_name] for p in plugin_pods}
        assert modelled == real, f"model: {sorted(modelled)}, DaemonSet controller: {sorted(real)}"
    finally:
        kube.delete_namespace(namespace)
