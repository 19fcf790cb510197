"""Kueue's objects for the stack's ``teams:`` as plain manifests (pure), declared by :mod:`infra.platform.kueue`
and applied as they are by the local harness; each object and why: decision 0099, "What the platform declares"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.platform.team_config import QuotaConfig, TeamConfig
from infra.workloads.component import IMAGE_PULL_MINUTES, SCALE_UP_MINUTES, STARTUP_MINUTES
from infra.workloads.placement import GPU_RESOURCE, Placement
from infra.workloads.queues import COHORT, DEFAULT_QUEUE, PRIORITY_CLASSES

API_VERSION = "kueue.x-k8s.io/v1beta2"
"""The storage version of every Kueue API at v0.17.0 (``apis/kueue/v1beta2``, ``+kubebuilder:storageversion``)."""
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
NAMESPACE = "kueue-system"
"""Where the controller runs (the chart's and Kueue's default)."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server puts on every namespace, its name: what selects a team's namespace."""
EXCLUDED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "hugepages-", "pods")
"""Resource prefixes Kueue leaves out of quota: only nvidia.com/gpu is shared by quota, and a
resource no ClusterQueue covers would keep every Job from admission (``flavorassigner.go``)."""
PODS_READY_TIMEOUT = f"{SCALE_UP_MINUTES + IMAGE_PULL_MINUTES + STARTUP_MINUTES}m"
"""How long an admitted Job's pods may take to be Ready (a pool from zero, the image, start-up)
before Kueue gives its quota back and requeues it: quota above what nodes can give (kueue#2665)."""
PREEMPTION = {
    "reclaimWithinCohort": "Any",
    "borrowWithinCohort": {"policy": "Never"},
    "withinClusterQueue": "LowerPriority",
}
"""An owner takes back lent quota from any borrower; within a team a higher class preempts a lower one;
borrowing never preempts."""


def _object(kind: str, name: str, spec: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": dict(spec)}


def resource_flavor(placement: Placement, pool: str) -> dict[str, Any]:
    """A pool as Kueue sees it: admitted Jobs get its labels and tolerations, the same ones ``GpuJob``
    gives them (so Kueue's merge never meets a conflicting nodeSelector value): the GPU toleration, and
    on a Karpenter pool the provisioner's too (decision 0098), without which its nodes refuse the pods."""
    tolerations = [placement.toleration()]
    if placement.pool(pool).karpenter:
        tolerations.append(placement.provisioner_toleration())
    return _object(
        "ResourceFlavor", pool, {"nodeLabels": placement.pool_labels(pool), "tolerations": tolerations}
    )


def _quota(settings: QuotaConfig) -> dict[str, Any]:
    """A flavor's GPU quota, its quantities written as the API server stores them: Kueue's defaulting
    webhook re-marshals a ClusterQueue on create, so a JSON 2 is kept as "2", and pulumi-kubernetes
    would show the number as a change on every preview after."""
    limits = settings.model_dump(by_alias=True, exclude_none=True)  # nominalQuota and the limits set
    return {"name": GPU_RESOURCE, **{k: str(v) for k, v in limits.items()}}


def cluster_queue(team: str, config: TeamConfig) -> dict[str, Any]:
    """A team's quota: its pools' flavors (in config order: Kueue tries them in turn), its namespace only."""
    flavors = [{"name": pool, "resources": [_quota(quota)]} for pool, quota in config.quotas.items()]
    return _object(
        "ClusterQueue",
        team,
        {
            "cohortName": COHORT,
            # A nil namespaceSelector admits no namespace, an empty one every namespace.
            "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: config.namespace}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": [GPU_RESOURCE], "flavors": flavors}],
            "preemption": dict(PREEMPTION),
        },
    )


def local_queue(team: str, config: TeamConfig) -> dict[str, Any]:
    """The team's LocalQueue ``default``: also where Kueue puts the namespace's Jobs that name no queue."""
    return _object("LocalQueue", DEFAULT_QUEUE, {"clusterQueue": team}, namespace=config.namespace)


def priority_classes() -> list[dict[str, Any]]:
    """The platform's WorkloadPriorityClasses (``value`` is a top-level field, not a spec)."""
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": f"eks-gpu platform class {name!r}: a higher class preempts a lower one within a team",
        }
        for name, value in PRIORITY_CLASSES.items()
    ]


def namespaces_selector(teams: Mapping[str, TeamConfig]) -> dict[str, Any]:
    """The teams' namespaces, as a namespaceSelector: where Kueue's Job webhook acts (and fails closed)."""
    names = sorted(config.namespace for config in teams.values())
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": names}]}


def manager_config(teams: Mapping[str, TeamConfig]) -> dict[str, Any]:
    """The controller's Configuration: the chart's defaults, with Jobs managed only in the teams'
    namespaces, quota on nvidia.com/gpu only, and waitForPodsReady to give back quota nodes cannot fill."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "clientConnection": {"qps": 50, "burst": 100},
        "managedJobsNamespaceSelector": namespaces_selector(teams),
        "integrations": {"frameworks": ["batch/job"]},
        "resources": {"excludeResourcePrefixes": list(EXCLUDED_RESOURCES)},
        "waitForPodsReady": {
            "timeout": PODS_READY_TIMEOUT,
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction"},
        },
    }


def objects(placement: Placement, teams: Mapping[str, TeamConfig]) -> list[dict[str, Any]]:
    """Every Kueue object of the teams, flavors and classes first (the queues name them); none without teams."""
    if not teams:
        return []
    return [
        *(resource_flavor(placement, pool) for pool in placement.pool_names),
        *priority_classes(),
        *(cluster_queue(team, config) for team, config in teams.items()),
        *(local_queue(team, config) for team, config in teams.items()),
    ]
