"""Where GPU pods land, decided by the real kube-scheduler on the dev stack's mirrored nodes.

The pod specs are what ``place_pod_spec`` emits for the contract the dev
platform exports, so these tests show the contract and the components working
together on real Kubernetes.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.tooling.offline import platform_contract
from infra.workloads.placement import POOL_LABEL, Placement
from infra.workloads.podspec import place_pod_spec
from localcluster.kube import Kube, wait_for

NAMESPACE = "placement"


@pytest.fixture
def namespace(kube: Kube):
    kube.namespace(NAMESPACE, pod_security="baseline")  # the plain pods are not ours
    yield NAMESPACE
    kube.delete_namespace(NAMESPACE)


@pytest.fixture(scope="module")
def contract() -> Placement:
    return Placement.from_dict(platform_contract("dev"))


def _pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"test": name}},
        "spec": spec,
    }


def _container() -> dict[str, Any]:
    return {"name": "model", "image": "registry.invalid/model:1", "securityContext": {"runAsUser": 1000}}


def _bound_or_unschedulable(kube: Kube, names: list[str]) -> dict[str, str | None]:
    """Pod -> its node, or None once the scheduler has said Unschedulable; waits for every verdict."""

    def verdicts() -> dict[str, str | None] | None:
        found: dict[str, str | None] = {}
        for pod in kube.pods(NAMESPACE):
            if pod.metadata.name not in names:
                continue
            if pod.spec.node_name:
                found[pod.metadata.name] = pod.spec.node_name
            elif any(c.reason == "Unschedulable" for c in pod.status.conditions or []):
                found[pod.metadata.name] = None
        return found if len(found) == len(names) else None

    return wait_for(f"scheduler verdicts for {names}", verdicts, timeout=60)


def _pool_of(kube: Kube, node: str | None) -> str | None:
    if node is None:
        return None
    labels = kube.core.read_node(node).metadata.labels
    if POOL_LABEL in labels:
        return labels[POOL_LABEL]
    return "system" if labels.get("node-role") == "system" else f"unexpected node {node}"


def test_four_one_gpu_pods_share_a_time_sliced_node_and_a_fifth_waits(
    kube: Kube, namespace: str, contract: Placement
) -> None:
    inference = contract.pool("inference")
    assert inference.slots_per_node == 4  # one T4G, time-sliced 4 ways, on one mirrored node
    names = [f"slice-{i}" for i in range(5)]
    for name in names:
        spec = place_pod_spec({"containers": [_container()]}, contract, gpus=1, pool="inference")
        kube.apply(_pod(name, spec), namespace)
    placed = _bound_or_unschedulable(kube, names)
    nodes = [n for n in placed.values() if n]
    assert len(nodes) == 4 and len(set(nodes)) == 1
    assert _pool_of(kube, nodes[0]) == "inference"
    assert list(placed.values()).count(None) == 1


def test_a_pod_without_the_toleration_never_lands_on_a_gpu_node(kube: Kube, namespace: str) -> None:
    plain = {"containers": [_container()]}
    selected = {"containers": [_container()], "nodeSelector": {"GPU": "true"}}  # selector, no toleration
    kube.apply(_pod("plain", plain), namespace)
    kube.apply(_pod("selected", selected), namespace)
    placed = _bound_or_unschedulable(kube, ["plain", "selected"])
    assert _pool_of(kube, placed["plain"]) == "system"
    assert placed["selected"] is None


@pytest.mark.parametrize(("pool", "gpus"), [("inference", 1), ("training", 2)])
def test_a_placed_pod_lands_on_the_pool_it_asked_for(
    kube: Kube, namespace: str, contract: Placement, pool: str, gpus: int
) -> None:
    spec = place_pod_spec({"containers": [_container()]}, contract, gpus=gpus, pool=pool)
    kube.apply(_pod("pinned", spec), namespace)
    placed = _bound_or_unschedulable(kube, ["pinned"])
    assert _pool_of(kube, placed["pinned"]) == pool
