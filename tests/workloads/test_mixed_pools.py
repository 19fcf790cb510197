"""Node groups and Karpenter pools in one cluster: every GPU pod is one provisioner's (decision 0098).

Where a cluster has both kinds of pool, Karpenter's nodes carry ``eks-gpu/provisioner=karpenter``;
only a pod that names a Karpenter pool tolerates it, and a pod that names no pool is narrowed to the
node-group pools, so Cluster Autoscaler and Karpenter never both launch a node for one pod. Where
these tests ask the scheduler's filters (``placeable_on``), the nodes carry exactly the taints the
contract gives each pool. The real provisioners decide the same in tests/cluster/test_mixed_pools.py.
"""

from __future__ import annotations

import pulumi
import pytest

from infra import GpuDeployment, PodSpecError
from infra.workloads.placement import (
    POOL_LABEL,
    PROVISIONER_TAINT_KEY,
    GpuPool,
    Placement,
    PlacementError,
)
from infra.workloads.podspec import place_pod_spec
from infra.workloads.scheduling import Node, placeable_on
from tests.conftest import deployment_spec, system_node

INFERENCE = GpuPool("inference", gpus_per_node=1, time_slicing_replicas=4)
TRAINING = GpuPool("training", gpus_per_node=2)
BURST = GpuPool("burst", gpus_per_node=1, time_slicing_replicas=4, provisioner="karpenter")
BATCH = GpuPool("batch", gpus_per_node=4, provisioner="karpenter")
MIXED = Placement(pools=(INFERENCE, TRAINING, BURST, BATCH))
KARPENTER_ONLY = Placement(pools=(BURST, BATCH))
NODE_GROUPS_ONLY = Placement(pools=(INFERENCE, TRAINING))
POD = {"containers": [{"name": "m", "image": "i"}]}
TOLERATE_ALL = {"operator": "Exists"}


def _nodes(placement: Placement) -> list[Node]:
    """One node per pool with the labels and taints the contract gives it, and a system node."""
    pools = [
        Node(
            p.name,
            placement.pool_labels(p.name),
            tuple(placement.pool_taints(p.name)),
            {"nvidia.com/gpu": p.slots_per_node},
        )
        for p in placement.pools
    ]
    return [*pools, system_node()]


def test_only_karpenter_pools_export_a_provisioner_and_it_reads_back() -> None:
    exported = MIXED.to_dict()["pools"]
    assert exported["batch"]["provisioner"] == "karpenter"
    assert "provisioner" not in exported["training"]  # node-group pools export what they always did
    assert Placement.from_dict(MIXED.to_dict()) == MIXED


def test_a_provisioner_other_than_karpenter_is_refused_naming_the_setting() -> None:
    with pytest.raises(PlacementError) as refused:
        Placement.from_dict(
            {"key": "GPU", "value": "true", "pools": {"a": {"gpusPerNode": 1, "provisioner": "ca"}}}
        )
    assert str(refused.value) == (
        "placement.pools.a.provisioner must be 'karpenter' or absent (a managed node group), got 'ca'"
    )


def test_only_karpenter_pools_of_a_mixed_cluster_carry_the_provisioner_taint() -> None:
    taint = {"key": PROVISIONER_TAINT_KEY, "value": "karpenter", "effect": "NoSchedule"}
    assert MIXED.mixed and taint in MIXED.pool_taints("batch") and taint not in MIXED.pool_taints("training")
    assert not KARPENTER_ONLY.mixed and KARPENTER_ONLY.pool_taints("batch") == [KARPENTER_ONLY.node_taint()]
    assert MIXED.agent_tolerations() == [MIXED.toleration(), MIXED.provisioner_toleration()]
    assert NODE_GROUPS_ONLY.agent_tolerations() == [NODE_GROUPS_ONLY.toleration()]


def test_a_pod_naming_no_pool_lands_on_node_group_pools_only() -> None:
    pod = place_pod_spec(POD, MIXED, gpus=1)
    required = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": ["inference", "training"]}]}
    ]
    assert pod["tolerations"] == [MIXED.toleration()]
    assert placeable_on(pod, _nodes(MIXED)) == ["inference", "training"]


def test_a_pod_tolerating_every_taint_and_naming_no_pool_still_stays_off_karpenter() -> None:
    """The taint alone would not hold it; the node affinity does."""
    pod = place_pod_spec({**POD, "tolerations": [TOLERATE_ALL]}, MIXED, gpus=2)
    assert placeable_on(pod, _nodes(MIXED)) == ["training"]


def test_a_pod_naming_a_karpenter_pool_tolerates_its_provisioner_and_lands_there_only() -> None:
    pod = place_pod_spec(POD, MIXED, gpus=1, pool="burst")
    assert pod["tolerations"] == [MIXED.toleration(), MIXED.provisioner_toleration()]
    assert placeable_on(pod, _nodes(MIXED)) == ["burst"]
    by_hand = place_pod_spec({**POD, "nodeSelector": {POOL_LABEL: "batch"}}, MIXED, gpus=4)
    assert by_hand["tolerations"][-1] == MIXED.provisioner_toleration()  # a pool named by nodeSelector too
    assert placeable_on(by_hand, _nodes(MIXED)) == ["batch"]


def test_without_the_toleration_a_karpenter_pool_node_refuses_the_pod() -> None:
    """What the taint does to a pod this library did not place: it cannot land on Karpenter's nodes."""
    pod = place_pod_spec(POD, MIXED, gpus=1, pool="burst")
    pod["tolerations"] = [MIXED.toleration()]
    assert placeable_on(pod, _nodes(MIXED)) == []


def test_a_copy_of_the_provisioner_toleration_is_not_doubled() -> None:
    pod = place_pod_spec(
        {**POD, "tolerations": [MIXED.provisioner_toleration()]}, MIXED, gpus=1, pool="burst"
    )
    assert pod["tolerations"] == [MIXED.toleration(), MIXED.provisioner_toleration()]


def test_a_pod_naming_a_node_group_pool_gets_no_provisioner_toleration() -> None:
    pod = place_pod_spec(POD, MIXED, gpus=2, pool="training")
    assert pod["tolerations"] == [MIXED.toleration()]
    assert placeable_on(pod, _nodes(MIXED)) == ["training"]


def test_a_cluster_of_one_kind_routes_as_before() -> None:
    for placement in (KARPENTER_ONLY, NODE_GROUPS_ONLY):
        pod = place_pod_spec(POD, placement, gpus=1)
        assert "affinity" not in pod and pod["tolerations"] == [placement.toleration()]
        assert placeable_on(pod, _nodes(placement)) == list(placement.pool_names)
    # A Karpenter pool's pod tolerates the provisioner in any cluster: none is stranded when node groups come.
    assert place_pod_spec(POD, KARPENTER_ONLY, gpus=1, pool="burst")["tolerations"][-1] == (
        KARPENTER_ONLY.provisioner_toleration()
    )


PROVISIONER_TOLERATION = {"key": PROVISIONER_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("pod", "kwargs", "message"),
    [
        (
            {**POD, "tolerations": [PROVISIONER_TOLERATION]},
            {"pool": "training", "gpus": 2},
            "tolerations[0] tolerates eks-gpu/provisioner=karpenter:NoSchedule, the taint only Karpenter pools' "
            "nodes carry, but pool 'training' is a managed node group (Cluster Autoscaler): remove that "
            "toleration, or set pool to a Karpenter pool (batch, burst)",
        ),
        (
            {**POD, "tolerations": [{"key": "other", "operator": "Exists"}, PROVISIONER_TOLERATION]},
            {"gpus": 1},
            "tolerations[1] tolerates eks-gpu/provisioner=karpenter:NoSchedule, the taint only Karpenter pools' "
            "nodes carry, but the pod names no pool, and where a cluster has both node-group and Karpenter "
            "pools a pod without a pool goes to the node groups only, so that Cluster Autoscaler and Karpenter "
            "never both launch a node for it: set pool to a Karpenter pool (batch, burst) and drop the "
            "toleration (the pool adds it), or remove the toleration",
        ),
        (
            POD,
            {"gpus": 4},
            "the pod asks for 4 nvidia.com/gpu (at most 4 in one container, spec.containers[0]), which no "
            "node-group pool can give (inference: at most 4 per pod, 1 per container, training: at most 2 per "
            "pod); where a cluster has both node-group and Karpenter pools, a pod that names no pool goes to the "
            "node groups only, so that Cluster Autoscaler and Karpenter never both launch a node for it: set "
            "pool to a Karpenter pool that can (batch)",
        ),
    ],
    ids=["toleration-on-a-node-group-pool", "toleration-without-a-pool", "only-karpenter-fits"],
)
def test_a_pod_that_would_defeat_the_routing_is_refused_in_words(
    pod: dict, kwargs: dict, message: str
) -> None:
    with pytest.raises(PodSpecError) as refused:
        place_pod_spec(pod, MIXED, **kwargs)
    assert str(refused.value) == message


def test_a_hand_written_provisioner_toleration_is_left_alone_where_no_node_carries_the_taint() -> None:
    pod = {**POD, "tolerations": [PROVISIONER_TOLERATION]}
    assert (
        place_pod_spec(pod, NODE_GROUPS_ONLY, gpus=1, pool="inference")["tolerations"][0]
        == PROVISIONER_TOLERATION
    )
    assert place_pod_spec(pod, KARPENTER_ONLY, gpus=1)["tolerations"][0] == PROVISIONER_TOLERATION


def test_a_pod_no_pool_of_either_kind_can_run_is_refused_listing_every_pool() -> None:
    with pytest.raises(PodSpecError) as refused:
        place_pod_spec(POD, MIXED, gpus=8)
    assert str(refused.value) == (
        "the pod asks for 8 nvidia.com/gpu (at most 8 in one container, spec.containers[0]) but no GPU pool can "
        "give that (batch: at most 4 per pod, burst: at most 4 per pod, 1 per container, inference: at most 4 "
        "per pod, 1 per container, training: at most 2 per pod); ask for fewer GPUs"
    )


def test_gpu_deployment_routes_through_a_stack_reference_placement(run) -> None:
    exported = pulumi.Output.from_input(MIXED.to_dict())  # as a StackReference hands it over
    result = run(
        lambda: [
            GpuDeployment("anywhere", spec=deployment_spec(), placement=exported),
            GpuDeployment("bursty", spec=deployment_spec(), placement=exported, pool="burst"),
        ]
    )
    pods = {
        r.name: r.inputs["spec"]["template"]["spec"] for r in result.of_type("kubernetes:apps/v1:Deployment")
    }
    assert placeable_on(pods["anywhere"], _nodes(MIXED)) == ["inference", "training"]
    assert placeable_on(pods["bursty"], _nodes(MIXED)) == ["burst"]


def test_gpu_deployment_refuses_before_anything_is_declared(run) -> None:
    errors = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment("big", spec=deployment_spec(), placement=MIXED, gpus=4)
        errors.append(str(raised.value))

    assert run(program).resources == []
    assert errors[0].startswith("GpuDeployment('big'): the pod asks for 4 nvidia.com/gpu")
    assert errors[0].endswith("set pool to a Karpenter pool that can (batch)")
