"""Kueue for the stack's ``teams:``: its pinned chart, the teams' namespaces and the queue objects.

Thin: the objects are :mod:`infra.platform.kueue_objects`' manifests, the chart's values
say where Kueue acts (the teams' namespaces only: its Job webhook fails closed). Declared by
``GpuPlatform`` only when ``teams:`` is set. Decision 0099.
"""

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


def helm_values(config: PlatformConfig) -> dict[str, Any]:
    """The controller on the system nodes, configured by :func:`kueue_objects.manager_config`."""
    return {
        "controllerManager": {"manager": {"image": dict(IMAGE)}, "nodeSelector": dict(SYSTEM_LABELS)},
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(
                kueue_objects.manager_config(config.teams), sort_keys=False
            )
        },
    }


def _resource_name(manifest: dict[str, Any]) -> str:
    where = manifest["metadata"].get("namespace")
    return "-".join(
        ["kueue", manifest["kind"].lower(), *([where] if where else []), manifest["metadata"]["name"]]
    )


def kueue(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """Kueue's release, each team's namespace, and the flavors, classes and queues; nothing without teams."""
    if not config.teams:
        return []
    namespace = k8s.core.v1.Namespace(name, metadata={"name": kueue_objects.NAMESPACE}, opts=opts)
    teams = [
        k8s.core.v1.Namespace(f"{name}-team-{team}", metadata={"name": settings.namespace}, opts=opts)
        for team, settings in config.teams.items()
    ]
    release = helm_release(
        name,
        CHART,
        REPOSITORY,
        version=VERSION,
        namespace=namespace.metadata["name"],
        values=helm_values(config),
        opts=opts,
    )
    # The queue objects need the chart's CRDs and its webhooks serving; LocalQueues their namespace.
    after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[release, *teams]))
    queued = [
        custom_resource(_resource_name(manifest), manifest, after)
        for manifest in kueue_objects.objects(config.contract, config.teams)
    ]
    return [namespace, *teams, release, *queued]
