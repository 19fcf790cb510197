"""The pack's Kueue rules, on the dev platform as the engine shows it and on that stack broken one way at a time."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from infra.tooling.offline import run_project
from infra.tooling.policy_rules import check, declared_contracts
from infra.tooling.preview import policy_input
from infra.workloads.placement import DEFAULT_PLACEMENT
from infra.workloads.queues import PRIORITY_LABEL, QUEUE_LABEL

ROOT = Path(__file__).resolve().parents[2]
KUEUE_RULES = {
    "queued-job-declared-queue",
    "cluster-queue-scoped",
    "flavor-quota-reachable",
    "priority-class-declared",
}
CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
JOB = "kubernetes:batch/v1:Job"


@pytest.fixture(scope="module")
def dev() -> list:
    resources, _ = policy_input("eks-gpu-platform", "dev", run_project(ROOT, "dev"))
    return resources


def _found(resources, rule: str) -> list[str]:
    contracts = declared_contracts(resources)
    return [v.message for v in check(resources, contracts) if v.rule == rule]


def _edited(resources, kind: str, name: str, edit) -> list:
    out = []
    for t, n, p in resources:
        if t.endswith(f":{kind}") and (p.get("metadata") or {}).get("name") == name:
            p = copy.deepcopy(p)
            edit(p)
        out.append((t, n, p))
    return out


def _job(namespace: str, **labels: str) -> tuple:
    return (JOB, "train", {"metadata": {"namespace": namespace, "labels": labels}, "spec": {}})


def test_the_dev_platform_passes_every_kueue_rule(dev) -> None:
    assert [v for v in check(dev, declared_contracts(dev)) if v.rule in KUEUE_RULES] == []


def test_a_cluster_queue_without_namespace_selector_is_refused(dev) -> None:
    broken = _edited(dev, "ClusterQueue", "vision", lambda p: p["spec"].pop("namespaceSelector"))
    (message,) = _found(broken, "cluster-queue-scoped")
    assert message.startswith("has no spec.namespaceSelector, so it admits no namespace's Jobs")


def test_a_cluster_queue_selecting_every_namespace_is_refused(dev) -> None:
    everything = _edited(dev, "ClusterQueue", "vision", lambda p: p["spec"].update(namespaceSelector={}))
    (message,) = _found(everything, "cluster-queue-scoped")
    assert message.startswith("has spec.namespaceSelector {}, which selects every namespace")


def test_a_cluster_queue_naming_an_undeclared_flavor_is_refused(dev) -> None:
    def rename(p):
        p["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "gpu-big"

    (message,) = _found(_edited(dev, "ClusterQueue", "vision", rename), "cluster-queue-scoped")
    assert (
        "names flavor(s) ['gpu-big'] that the stack does not declare (declared: inference, training)"
        in message
    )


def test_quota_promised_beyond_what_the_pool_reaches_is_refused(dev) -> None:
    def more(p):  # vision's inference quota 2 -> 7: with speech's 2, 9 slices of the pool's 8
        p["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 7

    (message,) = _found(_edited(dev, "ClusterQueue", "vision", more), "flavor-quota-reachable")
    assert message.startswith(
        "is promised 9 nvidia.com/gpu by the ClusterQueues' nominalQuota, but pool 'inference' can reach only 8"
    )


def test_a_smaller_pool_makes_the_same_quota_unreachable(dev) -> None:
    """Training: 2 nodes x 2 GPUs = 4 = 2 + 2 promised; one node less and the promise is broken."""
    shrunk = [
        (t, n, {**p, "scalingConfig": {**p["scalingConfig"], "maxSize": 1}})
        if t == "aws:eks/nodeGroup:NodeGroup" and p.get("labels", {}).get("eks-gpu/pool") == "training"
        else (t, n, p)
        for t, n, p in dev
    ]
    (message,) = _found(shrunk, "flavor-quota-reachable")
    assert "pool 'training' can reach only 2" in message


def test_a_queued_job_naming_an_undeclared_queue_is_refused(dev) -> None:
    assert _found([*dev, _job("vision", **{QUEUE_LABEL: "default"})], "queued-job-declared-queue") == []
    (message,) = _found([*dev, _job("vision", **{QUEUE_LABEL: "gpu"})], "queued-job-declared-queue")
    assert message.startswith("names queue 'gpu' in namespace 'vision', which no LocalQueue declares")
    assert "speech/default, vision/default" in message
    assert _found([*dev, _job("ml", **{QUEUE_LABEL: "default"})], "queued-job-declared-queue")


def test_a_consumer_stack_is_judged_by_the_queues_its_placement_lists(dev) -> None:
    (stack,) = [(t, n, p) for t, n, p in dev if t == "pulumi:pulumi:Stack"]
    consumer = [stack, _job("speech", **{QUEUE_LABEL: "team"})]
    (message,) = _found(consumer, "queued-job-declared-queue")
    assert "names queue 'team' in namespace 'speech'" in message
    assert (
        _found([_job("speech", **{QUEUE_LABEL: "team"})], "queued-job-declared-queue") == []
    )  # nothing to judge by


def test_a_priority_class_nobody_declares_is_refused(dev) -> None:
    assert _found([*dev, _job("vision", **{PRIORITY_LABEL: "high"})], "priority-class-declared") == []
    (message,) = _found([*dev, _job("vision", **{PRIORITY_LABEL: "urgent"})], "priority-class-declared")
    assert (
        message
        == "uses priority class 'urgent', which is not declared (declared: high, low, normal); use one of them"
    )


def test_without_kueue_nothing_is_judged() -> None:
    assert [
        v
        for v in check([_job("x", **{QUEUE_LABEL: "q", PRIORITY_LABEL: "p"})], DEFAULT_PLACEMENT)
        if v.rule in KUEUE_RULES
    ] == []


def test_the_preview_shows_each_teams_quota_and_each_pools_promise(dev) -> None:
    from infra.tooling.queue_rules import quota_lines

    lines = quota_lines(dev, declared_contracts(dev)[0])
    assert "  vision (namespace vision): inference 2 (lendingLimit 1); training 2 (borrowingLimit 2)" in lines
    assert "  pool inference: 4 promised of 8 it can reach" in lines  # slices: 2 nodes x 1 GPU x 4
    assert "  pool training: 4 promised of 4 it can reach" in lines
    assert quota_lines([_job("x")], DEFAULT_PLACEMENT) == []
