"""The Kueue objects and chart values the scenarios run on, and Jobs submitted the platform's way.

Until the platform program declares Kueue (issue 35 items 1-2, decision 0099), the objects are built
here from a small fixture of teams, in the shapes decision 0099 gives them: a ResourceFlavor per
pool with the pool's labels and the contract's toleration (``Placement``, one source), a
ClusterQueue per team in the cohort ``gpu-teams`` scoped to the team's namespace, a LocalQueue
``default``, the classes low/normal/high, and the manager config the platform gives the chart
(Jobs managed only in the teams' namespaces, quota on ``nvidia.com/gpu`` only, waitForPodsReady).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml

from infra.tooling.offline import platform_contract
from infra.workloads.placement import GPU_RESOURCE, Placement
from infra.workloads.podspec import place_pod_spec
from localcluster import kueue
from localcluster.cluster import HOLD_ANNOTATION

API = kueue.API
COHORT = "gpu-teams"
NAMESPACES = {"alpha": "kq-alpha", "beta": "kq-beta"}  # every world's teams, so one manager config
PRIORITY_CLASSES = {"low": 100, "normal": 1000, "high": 10000}
PREEMPTION = {
    "reclaimWithinCohort": "Any",
    "borrowWithinCohort": {"policy": "Never"},
    "withinClusterQueue": "LowerPriority",
}
CONTAINER = {"name": "train", "image": "registry.invalid/train:1", "securityContext": {"runAsUser": 1000}}


def contract() -> Placement:
    return Placement.from_dict(platform_contract("dev"))


def manager_config() -> dict[str, Any]:
    """The Configuration the platform gives the chart (decision 0099), for the teams of ``NAMESPACES``."""
    chart_default = yaml.safe_load(
        yaml.safe_load((kueue.chart() / "values.yaml").read_text())["managerConfig"][
            "controllerManagerConfigYaml"
        ]
    )
    names = sorted(NAMESPACES.values())
    return {
        **chart_default,
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": names}]
        },
        "integrations": {"frameworks": ["batch/job"]},
        "resources": {
            "excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage", "hugepages-", "pods"]
        },
        "waitForPodsReady": {
            "timeout": "10m",
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction"},
        },
    }


def chart_values() -> dict[str, Any]:
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_config())}}


def _object(kind: str, name: str, spec: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": dict(spec)}


def objects(
    placement: Placement, teams: Mapping[str, Mapping[str, Mapping[str, int]]]
) -> list[dict[str, Any]]:
    """Flavors, classes, ClusterQueues and LocalQueues for ``{team: {pool: {nominalQuota, ...}}}``."""
    flavors = [
        _object(
            "ResourceFlavor",
            pool,
            {"nodeLabels": placement.pool_labels(pool), "tolerations": [placement.toleration()]},
        )
        for pool in placement.pool_names
    ]
    classes = [
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in PRIORITY_CLASSES.items()
    ]
    queues = [
        _object(
            "ClusterQueue",
            team,
            {
                "cohortName": COHORT,
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACES[team]}},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [
                    {
                        "coveredResources": [GPU_RESOURCE],
                        "flavors": [
                            {"name": pool, "resources": [{"name": GPU_RESOURCE, **quota}]}
                            for pool, quota in pools.items()
                        ],
                    }
                ],
                "preemption": copy.deepcopy(PREEMPTION),
            },
        )
        for team, pools in teams.items()
    ]
    local = [_object("LocalQueue", "default", {"clusterQueue": t}, NAMESPACES[t]) for t in teams]
    return [*flavors, *classes, *queues, *local]


def job(
    name: str,
    team: str,
    pool: str,
    gpus: int = 1,
    priority: str | None = None,
    hold: str = "1h",
    queue: str | None = "default",
) -> dict[str, Any]:
    """A one-pod Job placed on ``pool`` the platform's way, queued in the team's LocalQueue; its pod
    runs for ``hold`` once started (kwok's delayed completion: localcluster/cluster.py)."""
    spec = place_pod_spec(
        {"containers": [CONTAINER], "restartPolicy": "Never"}, contract(), gpus=gpus, pool=pool
    )
    labels = {
        **({kueue.QUEUE_LABEL: queue} if queue else {}),
        **({kueue.PRIORITY_LABEL: priority} if priority else {}),
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACES.get(team, team), "labels": labels},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "template": {"metadata": {"annotations": {HOLD_ANNOTATION: hold}}, "spec": spec},
        },
    }
