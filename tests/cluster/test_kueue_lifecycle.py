"""Kueue over a team's life, decided by the real controller v0.17.0 (issue 35 item 4): the platform's objects
stored as declared, a team's own stack through ``pulumi up`` and a second preview, Kueue down, and quota a pool
cannot fill given back through ``waitForPodsReady``.

The same world and controller as tests/cluster/test_kueue.py (its helpers), in a module of its own so the two
run on two workers side by side (docs/benchmarks.md, "the fast loop").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from localcluster import cluster as local
from localcluster import kueue_world as world
from localcluster.karpenter import platform_run
from localcluster.kube import Kube
from localcluster.kueue import Kueue, wait
from localcluster.pulumi_cli import Stack
from tests.cluster.test_kueue import (
    ADMIT_SECONDS,
    admitted_and_running,
    bound_pods,
    condition,
    declared,
    live_pods,
    pool_of,
    still_waiting,
    submit,
    suspended,
    teams,
    workload,
)
from tests.cluster.test_pulumi_consumers import STACKS, Consumer, _runs_where_a_user_would, fresh_stack


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

        def settled() -> list[Any]:
            """The one Job whose pod no node takes, once the scheduler has bound the other two (before
            that, a pod not bound *yet* would look the same)."""
            pending = [m for m in jobs if live_pods(kube, m) and not bound_pods(kube, m)]
            return pending if len(pending) == 1 and sum(bool(bound_pods(kube, m)) for m in jobs) == 2 else []

        (starved,) = wait("one admitted Job's pod that no node can take", settled, ADMIT_SECONDS, kueue)

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
