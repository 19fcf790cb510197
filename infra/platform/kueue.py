"""Kueue for the stack's ``teams:`` (none without): its pinned chart, the teams' namespaces and
:mod:`infra.platform.kueue_objects`' manifests; the chart's values and why: decision 0099."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from infra.platform import kueue_objects
from infra.platform.addons import custom_resource, helm_release
from infra.platform.config import PlatformConfig
from infra.platform.node_pools import SYSTEM_LABELS

CHART = "kueue"
REPOSITORY = "oci://registry.k8s.io/kueue/charts"
VERSION = "0.17.0"
"""The chart and controller release; infra/tooling/kueue-pins pins the same chart by its Go module digest."""
IMAGE = {"repository": "registry.k8s.io/kueue/kueue", "tag": f"v{VERSION}", "pullPolicy": "IfNotPresent"}
"""The released, multi-arch controller image (the module's values.yaml names the staging one)."""


REPLICAS = 2
"""Two controllers and a disruption budget of one: the visibility APIServices the chart registers
must always be served, or namespace deletion stalls everywhere (decision 0099)."""
SPREAD = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}


def helm_values(config: PlatformConfig) -> dict[str, Any]:
    """The controller on the system nodes, two of them on different nodes where they can be, configured by
    :func:`kueue_objects.manager_config`."""
    pods = {
        "app.kubernetes.io/name": CHART,
        "app.kubernetes.io/instance": CHART,
        "control-plane": "controller-manager",
    }
    return {
        "controllerManager": {
            "manager": {"image": dict(IMAGE)},
            "nodeSelector": dict(SYSTEM_LABELS),
            "replicas": REPLICAS,
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "topologySpreadConstraints": [{**SPREAD, "labelSelector": {"matchLabels": pods}}],
        },
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(
                kueue_objects.manager_config(config.teams), sort_keys=False
            )
        },
    }


def _resource_name(manifest: dict[str, Any]) -> str:
    metadata = manifest["metadata"]  # a namespaced object's name comes after its namespace
    return "-".join(
        filter(None, ("kueue", manifest["kind"].lower(), metadata.get("namespace"), metadata["name"]))
    )


def kueue(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """Kueue's release, each team's namespace, and the flavors, classes and queues; nothing without teams."""
    if not config.teams:
        return []
    namespace = k8s.core.v1.Namespace(name, metadata={"name": kueue_objects.NAMESPACE}, opts=opts)
    release = helm_release(
        name,
        CHART,
        REPOSITORY,
        version=VERSION,
        namespace=namespace.metadata["name"],
        values=helm_values(config),
        opts=opts,
    )
    # After the release, so a destroy deletes them (and the teams' Workloads, whose finalizers Kueue
    # lifts) while Kueue still runs; otherwise they could stay Terminating.
    on_kueue = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[release]))
    teams = [
        k8s.core.v1.Namespace(f"{name}-team-{team}", metadata={"name": settings.namespace}, opts=on_kueue)
        for team, settings in config.teams.items()
    ]
    # The queue objects need the chart's CRDs and its webhooks serving; LocalQueues their namespace.
    after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[release, *teams]))
    queued = [
        custom_resource(_resource_name(manifest), manifest, after)
        for manifest in kueue_objects.objects(config.contract, config.teams)
    ]
    return [namespace, *teams, release, *queued]
