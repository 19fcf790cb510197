"""Karpenter pools, decided by Karpenter's real core on the local control plane.

The NodePools and NodeOverlays are the ones the platform program declares for the dev stack's
config with two Karpenter pools (``localcluster.karpenter.POOLS``), taken from its registrations
and applied to the CRDs of the pinned version; the controller is the pinned core with its kwok
cloud provider, its instance types generated from the platform's table, its feature gates from the
pinned chart rendered with the program's values. The test plays the NVIDIA device plugin on the
nodes Karpenter brings (it advertises what the program's plugin config says for the node's label).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from infra.platform.instance_types import ARM_NVIDIA
from infra.platform.nodepool import CAPACITY_TYPE_LABEL
from infra.workloads.durations import duration_seconds
from infra.workloads.placement import POOL_LABEL, Placement
from infra.workloads.podspec import place_pod_spec
from localcluster import karpenter
from localcluster.cluster import KUBECONFIG, RUN, free_port
from localcluster.kube import Kube

NAMESPACE = "karpenter-scenarios"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
NODECLAIMS = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim"}


@pytest.fixture(scope="module")
def platform() -> tuple[Any, Any]:
    return karpenter.platform_run()


@pytest.fixture(scope="module")
def contract(platform: tuple[Any, Any]) -> Placement:
    return platform[0].contract


def _nodeclaims(kube: Kube, pool: str | None = None) -> list[Any]:
    return karpenter.nodeclaims(kube, pool)


def _no_nodeclaims(kube: Kube) -> bool:
    return not _nodeclaims(kube)


@pytest.fixture(scope="module")
def core(kube: Kube, platform: tuple[Any, Any]) -> Iterator[karpenter.Controller]:
    """CRDs, kwok's node class, the declared NodePools and NodeOverlays, the controller, the device plugin."""
    if not karpenter.BINARY.is_file():
        pytest.fail(f"{karpenter.BINARY} is not built: run localcluster/build karpenter")
    _, run = platform
    objects = karpenter.install(kube, run)
    controller = karpenter.start(kube, run, KUBECONFIG, RUN / "karpenter", (free_port(), free_port()))
    karpenter.delete_nodeclaims(kube, controller)  # a killed session's, on a control plane kept running
    plugin = karpenter.DevicePlugin(kube, run)
    try:
        yield controller
    finally:
        try:
            karpenter.uninstall(kube, objects, controller)
        finally:
            plugin.stop()


@pytest.fixture
def namespace(kube: Kube, core: karpenter.Controller) -> Iterator[str]:
    kube.namespace(NAMESPACE, pod_security="baseline")
    yield NAMESPACE
    kube.delete_namespace(NAMESPACE, timeout=120, wait=False)
    for claim in _nodeclaims(kube):  # the next scenario starts with no Karpenter node
        kube.resource(NODECLAIMS).delete(name=claim.metadata.name)
    karpenter.wait_until("the scenario's nodes to go", lambda: _no_nodeclaims(kube), 120, core)


def _pod(contract: Placement, name: str, pool: str, *, tolerate: bool = True) -> dict[str, Any]:
    container = {"name": "model", "image": "registry.invalid/model:1", "securityContext": {"runAsUser": 1000}}
    spec = place_pod_spec({"containers": [container]}, contract, gpus=1, pool=pool)
    if not tolerate:
        spec["tolerations"] = [t for t in spec["tolerations"] if t["key"] != contract.key]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _bound(kube: Kube, names: list[str], core: karpenter.Controller) -> dict[str, str]:
    """Pod -> node, once the scheduler has bound every one of ``names``."""

    def placed() -> dict[str, str] | None:
        nodes = {p.metadata.name: p.spec.node_name for p in kube.pods(NAMESPACE) if p.metadata.name in names}
        return nodes if len(nodes) == len(names) and all(nodes.values()) else None

    return karpenter.wait_until(f"{names} bound to nodes", placed, 120, core)


def _karpenter_refused(kube: Kube, pods: list[str], core: karpenter.Controller) -> tuple[str, str]:
    """Karpenter's own verdict on one of ``pods`` it cannot place: (pod, its FailedScheduling event's message)."""

    def verdict() -> tuple[str, str] | None:
        said = [
            (e.involved_object.name, e.message)
            for e in kube.core.list_namespaced_event(NAMESPACE).items
            if e.involved_object.name in pods
            and e.reason == "FailedScheduling"
            and "Failed to schedule pod" in (e.message or "")
        ]
        return said[0] if said else None

    return karpenter.wait_until(f"Karpenter's verdict on one of {pods}", verdict, 120, core)


def _cheapest(pool_types: list[str]) -> str:
    return min(pool_types, key=lambda t: ARM_NVIDIA[t].usd_per_hour or 0.0)


def test_a_one_gpu_pod_gets_the_cheapest_fitting_type_of_its_pool(
    kube: Kube, namespace: str, contract: Placement, core: karpenter.Controller
) -> None:
    """Cheaper GPU types are offered (g5g.xlarge, and the x86 g4dn.xlarge): only the pool's requirements
    keep Karpenter on the pool's own g5g.2xlarge. (Its arm64 follows from the instance-type
    requirement, so no separate architecture assertion could fail.)"""
    offered = {t["name"]: t["offerings"][0]["Price"] for t in karpenter.instance_types()}
    pool_types = karpenter.POOLS["batch"]["instanceTypes"]
    assert min(offered, key=offered.get) not in pool_types  # else the next assertion could not fail
    kube.apply(_pod(contract, "one", "batch"), namespace)
    node = kube.core.read_node(_bound(kube, ["one"], core)["one"])
    labels, taints = node.metadata.labels, node.spec.taints or []
    assert labels[INSTANCE_TYPE] == _cheapest(karpenter.POOLS["batch"]["instanceTypes"])
    assert labels[CAPACITY_TYPE_LABEL] == "on-demand"  # the pool allows on-demand only
    assert labels[POOL_LABEL] == "batch" and labels[contract.key] == contract.value
    assert {(t.key, t.value, t.effect) for t in taints} >= {(contract.key, contract.value, "NoSchedule")}
    assert len(_nodeclaims(kube)) == 1


def test_four_pods_share_a_time_sliced_spot_node_and_a_fifth_gets_a_second(
    kube: Kube, namespace: str, contract: Placement, core: karpenter.Controller
) -> None:
    assert contract.pool("burst").slots_per_node == 4
    first = [f"slice-{i}" for i in range(4)]
    for name in first:
        kube.apply(_pod(contract, name, "burst"), namespace)
    nodes = set(_bound(kube, first, core).values())
    assert len(nodes) == 1 and len(_nodeclaims(kube, "burst")) == 1
    node = kube.core.read_node(nodes.pop())
    assert node.metadata.labels[CAPACITY_TYPE_LABEL] == "spot"  # the pool allows both: spot is cheaper
    kube.apply(_pod(contract, "slice-4", "burst"), namespace)
    fifth = _bound(kube, ["slice-4"], core)["slice-4"]
    assert fifth != node.metadata.name and len(_nodeclaims(kube, "burst")) == 2


def test_a_gpu_pod_without_the_toleration_gets_no_node(
    kube: Kube, namespace: str, contract: Placement, core: karpenter.Controller
) -> None:
    kube.apply(_pod(contract, "untolerated", "batch", tolerate=False), namespace)
    _, verdict = _karpenter_refused(kube, ["untolerated"], core)
    assert "did not tolerate taint" in verdict and contract.key in verdict
    assert _nodeclaims(kube) == []


def test_the_pool_gpu_limit_allows_no_node_beyond_max_size(
    kube: Kube, namespace: str, contract: Placement, core: karpenter.Controller
) -> None:
    most = karpenter.POOLS["batch"]["maxSize"]  # one whole GPU a node: the limit is maxSize GPUs
    names = [f"whole-{i}" for i in range(most + 1)]
    for name in names:
        kube.apply(_pod(contract, name, "batch"), namespace)

    def settled() -> dict[str, str | None] | None:
        """Pod -> node once all but one are bound and Karpenter said the last one exceeds the limit."""
        placed = {p.metadata.name: p.spec.node_name for p in kube.pods(NAMESPACE) if p.metadata.name in names}
        left = [name for name, node in placed.items() if not node]
        if len(placed) != len(names) or len(left) != 1:
            return None
        events = kube.core.list_namespaced_event(NAMESPACE).items
        said = [
            e for e in events if e.involved_object.name == left[0] and "exceed limits" in (e.message or "")
        ]
        return placed if said else None

    placed = karpenter.wait_until(
        "all but one pod placed, the last refused for the limit", settled, 120, core
    )
    assert len({node for node in placed.values() if node}) == most
    assert len(_nodeclaims(kube, "batch")) == most


def test_an_empty_node_goes_after_the_delay(
    kube: Kube, namespace: str, contract: Placement, core: karpenter.Controller
) -> None:
    for name in ("kept", "gone"):
        kube.apply(_pod(contract, name, "batch"), namespace)
    nodes = _bound(kube, ["kept", "gone"], core)
    assert nodes["kept"] != nodes["gone"]

    def claims_of_both() -> dict[str, str] | None:
        found = {c.status.nodeName: c.metadata.name for c in _nodeclaims(kube, "batch") if c.status.nodeName}
        return found if set(nodes.values()) <= set(found) else None

    claim_of = karpenter.wait_until("both NodeClaims registered", claims_of_both, 60, core)
    kube.core.delete_namespaced_pod("gone", namespace, grace_period_seconds=0)
    emptied = time.monotonic()
    karpenter.wait_until(
        "the empty node consolidated",
        lambda: claim_of[nodes["gone"]] not in _names(_nodeclaims(kube)),
        180,
        core,
    )
    delay = duration_seconds(karpenter.POOLS["batch"]["karpenter"]["consolidateAfter"])
    assert time.monotonic() - emptied >= delay  # never before the pool's consolidateAfter
    # No "the busy node stays": one whole-GPU pod per node of the pool's cheapest type, so it would
    # stay under WhenEmptyOrUnderutilized too; such an assertion could not fail.


def _names(claims: list[Any]) -> set[str]:
    return {c.metadata.name for c in claims}


def test_the_ec2_node_class_passes_the_aws_providers_schema(kube: Kube, platform: tuple[Any, Any]) -> None:
    """Server-side dry-run of each declared EC2NodeClass against the provider's CRD at the pinned version."""
    karpenter.apply_crds(kube, karpenter.aws_crds())
    classes = karpenter.declared(platform[1], "EC2NodeClass")
    assert {c["metadata"]["name"] for c in classes} == {"gpu-burst", "gpu-batch"}
    for node_class in classes:
        kube.apply(node_class, dry_run=True)
    broken = {**classes[0], "spec": {**classes[0]["spec"], "metadataOptions": {"httpTokens": "sometimes"}}}
    with pytest.raises(ApiException) as refused:  # the schema is really checked
        kube.apply(broken, dry_run=True)
    assert refused.value.status == 422
