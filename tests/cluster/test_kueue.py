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
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from infra.workloads.placement import GPU_RESOURCE, POOL_LABEL
from localcluster import cluster as local
from localcluster import kueue_world as world
from localcluster.karpenter import platform_run
from localcluster.kube import Kube
from localcluster.kueue import API, Kueue, running, wait
from localcluster.pulumi_cli import Stack
from tests.cluster.test_pulumi_consumers import STACKS, Consumer, _runs_where_a_user_would, fresh_stack

ADMIT_SECONDS = 60  # an upper bound on a busy 2-core machine; admission itself takes well under a second
HOLD_SECONDS = 8  # how long a verdict "still waiting" must hold: several of Kueue's scheduling cycles


@pytest.fixture(scope="module")
def controller(kube: Kube) -> Iterator[Kueue]:
    """The controller as the platform configures it for the dev stack's teams (every scenario's)."""
    _, run = world.platform({})
    with running(kube, world.chart_values(run), local.KUBECONFIG) as started:
        yield started


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


def test_with_kueue_down_only_the_teams_namespaces_refuse_jobs_and_running_jobs_are_kept(
    kube: Kube, controller: Kueue
) -> None:
    other = "kq-other"
    with teams(kube, controller, {"vision": {"training": {"nominalQuota": 1}}}) as job:
        busy = job("running", "vision", "training")
        submit(kube, busy)
        admitted_and_running(kube, controller, busy)
        kube.namespace(other)
        controller.stop()
        try:
            with pytest.raises(ApiException) as refused:
                submit(kube, job("refused", "vision", "training"))
            assert "mjob.kb.io" in refused.value.body and "failed calling webhook" in refused.value.body
            plain = job("plain", other, "training", queue=None)
            submit(kube, plain)  # no team's namespace: the webhook does not cover it
            assert not suspended(kube, plain)
            assert not suspended(kube, busy) and bound_pods(kube, busy)
        finally:
            controller.start(local.KUBECONFIG)
            kube.delete_namespace(other)
        later = job("later", "vision", "training")
        submit(kube, later)
        still_waiting(kube, controller, later)  # the restarted controller counts the busy Job's quota
        assert not suspended(kube, busy) and bound_pods(kube, busy)
        kube.resource(busy).delete(
            name="running",
            namespace=busy["metadata"]["namespace"],
            body={"propagationPolicy": "Background"},
        )
        admitted_and_running(kube, controller, later)  # and gives it to the next Job once freed


PODS_READY_SECONDS = 20  # the requeue scenario's waitForPodsReady timeout (the platform's: 30 min)
BACKOFF_SECONDS = 10  # and its requeuing backoff base (the platform's: Kueue's default, 60 s)


@contextlib.contextmanager
def reconfigured(kube: Kube, controller: Kueue, values: Mapping[str, Any]) -> Iterator[Kueue]:
    """The controller restarted with other chart ``values`` (the same webhooks and CRDs); back after."""
    controller.stop()
    other = Kueue(
        kube, values, controller.workdir.with_name("kueue-reconfigured"), controller.ports["webhook"]
    )
    try:
        other.start(local.KUBECONFIG)
        yield other
    finally:
        other.stop()
        controller.start(local.KUBECONFIG)


def requeues(kube: Kube, manifest: Mapping[str, Any]) -> int:
    """How often Kueue evicted the Job's Workload for its PodsReady timeout (only that counts here)."""
    found = workload(kube, manifest) or {}
    return int((found.get("status", {}).get("requeueState") or {}).get("count") or 0)


def test_quota_a_pool_cannot_fill_is_given_back_and_requeued_through_wait_for_pods_ready(
    kube: Kube, controller: Kueue
) -> None:
    """Kueue counts quota, not nodes: a quota of 3 on training, whose one node here has 2 GPUs and which
    nothing scales, admits a third one-GPU Job whose pod stays Pending. waitForPodsReady evicts it after
    its timeout (suspended, pod gone, quota given back) and requeues it after a backoff, again and again;
    the two Jobs that run are never touched. The platform's timeout and backoff are shortened here."""
    quick = world.quick_pods_ready(controller.values, f"{PODS_READY_SECONDS}s", BACKOFF_SECONDS)
    quotas = {"vision": {"training": {"nominalQuota": 3}}}
    with teams(kube, controller, quotas) as job, reconfigured(kube, controller, quick) as kueue:
        jobs = [job(f"r{i}", "vision", "training") for i in range(3)]
        for manifest in jobs:
            submit(kube, manifest)
        for manifest in jobs:
            name = manifest["metadata"]["name"]
            wait(f"{name} admitted", lambda m=manifest: not suspended(kube, m), ADMIT_SECONDS, kueue)
        (starved,) = wait(
            "one admitted Job's pod that no node can take",
            lambda: [m for m in jobs if live_pods(kube, m) and not bound_pods(kube, m)],
            ADMIT_SECONDS,
            kueue,
        )

        def given_back() -> bool:
            evicted = condition(workload(kube, starved), "Evicted")
            return (
                requeues(kube, starved) == 1
                and evicted is not None
                and (evicted["status"], evicted["reason"]) == ("True", "PodsReadyTimeout")
                and suspended(kube, starved)
                and not live_pods(kube, starved)
            )

        wait("the starved Job evicted and suspended", given_back, PODS_READY_SECONDS + ADMIT_SECONDS, kueue)
        wait(
            "the starved Job admitted again after its backoff, and evicted again",
            lambda: requeues(kube, starved) >= 2,
            BACKOFF_SECONDS + PODS_READY_SECONDS + ADMIT_SECONDS,
            kueue,
        )
        for manifest in jobs:
            if manifest is not starved:
                assert (
                    requeues(kube, manifest) == 0
                    and not suspended(kube, manifest)
                    and bound_pods(kube, manifest)
                )


def _as_declared(live: Any, declared: Any) -> Any:
    """``live`` cut to the shape of ``declared``, as pulumi-kubernetes prunes the live object before its
    diff (keys it declared, the first items of each list it declared)."""
    if isinstance(declared, dict) and isinstance(live, dict):
        return {k: _as_declared(live[k], v) for k, v in declared.items() if k in live}
    if isinstance(declared, list) and isinstance(live, list):
        return [_as_declared(item, want) for item, want in zip(live, declared, strict=False)]
    return live


def test_the_platforms_kueue_objects_are_stored_as_declared_so_a_preview_shows_no_change(
    kube: Kube, controller: Kueue
) -> None:
    """Through Kueue's real defaulting and validating webhooks, each flavor, class and queue the dev stack
    declares is stored with exactly the values it was given: nothing a second preview would show."""
    settings, run = platform_run({})
    with declared(kube, controller, settings, run):
        for manifest in world.objects(run):
            meta = manifest["metadata"]
            live = kube.resource(manifest).get(name=meta["name"], namespace=meta.get("namespace")).to_dict()
            assert _as_declared(live, manifest) == manifest, manifest["kind"]


TEAM_STACKS = {
    # The Python example (GpuJob from the package's Python API) and the YAML one (through the eks-gpu
    # package the CLI runs), each submitting to its team's LocalQueue on the dev platform.
    "python": Consumer(STACKS / "team-job", "training", "finetune"),
    "yaml": Consumer(STACKS / "team-job-yaml", "training", "sweep"),
}


@pytest.mark.parametrize("language", sorted(TEAM_STACKS))
def test_a_teams_stack_is_admitted_runs_on_its_pool_and_kueues_changes_are_no_diff(
    kube: Kube, controller: Kueue, platform: Stack, language: str, tmp_path: Path
) -> None:
    """``pulumi up`` of a team's stack: Kueue admits its queued GpuJob, the pods run on the pool, the
    Job completes; then Kueue's labels, annotations and unsuspend are no change to a second preview."""
    consumer = TEAM_STACKS[language]
    settings, run = platform_run({})  # the dev stack's teams: those of the placement the stand-in exports
    with declared(kube, controller, settings, run):
        stack = fresh_stack(kube, _runs_where_a_user_would(consumer, tmp_path))
        try:
            stack.up()  # pulumi-kubernetes waits while the Job is queued, then until it is Complete
            outputs = stack.outputs()
            manifest = {"apiVersion": "batch/v1", "kind": "Job"}
            manifest["metadata"] = {"name": outputs["job"], "namespace": outputs["namespace"]}
            admitted = condition(workload(kube, manifest), "Admitted")
            assert admitted is not None and admitted["status"] == "True", controller.log_tail(20)
            pods = kube.pods(outputs["namespace"], f"app.kubernetes.io/name={consumer.app}")
            assert pods and {p.status.phase for p in pods} == {"Succeeded"}
            assert {pool_of(kube, p.spec.node_name) for p in pods} == {consumer.pool}
            stack.preview("--expect-no-changes")
        finally:
            stack.destroy()
