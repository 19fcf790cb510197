"""The NVIDIA device plugin, as a Helm release whose DaemonSet runs on every GPU node and no other."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from infra.platform.addons import helm_release
from infra.platform.config import DevicePluginConfig
from infra.platform.node_pools import WHOLE_GPUS
from infra.workloads.placement import GPU_RESOURCE, Placement

CHART = "nvidia-device-plugin"
REPOSITORY = "https://nvidia.github.io/k8s-device-plugin"

# The chart's default tolerations (values.yaml at v0.19.3; ours replace the list whole), kept so nodes tainted
# nvidia.com/gpu or CriticalAddonsOnly still get the plugin; tests compare them with the pinned chart (0025).
CHART_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
)


def _sharing_values(placement: Placement) -> dict[str, Any]:
    """Named device plugin configs (api/config/v1): whole GPUs by default, one per time-sliced pool."""
    shared = [pool for pool in placement.pools if pool.shared]
    if not shared:
        return {}  # no config map: no config-manager sidecar, nothing to go wrong
    whole = {"version": "v1", "flags": {"migStrategy": "none"}}
    configs = {WHOLE_GPUS: whole}
    for pool in shared:
        resources = [{"name": GPU_RESOURCE, "replicas": pool.time_slicing_replicas}]
        configs[pool.name] = {
            **whole,
            "sharing": {"timeSlicing": {"failRequestsGreaterThanOne": True, "resources": resources}},
        }
    return {
        "config": {
            "default": WHOLE_GPUS,
            "map": {name: yaml.safe_dump(cfg, sort_keys=False) for name, cfg in configs.items()},
        },
        # With any config map the chart assumes MIG may be in play and adds SYS_ADMIN
        # (_helpers.tpl, allPossibleMigStrategiesAreNone / deviceListStrategyIncludesVolumeMount);
        # saying what we use keeps the containers at drop: [ALL]. Both are the binary's defaults.
        "migStrategy": "none",
        "deviceListStrategy": "envvar",
    }


def values(placement: Placement) -> dict[str, Any]:
    """Helm values derived from the contract: select GPU nodes, tolerate their taint, share per pool."""
    return {
        "nodeSelector": placement.node_selector(),
        # Replaces the NFD-label terms (lists are replaced whole by Helm).
        "affinity": placement.node_affinity(),
        # The contract's taint, and Karpenter's provisioner taint where the cluster has both kinds of pool.
        "tolerations": [*placement.agent_tolerations(), *(dict(t) for t in CHART_TOLERATIONS)],
        "priorityClassName": "system-node-critical",
        # No GPU Feature Discovery / NFD: nothing here needs their labels.
        "gfd": {"enabled": False},
        **_sharing_values(placement),
    }


def device_plugin(
    name: str, config: DevicePluginConfig, placement: Placement, opts: pulumi.ResourceOptions
) -> tuple[k8s.core.v1.Namespace, k8s.helm.v3.Release]:
    namespace = k8s.core.v1.Namespace(name, metadata={"name": config.namespace}, opts=opts)
    release = helm_release(
        name,
        CHART,
        REPOSITORY,
        version=config.chart_version,
        namespace=namespace.metadata["name"],
        values=values(placement),
        opts=opts,
    )
    return namespace, release
