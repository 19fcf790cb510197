"""GPU quotas decided by the real Kueue controller (sigs.k8s.io/kueue v0.17.0), issue 35 item 4.

Kueue runs with its real webhooks and cert management (localcluster/kueue.py) against the local
control plane: the real API server, kube-scheduler, the Job controller of kube-controller-manager,
and kwok nodes mirroring the dev stack's node groups (one ``inference`` node: one T4G advertised
as 4 slices; one ``training`` node: 2 GPUs). Each scenario runs the platform program offline with
its teams' quotas as ``teams:`` config, applies the ResourceFlavors, priority classes, ClusterQueues
and LocalQueues that run declares, submits Jobs placed the platform's way, and fails if Kueue
decides otherwise. The controller is configured by the values the program gives Kueue's chart (its
manager Configuration). A Job's pod runs for an hour (kwok's delayed completion), so it holds its
quota until Kueue preempts it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from infra.workloads.placement import GPU_RESOURCE, POOL_LABEL
from localcluster import kueue_world as world
from localcluster.kube import Kube
from localcluster.kueue import API, Kueue, wait

ADMIT_SECONDS = 60  # an upper bound on a busy 2-core machine; admission itself takes well under a second
HOLD_SECONDS = 8  # how long a verdict "still waiting" must hold: several of Kueue's scheduling cycles


@contextlib.contextmanager
def teams(kube: Kube, controller: Kueue, quotas: world.Quotas) -> Iterator[Callable[..., dict[str, Any]]]:
    """The platform's Kueue objects for ``quotas`` (``teams:``) and the teams' namespaces; yields the
    Job builder on the run's placement."""
    settings, run = world.platform(quotas)
    with declared(kube, controller, settings, run) as job:
        yield job


@contextlib.contextmanager
def declared(
    kube: Kube, controller: Kueue, settings: Any, run: Any
) -> Iterator[Callable[..., dict[str, Any]]]:
    """``run``'s Kueue objects applied for the scenario, removed after."""
    assert world.chart_values(run) == controller.values, "the scenario's run configures Kueue otherwise"
    with world.queues(kube, settings, run, controller) as job:
        yield job


def _get_all(kube: Kube, kind: str, namespace: str | None = None) -> list[Any]:
    return kube.resource({"apiVersion": API, "kind": kind}).get(namespace=namespace).items


def submit(kube: Kube, manifest: dict[str, Any]) -> None:
    kube.apply(manifest)


def _job(kube: Kube, manifest: Mapping[str, Any]) -> Any:
    return kube.resource(manifest).get(
        name=manifest["metadata"]["name"], namespace=manifest["metadata"]["namespace"]
    )


def suspended(kube: Kube, manifest: Mapping[str, Any]) -> bool:
    return bool(_job(kube, manifest).spec.suspend)


def workload(kube: Kube, manifest: Mapping[str, Any]) -> Any:
    """Kueue's Workload for the Job (it names the Job as its owner)."""
    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    for found in _get_all(kube, "Workload", namespace):
        if any(o.name == name and o.kind == "Job" for o in found.metadata.ownerReferences or []):
            return found.to_dict()
    return None


def condition(found: Any, kind: str) -> Any:
    return (
        next((c for c in found.get("status", {}).get("conditions") or [] if c["type"] == kind), None)
        if found
        else None
    )


def bound_pods(kube: Kube, manifest: Mapping[str, Any]) -> list[Any]:
    """The Job's live pods that kube-scheduler has bound to a node."""
    pods = kube.pods(manifest["metadata"]["namespace"], f"job-name={manifest['metadata']['name']}")
    return [p for p in pods if p.spec.node_name and not p.metadata.deletion_timestamp]


def live_pods(kube: Kube, manifest: Mapping[str, Any]) -> list[Any]:
    pods = kube.pods(manifest["metadata"]["namespace"], f"job-name={manifest['metadata']['name']}")
    return [p for p in pods if p.status.phase not in ("Succeeded", "Failed")]


def pool_of(kube: Kube, node: str) -> str | None:
    return kube.core.read_node(node).metadata.labels.get(POOL_LABEL)


def admitted_and_running(kube: Kube, controller: Kueue, manifest: Mapping[str, Any]) -> Any:
    """Wait until Kueue unsuspends the Job and its pod is bound; returns the pod."""
    name = manifest["metadata"]["name"]
    wait(
        f"Job {name} admitted (unsuspended)", lambda: not suspended(kube, manifest), ADMIT_SECONDS, controller
    )
    pods = wait(f"Job {name}'s pod bound", lambda: bound_pods(kube, manifest), ADMIT_SECONDS, controller)
    return pods[0]


def still_waiting(kube: Kube, controller: Kueue, manifest: Mapping[str, Any]) -> None:
    """The Job stays suspended, pod-less, its Workload without quota, for ``HOLD_SECONDS``."""
    name = manifest["metadata"]["name"]
    wait(f"a Workload for {name}", lambda: workload(kube, manifest), ADMIT_SECONDS, controller)
    with contextlib.suppress(TimeoutError):
        wait(f"{name} to stay waiting", lambda: not suspended(kube, manifest), HOLD_SECONDS, controller)
        raise AssertionError(f"Kueue admitted {name} beyond its quota:\n{controller.log_tail(20)}")
    assert live_pods(kube, manifest) == []
    reserved = condition(workload(kube, manifest), "QuotaReserved")
    assert reserved is None or reserved["status"] == "False", reserved


def borrowed(kube: Kube, team: str, flavor: str) -> int:
    """What the team's ClusterQueue reports borrowed from the cohort on ``flavor``."""
    cq = kube.resource({"apiVersion": API, "kind": "ClusterQueue"}).get(name=team).to_dict()
    for usage in cq.get("status", {}).get("flavorsUsage") or []:
        if usage["name"] == flavor:
            for resource in usage["resources"]:
                if resource["name"] == GPU_RESOURCE:
                    return int(resource.get("borrowed") or 0)
    return 0


def preempted(kube: Kube, manifest: Mapping[str, Any], reason: str) -> bool:
    """Kueue preempted the Job for ``reason``: suspended again, its pods gone."""
    found = condition(workload(kube, manifest), "Preempted")
    return (
        found is not None
        and found["status"] == "True"
        and found["reason"] == reason
        and suspended(kube, manifest)
        and not live_pods(kube, manifest)
    )


def test_a_teams_job_within_quota_is_admitted_and_its_pod_binds_on_that_pools_node(
    kube: Kube, controller: Kueue
) -> None:
    with teams(kube, controller, {"vision": {"training": {"nominalQuota": 2}}}) as job:
        first = job("first", "vision", "training")
        submit(kube, first)
        pod = admitted_and_running(kube, controller, first)
        assert pool_of(kube, pod.spec.node_name) == "training"
        found = workload(kube, first)
        assignment = found["status"]["admission"]["podSetAssignments"][0]
        assert assignment["flavors"] == {GPU_RESOURCE: "training"}
        assert condition(found, "Admitted")["status"] == "True"


def test_beyond_its_quota_a_job_waits_suspended(kube: Kube, controller: Kueue) -> None:
    with teams(kube, controller, {"vision": {"training": {"nominalQuota": 1}}}) as job:
        first, second = job("first", "vision", "training"), job("second", "vision", "training")
        submit(kube, first)
        admitted_and_running(kube, controller, first)
        submit(kube, second)  # the node has a second GPU free: only the quota keeps it out
        still_waiting(kube, controller, second)


def test_a_team_borrows_idle_quota_up_to_its_borrowing_limit(kube: Kube, controller: Kueue) -> None:
    quotas = {
        "vision": {"inference": {"nominalQuota": 1, "borrowingLimit": 1}},
        "speech": {"inference": {"nominalQuota": 3}},
    }
    with teams(kube, controller, quotas) as job:
        jobs = [job(f"a{i}", "vision", "inference") for i in range(3)]
        for manifest in jobs[:2]:
            submit(kube, manifest)
            admitted_and_running(kube, controller, manifest)
        assert wait(
            "vision's ClusterQueue to report 1 borrowed",
            lambda: borrowed(kube, "vision", "inference") == 1,
            30,
        )
        submit(kube, jobs[2])  # speech still has 2 idle slices: only borrowingLimit stops it
        still_waiting(kube, controller, jobs[2])


def test_a_lending_limit_keeps_the_owners_reserve(kube: Kube, controller: Kueue) -> None:
    quotas = {
        "vision": {"inference": {"nominalQuota": 1, "borrowingLimit": 3}},
        "speech": {"inference": {"nominalQuota": 3, "lendingLimit": 1}},
    }
    with teams(kube, controller, quotas) as job:
        jobs = [job(f"a{i}", "vision", "inference") for i in range(3)]
        for manifest in jobs[:2]:
            submit(kube, manifest)
            admitted_and_running(kube, controller, manifest)
        submit(kube, jobs[2])  # vision may borrow 3, but speech lends only 1
        still_waiting(kube, controller, jobs[2])
        mine = [job(f"b{i}", "speech", "inference") for i in range(2)]
        for manifest in mine:  # speech's reserve: admitted at once, nobody preempted
            submit(kube, manifest)
            admitted_and_running(kube, controller, manifest)
        assert all(not suspended(kube, m) for m in jobs[:2])


def test_the_owner_reclaiming_its_quota_preempts_the_borrower(kube: Kube, controller: Kueue) -> None:
    quotas = {
        "vision": {"inference": {"nominalQuota": 1, "borrowingLimit": 1}},
        "speech": {"inference": {"nominalQuota": 3}},
    }
    with teams(kube, controller, quotas) as job:
        vision = [job(f"a{i}", "vision", "inference") for i in range(2)]
        for manifest in vision:
            submit(kube, manifest)
            admitted_and_running(kube, controller, manifest)
        speech = [job(f"b{i}", "speech", "inference") for i in range(3)]
        for manifest in speech:
            submit(kube, manifest)
        for manifest in speech:
            admitted_and_running(kube, controller, manifest)
        out = [m for m in vision if preempted(kube, m, "InCohortReclamation")]
        assert len(out) == 1, [condition(workload(kube, m), "Preempted") for m in vision]
        (kept,) = [m for m in vision if m not in out]
        assert not suspended(kube, kept) and bound_pods(kube, kept)  # vision's own quota is untouched


def test_a_higher_priority_job_preempts_a_lower_one_in_the_same_team(kube: Kube, controller: Kueue) -> None:
    with teams(kube, controller, {"vision": {"training": {"nominalQuota": 1}}}) as job:
        low = job("low", "vision", "training", priority="low")
        submit(kube, low)
        admitted_and_running(kube, controller, low)
        high = job("high", "vision", "training", priority="high")
        submit(kube, high)
        pod = admitted_and_running(kube, controller, high)
        assert pool_of(kube, pod.spec.node_name) == "training"
        wait(
            "the low-priority Job preempted",
            lambda: preempted(kube, low, "InClusterQueue"),
            ADMIT_SECONDS,
            controller,
        )


def test_time_sliced_quota_is_counted_in_slices(kube: Kube, controller: Kueue) -> None:
    """The inference node has one T4G advertised as 4 slices: a quota of 4 admits four one-slice Jobs,
    all on that one GPU, and a fifth waits."""
    with teams(kube, controller, {"vision": {"inference": {"nominalQuota": 4}}}) as job:
        jobs = [job(f"s{i}", "vision", "inference") for i in range(5)]
        for manifest in jobs:
            submit(kube, manifest)
        nodes = {admitted_and_running(kube, controller, m).spec.node_name for m in jobs[:4]}
        assert len(nodes) == 1 and pool_of(kube, nodes.pop()) == "inference"
        still_waiting(kube, controller, jobs[4])
