"""The Kueue scenarios' world: the platform's own objects for the scenarios' teams, and their Jobs.

Everything Kueue is given comes from the platform program run offline on the dev stack's config with
the scenario's ``teams:`` (``localcluster.karpenter.platform_run``, as the Karpenter scenarios take
their NodePools): the ResourceFlavors, WorkloadPriorityClasses, ClusterQueues and LocalQueues it
declares, and the values it gives Kueue's chart (the manager Configuration, decision 0099). What is
this harness's own: the teams' namespace names, and a builder of Jobs placed the platform's way.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import yaml

from infra.platform.config import PlatformConfig
from infra.tooling.manifests import manifest_of
from infra.tooling.offline import PLATFORM_ROOT, Run, load_project
from infra.workloads.placement import Placement
from infra.workloads.podspec import place_pod_spec
from infra.workloads.queues import PRIORITY_LABEL, QUEUE_LABEL
from localcluster.cluster import HOLD_ANNOTATION
from localcluster.karpenter import platform_run
from localcluster.kueue import API, Kueue, wait

KUEUE_TYPES = "kubernetes:kueue.x-k8s.io/"
KINDS = ("ResourceFlavor", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")
RELEASE_TYPE, RELEASE_NAME = "kubernetes:helm.sh/v3:Release", "kueue"


def _dev_teams() -> dict[str, str]:
    project, config = load_project(PLATFORM_ROOT, "dev")
    return {
        team: settings["namespace"] for team, settings in yaml.safe_load(config[f"{project}:teams"]).items()
    }


NAMESPACES = _dev_teams()
"""The dev stack's teams and their namespaces (``Pulumi.dev.yaml``). Every scenario declares these teams,
so every scenario's run gives Kueue the same manager config as the dev stack (Jobs managed in these
namespaces): one controller serves every scenario."""
NO_QUOTA = {"training": {"nominalQuota": 0}}
"""The quotas of a team a scenario gives no GPUs: a ClusterQueue in the cohort with nothing to lend."""
CONTAINER = {"name": "train", "image": "registry.invalid/train:1", "securityContext": {"runAsUser": 1000}}

Quotas = Mapping[str, Mapping[str, Mapping[str, int]]]
"""``{team: {pool: {nominalQuota, borrowingLimit?, lendingLimit?}}}``, as ``teams:`` spells a quota."""


def teams_config(quotas: Quotas) -> dict[str, Any]:
    """The ``teams:`` config for ``quotas``: each team of ``NAMESPACES`` in its namespace, with no quota
    where ``quotas`` names it not."""
    unknown = sorted(set(quotas) - set(NAMESPACES))
    if unknown:
        raise ValueError(
            f"scenario teams {unknown}: allowed {', '.join(NAMESPACES)} (kueue_world.NAMESPACES)"
        )
    return {
        team: {"namespace": namespace, "quotas": {p: dict(q) for p, q in quotas.get(team, NO_QUOTA).items()}}
        for team, namespace in NAMESPACES.items()
    }


def platform(quotas: Quotas) -> tuple[PlatformConfig, Run]:
    """The platform program run offline on the dev stack's pools with ``teams:`` for ``quotas``."""
    return platform_run({}, top={"teams": teams_config(quotas)})


def objects(run: Run) -> list[dict[str, Any]]:
    """The Kueue objects the run declares, as applied: flavors and classes before the queues that name
    them (the run registers them concurrently, in no fixed order)."""
    found = [manifest_of(r.type, r.name, r.inputs) for r in run.resources if r.type.startswith(KUEUE_TYPES)]
    return sorted(
        found,
        key=lambda o: (KINDS.index(o["kind"]), o["metadata"].get("namespace", ""), o["metadata"]["name"]),
    )


def chart_values(run: Run) -> dict[str, Any]:
    """The values the run gives Kueue's chart (its manager Configuration among them)."""
    return dict(run.one(RELEASE_TYPE, RELEASE_NAME).inputs["values"])


def job(
    placement: Placement,
    name: str,
    team: str,
    pool: str,
    gpus: int = 1,
    priority: str | None = None,
    hold: str = "1h",
    queue: str | None = "default",
) -> dict[str, Any]:
    """A one-pod Job placed on ``pool`` the platform's way, queued in the team's LocalQueue (``team`` may
    also be a namespace of no team); its pod runs for ``hold`` once started (kwok's delayed completion:
    localcluster/cluster.py)."""
    spec = place_pod_spec(
        {"containers": [CONTAINER], "restartPolicy": "Never"}, placement, gpus=gpus, pool=pool
    )
    labels = {**({QUEUE_LABEL: queue} if queue else {}), **({PRIORITY_LABEL: priority} if priority else {})}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACES.get(team, team), "labels": labels},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            # One retry, as a user's Job would have (Kubernetes' default is six): kube-controller-manager's
            # taint eviction can read a new Karpenter node from a cache older than the scheduler's, still
            # with karpenter.sh/unregistered:NoExecute, and evict the pod the scheduler has just bound
            # there (seen on a loaded machine; Karpenter removes that taint as it registers the node).
            # Kueue's own evictions suspend the Job and count no failure. (A podFailurePolicy ignoring
            # DisruptionTarget would wait for a deleted pod's terminal phase, which kwok never sets.)
            "backoffLimit": 1,
            "template": {"metadata": {"annotations": {HOLD_ANNOTATION: hold}}, "spec": spec},
        },
    }


def quick_pods_ready(values: Mapping[str, Any], timeout: str, backoff_seconds: int) -> dict[str, Any]:
    """Kueue's chart ``values`` with ``waitForPodsReady``'s timeout and requeuing backoff shortened: the
    harness's one change to the platform's Configuration for the requeue scenario (timing, not decisions;
    docs/local-cluster.md)."""
    result = copy.deepcopy(dict(values))
    manager = result["managerConfig"]
    config = yaml.safe_load(manager["controllerManagerConfigYaml"])
    ready = config["waitForPodsReady"]
    ready["timeout"] = timeout
    ready["requeuingStrategy"] = {**ready.get("requeuingStrategy", {}), "backoffBaseSeconds": backoff_seconds}
    manager["controllerManagerConfigYaml"] = yaml.safe_dump(config, sort_keys=False)
    return result


@contextlib.contextmanager
def queues(
    kube: Any, settings: PlatformConfig, run: Run, controller: Kueue
) -> Iterator[Callable[..., dict[str, Any]]]:
    """The run's Kueue objects and its teams' namespaces applied, as the platform would; yields the Job
    builder on the run's placement. All removed after (namespaces first: their Jobs and Workloads go,
    then the queues and flavors, which ``controller`` holds while in use)."""
    from kubernetes.client.rest import ApiException

    declared = objects(run)
    try:
        for config in settings.teams.values():
            kube.namespace(config.namespace)
        for manifest in declared:
            kube.apply(manifest)
        yield functools.partial(job, settings.contract)
    finally:
        for config in settings.teams.values():
            kube.delete_namespace(config.namespace, timeout=120)
        for manifest in reversed(declared):
            with contextlib.suppress(ApiException):
                kube.resource(manifest).delete(
                    name=manifest["metadata"]["name"], namespace=manifest["metadata"].get("namespace")
                )
        wait("the queues and flavors gone", lambda: not _left(kube), 60, controller)


def _left(kube: Any) -> list[Any]:
    """Kueue's cluster-wide objects still there (the controller lifts their finalizers once unused)."""
    kinds = ("ClusterQueue", "ResourceFlavor")
    return [o for kind in kinds for o in kube.resource({"apiVersion": API, "kind": kind}).get().items]
