"""Admitted by Kueue, provisioned by the real autoscalers: a team's queued Job scales its pool from zero.

Kueue admits against quota, not nodes; the Cluster Autoscaler and Karpenter see only the pending pods of
the Jobs it has admitted. One platform run: the dev stack's node-group pools and the Karpenter pools of
``localcluster.karpenter.POOLS``, with the dev stack's teams given quota on ``training`` (a node group,
scaled by the real autoscaler against moto) and ``burst`` (a NodePool, provisioned by Karpenter's real
core). The GPU pools start at zero (the mixed-pools world, tests/cluster/test_mixed_pools.py), Kueue is
the real controller as ``tests/cluster/test_kueue.py`` runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from infra.tooling.offline import PLATFORM_ROOT
from infra.workloads.placement import POOL_LABEL
from localcluster import cluster as local
from localcluster import karpenter
from localcluster import kueue_world as world
from localcluster.autoscaling import Autoscaling
from localcluster.kube import Kube
from localcluster.kueue import Kueue, running, wait
from tests.cluster.autoscaler_run import INFERENCE, TRAINING, hold, scenario
from tests.cluster.test_karpenter import core  # noqa: F401  (fixture: Karpenter's core on this module's run)
from tests.cluster.test_kueue import ADMIT_SECONDS, bound_pods, suspended, workload
from tests.cluster.test_mixed_pools import NODE_GROUP_LABEL, PLACED_SECONDS, namespace  # noqa: F401  (fixture)

QUOTAS = {"vision": {"training": {"nominalQuota": 2}, "burst": {"nominalQuota": 1}}}


@pytest.fixture(scope="module")
def platform() -> tuple[Any, Any]:
    """The dev stack with Karpenter's pools and the teams' quotas on a node group and a NodePool."""
    return karpenter.platform_run(karpenter.POOLS, top={"teams": world.teams_config(QUOTAS)})


@pytest.fixture(scope="module")
def queues(kube: Kube, platform: tuple[Any, Any]) -> Iterator[tuple[Kueue, Callable[..., dict[str, Any]]]]:
    """Kueue configured by the run, with the run's queues and flavors; yields it and the Job builder."""
    settings, run = platform
    with (
        running(kube, world.chart_values(run), local.KUBECONFIG) as controller,
        world.queues(kube, settings, run, controller) as job,
    ):
        yield controller, job


@pytest.fixture
def both(kube: Kube, platform: tuple[Any, Any], namespace: str) -> Iterator[Autoscaling]:  # noqa: F811
    """The autoscaler (moto seeded from the same run) beside Karpenter's core, started before the
    scenario's Jobs (their pods come at Kueue's admission); the GPU pools at zero and no NodeClaim
    left after it (``namespace``, the mixed-pool scenarios' fixture)."""
    with scenario(kube, platform[1], PLATFORM_ROOT, namespace) as autoscaler:
        yield autoscaler


@pytest.fixture
def jobs(
    kube: Kube,
    queues: tuple[Kueue, Callable[..., dict[str, Any]]],
    both: Autoscaling,
) -> Iterator[Callable[..., dict[str, Any]]]:
    """The Job builder; after the scenario its Jobs and pods go while their nodes still exist."""
    yield queues[1]
    batch = client.BatchV1Api(kube.api)
    for team in world.NAMESPACES.values():
        batch.delete_collection_namespaced_job(team, propagation_policy="Background")
        kube.core.delete_collection_namespaced_pod(team, grace_period_seconds=0)
    wait("the scenario's pods gone", lambda: not any(kube.pods(ns) for ns in world.NAMESPACES.values()), 60)


def _admitted_and_bound(kube: Kube, controller: Kueue, manifest: dict[str, Any], run: Autoscaling) -> Any:
    """Wait until Kueue unsuspends the Job and its pod binds on a node a provisioner made; the node."""
    name = manifest["metadata"]["name"]
    before = {n.metadata.name for n in kube.nodes()}
    wait(f"{name} admitted", lambda: not suspended(kube, manifest), ADMIT_SECONDS, controller)

    def bound() -> Any:
        run.check()
        return bound_pods(kube, manifest)

    (pod,) = karpenter.wait_until(f"{name}'s pod bound", bound, PLACED_SECONDS)
    assert pod.spec.node_name not in before, (
        f"{name}'s pod went to a node that was there before its admission"
    )
    return kube.core.read_node(pod.spec.node_name)


def _grown(run: Autoscaling) -> dict[str, int]:
    """The GPU node groups above zero after five autoscaler loops (the system group is not the scenario's)."""
    return {g: n for g, n in hold(run).items() if g in (INFERENCE, TRAINING) and n}


def _flavor(kube: Kube, manifest: dict[str, Any]) -> str:
    (assignment,) = workload(kube, manifest)["status"]["admission"]["podSetAssignments"]
    return assignment["flavors"]["nvidia.com/gpu"]


def test_an_admitted_job_scales_its_node_group_pool_from_zero_through_the_autoscaler(
    kube: Kube,
    queues: tuple[Kueue, Any],
    jobs: Callable[..., dict[str, Any]],
    both: Autoscaling,
) -> None:
    manifest = jobs("train", "vision", "training", gpus=2)
    kube.apply(manifest)
    node = _admitted_and_bound(kube, queues[0], manifest, both)
    assert _flavor(kube, manifest) == "training"
    assert node.metadata.labels[POOL_LABEL] == "training" and NODE_GROUP_LABEL in node.metadata.labels
    assert _grown(both) == {TRAINING: 1}  # one node, held over five loops
    assert karpenter.nodeclaims(kube) == []


def test_an_admitted_job_scales_its_karpenter_pool_from_zero_through_karpenter(
    kube: Kube,
    queues: tuple[Kueue, Any],
    jobs: Callable[..., dict[str, Any]],
    both: Autoscaling,
    core: karpenter.Controller,  # noqa: F811
) -> None:
    manifest = jobs("burst", "vision", "burst")
    kube.apply(manifest)
    node = _admitted_and_bound(kube, queues[0], manifest, both)
    assert _flavor(kube, manifest) == "burst"
    assert node.metadata.labels[POOL_LABEL] == "burst" and NODE_GROUP_LABEL not in node.metadata.labels
    assert len(karpenter.nodeclaims(kube, "burst")) == 1
    assert _grown(both) == {}  # no autoscaler group grew


def test_beyond_quota_a_job_scales_nothing(
    kube: Kube,
    queues: tuple[Kueue, Any],
    jobs: Callable[..., dict[str, Any]],
    both: Autoscaling,
) -> None:
    """A Job Kueue keeps suspended has no pods: no provisioner sees it, so no node is bought for it."""
    manifest = jobs("greedy", "vision", "training", gpus=2)
    too_many = jobs("greedy-too", "vision", "training", gpus=1)
    kube.apply(manifest)
    _admitted_and_bound(kube, queues[0], manifest, both)
    kube.apply(too_many)
    assert _grown(both) == {TRAINING: 1}
    assert (
        suspended(kube, too_many)
        and kube.pods(too_many["metadata"]["namespace"], "job-name=greedy-too") == []
    )
    assert karpenter.nodeclaims(kube) == []
