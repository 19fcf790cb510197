"""The pack's ``karpenter-pool-routing``: in a cluster with both kinds of pool, no GPU workload may be
able to land on both (Cluster Autoscaler and Karpenter would each launch a node for it). Decision 0098."""

from __future__ import annotations

from typing import Any

import pytest

from infra.tooling.policy_rules import check, karpenter_pool_routing
from infra.workloads.placement import PROVISIONER_TAINT_KEY, GpuPool, Placement
from infra.workloads.podspec import place_pod_spec
from localcluster import karpenter as pins

MIXED = Placement(
    pools=(
        GpuPool("inference", 1, 4),
        GpuPool("training", 2),
        GpuPool("burst", 1, 4, provisioner="karpenter"),
        GpuPool("batch", 4, provisioner="karpenter"),
    )
)
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
POD = {"containers": [{"name": "m", "image": "i"}]}


def _deployment(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"selector": {}, "template": {"spec": pod}},
    }


def _hand_written(*tolerations: dict[str, str], **selector: str) -> dict[str, Any]:
    """A GPU pod placed by hand: the contract's selector and toleration plus ``tolerations``."""
    return {
        "containers": [{"name": "m", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
        "nodeSelector": {**MIXED.node_selector(), **selector},
        "tolerations": [MIXED.toleration(), *tolerations],
    }


def test_a_gpu_pod_tolerating_every_taint_and_naming_no_pool_is_flagged_naming_both_kinds() -> None:
    (message,) = karpenter_pool_routing(DEPLOYMENT, _deployment(_hand_written({"operator": "Exists"})), MIXED)
    assert message.startswith(
        "spec.template.spec can land on node-group pool(s) ['inference', 'training'] and on Karpenter pool(s) "
        "['batch', 'burst']: Cluster Autoscaler and Karpenter would each launch a GPU node for it"
    )
    assert ("karpenter-pool-routing", "mandatory") in {
        (v.rule, v.level)
        for v in check([(DEPLOYMENT, "raw", _deployment(_hand_written({"operator": "Exists"})))], MIXED)
    }


def test_tolerating_the_provisioner_without_naming_a_pool_is_flagged_too() -> None:
    toleration = MIXED.provisioner_toleration()
    assert karpenter_pool_routing(DEPLOYMENT, _deployment(_hand_written(toleration)), MIXED) != []
    named = _hand_written(toleration, **{"eks-gpu/pool": "burst"})
    assert karpenter_pool_routing(DEPLOYMENT, _deployment(named), MIXED) == []


def test_pods_placed_by_the_library_pass() -> None:
    for pool in (None, "training", "burst"):
        pod = place_pod_spec(POD, MIXED, gpus=1, pool=pool)
        assert karpenter_pool_routing(DEPLOYMENT, _deployment(pod), MIXED) == []
    assert karpenter_pool_routing(DEPLOYMENT, _deployment(_hand_written()), MIXED) == []  # node groups only


def test_a_cluster_of_one_kind_is_never_flagged() -> None:
    one_kind = Placement(pools=MIXED.pools[2:])
    assert (
        karpenter_pool_routing(DEPLOYMENT, _deployment(_hand_written({"operator": "Exists"})), one_kind) == []
    )


@pytest.fixture(scope="module")
def nodepools() -> list[dict[str, Any]]:
    return pins.declared(pins.platform_run()[1], "NodePool")


def test_the_platforms_own_nodepools_pass_and_one_without_the_taint_is_flagged(
    nodepools: list[dict[str, Any]],
) -> None:
    for pool in nodepools:
        assert karpenter_pool_routing(NODEPOOL, pool, MIXED) == []
    bare = {**nodepools[0], "spec": {**nodepools[0]["spec"]}}
    template = bare["spec"]["template"]
    spec = {
        **template["spec"],
        "taints": [t for t in template["spec"]["taints"] if t["key"] != PROVISIONER_TAINT_KEY],
    }
    bare["spec"]["template"] = {**template, "spec": spec}
    (message,) = karpenter_pool_routing(NODEPOOL, bare, MIXED)
    assert message.startswith(
        "is a GPU NodePool in a cluster that also has node-group pools ['inference', 'training'], without the taint"
    )


def test_the_pack_learns_the_pools_provisioners_from_the_stacks_placement_output() -> None:
    """As a consumer stack that exports the platform's placement, or the platform stack itself, declares it."""
    raw = (DEPLOYMENT, "raw", _deployment(_hand_written({"operator": "Exists"})))
    exported = ("pulumi:pulumi:Stack", "consumer-dev", {"placement": MIXED.to_dict()})
    assert [v.rule for v in check([exported, raw]) if v.rule == "karpenter-pool-routing"] == [
        "karpenter-pool-routing"
    ]
    assert [v.rule for v in check([raw]) if v.rule == "karpenter-pool-routing"] == []  # GPU=true, no pools
