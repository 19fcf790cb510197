"""The placement contract: one definition, every form a consumer needs."""

from __future__ import annotations

import json

import pytest

from infra.workloads.placement import (
    DEFAULT_PLACEMENT,
    EKS_TO_K8S_EFFECT,
    POOL_LABEL,
    GpuPool,
    Placement,
    PlacementError,
)


def test_default_contract_is_the_blog_posts_gpu_true() -> None:
    assert Placement(key="GPU", value="true") == DEFAULT_PLACEMENT


def test_eks_taint_uses_the_eks_api_spelling() -> None:
    assert DEFAULT_PLACEMENT.eks_taint() == {"key": "GPU", "value": "true", "effect": "NO_SCHEDULE"}


def test_node_taint_and_toleration_use_the_kubernetes_spelling() -> None:
    assert DEFAULT_PLACEMENT.node_taint() == {"key": "GPU", "value": "true", "effect": "NoSchedule"}
    assert DEFAULT_PLACEMENT.toleration() == {
        "key": "GPU",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    }


def test_eks_taint_is_the_node_taint_in_eks_spelling() -> None:
    eks = DEFAULT_PLACEMENT.eks_taint()
    assert {**eks, "effect": EKS_TO_K8S_EFFECT[eks["effect"]]} == DEFAULT_PLACEMENT.node_taint()


def test_labels_and_selector_are_strings_not_booleans() -> None:
    assert DEFAULT_PLACEMENT.node_labels() == {"GPU": "true"}
    assert DEFAULT_PLACEMENT.node_selector() == {"GPU": "true"}
    assert all(isinstance(v, str) for v in DEFAULT_PLACEMENT.node_selector().values())


def test_node_affinity_requires_the_label() -> None:
    terms = DEFAULT_PLACEMENT.node_affinity()["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "GPU", "operator": "In", "values": ["true"]}]}]
    }


def test_custom_key_and_value_flow_into_every_form() -> None:
    p = Placement(key="example.com/accelerator", value="nvidia-t4g")
    assert p.eks_taint() == {"key": "example.com/accelerator", "value": "nvidia-t4g", "effect": "NO_SCHEDULE"}
    assert p.toleration()["key"] == "example.com/accelerator"
    assert p.node_selector() == {"example.com/accelerator": "nvidia-t4g"}


def test_round_trips_through_json_as_a_stack_output_would() -> None:
    p = Placement(key="accelerator", value="gpu")
    assert Placement.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert Placement.from_dict(None) == DEFAULT_PLACEMENT


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"value": True}, 'write "true" in quotes'),
        ({"value": ""}, "placement.value"),
        ({"value": "x" * 64}, "1-63 characters"),
        ({"key": ""}, "non-empty string"),
        ({"key": "has space"}, "placement.key"),
        ({"key": "kubernetes.io/gpu"}, "EKS refuses"),
        ({"key": "node.k8s.io/gpu"}, "EKS refuses"),
        ({"key": "eks.amazonaws.com/gpu"}, "EKS refuses"),
        ({"key": "Bad_Prefix/gpu"}, "DNS subdomain"),
        ({"key": "a" * 64}, "1-63 characters"),
        ({"key": "eks-gpu/pool"}, "that label names the pool"),
    ],
)
def test_refuses_keys_and_values_kubernetes_or_eks_would_reject(kwargs: dict, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        Placement(**kwargs)


def test_from_dict_refuses_unknown_fields() -> None:
    with pytest.raises(PlacementError, match=r"unknown field\(s\) \['effect'\]"):
        Placement.from_dict({"key": "GPU", "effect": "NoExecute"})


# --- GPU pools ---

TRAINING = GpuPool("training", gpus_per_node=4)
SHARED = GpuPool("shared", gpus_per_node=1, time_slicing_replicas=4, capacity_type="SPOT")


def test_a_pool_counts_its_slots_and_the_most_one_pod_and_one_container_can_get() -> None:
    assert (TRAINING.slots_per_node, TRAINING.max_gpus_per_pod, TRAINING.max_gpus_per_container) == (4, 4, 4)
    assert not TRAINING.shared
    # time-slicing: the device plugin refuses a container's request above 1 (per container,
    # internal/rm/rm.go); the scheduler counts the pod's total against the node's 4 slots
    assert (SHARED.slots_per_node, SHARED.max_gpus_per_pod, SHARED.max_gpus_per_container) == (4, 4, 1)
    assert SHARED.shared


def test_every_pool_node_carries_the_contract_label_and_its_pool_label() -> None:
    p = Placement(pools=(TRAINING, SHARED))
    assert POOL_LABEL == "eks-gpu/pool"
    assert p.pool_labels("shared") == {"GPU": "true", "eks-gpu/pool": "shared"}
    assert p.pool("training") is TRAINING


def test_an_unknown_pool_is_refused_listing_the_exported_ones() -> None:
    with pytest.raises(
        PlacementError, match=r"pool 'gpu' is not one the platform exports; allowed: shared, training"
    ):
        Placement(pools=(TRAINING, SHARED)).pool("gpu")
    with pytest.raises(PlacementError, match="the platform exports no GPU pools"):
        DEFAULT_PLACEMENT.pool_labels("training")


def test_to_dict_with_pools_names_the_pool_label_and_every_pool() -> None:
    assert Placement(pools=(TRAINING, SHARED)).to_dict() == {
        "key": "GPU",
        "value": "true",
        "poolLabel": "eks-gpu/pool",
        "pools": {
            "training": {"gpusPerNode": 4, "timeSlicingReplicas": 1, "capacityType": "ON_DEMAND"},
            "shared": {"gpusPerNode": 1, "timeSlicingReplicas": 4, "capacityType": "SPOT"},
        },
    }
    assert DEFAULT_PLACEMENT.to_dict() == {"key": "GPU", "value": "true"}  # the old form, for old readers


def test_from_dict_reads_pools_with_json_numbers_as_a_stack_reference_gives_them() -> None:
    exported = {
        "key": "GPU",
        "value": "true",
        "poolLabel": "eks-gpu/pool",
        "pools": {"training": {"gpusPerNode": 4.0, "timeSlicingReplicas": 1.0, "capacityType": "ON_DEMAND"}},
    }
    assert Placement.from_dict(exported) == Placement(pools=(TRAINING,))
    assert Placement.from_dict({"pools": {"s": {"gpusPerNode": 1}}}).pools == (GpuPool("s", 1),)
    p = Placement(pools=(TRAINING, SHARED))
    assert Placement.from_dict(json.loads(json.dumps(p.to_dict()))) == p


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"pools": {"t": {"gpusPerNode": 1, "gpus": 2}}},
            r"placement.pools.t has unknown field\(s\) \['gpus'\]",
        ),
        ({"pools": {"t": {"timeSlicingReplicas": 2}}}, "placement.pools.t.gpusPerNode is required"),
        (
            {"pools": {"t": {"gpusPerNode": 1.5}}},
            "placement.pools.t.gpusPerNode must be a whole number >= 1, got 1.5",
        ),
        ({"pools": {"t": {"gpusPerNode": 0}}}, "gpusPerNode must be a whole number >= 1, got 0"),
        ({"pools": {"t": {"gpusPerNode": True}}}, "gpusPerNode must be a whole number >= 1, got True"),
        ({"pools": {"t": {"gpusPerNode": "1"}}}, "gpusPerNode must be a whole number >= 1, got '1'"),
        (
            {"pools": {"t": {"gpusPerNode": 1, "timeSlicingReplicas": 0}}},
            "placement.pools.t.timeSlicingReplicas must be a whole number >= 1, got 0",
        ),
        (
            {"pools": {"t": {"gpusPerNode": 1, "capacityType": "spot"}}},
            "capacityType must be one of ON_DEMAND, SPOT",
        ),
        ({"pools": {"bad name": {"gpusPerNode": 1}}}, "must be a label value"),
        ({"pools": ["t"]}, "placement.pools must be a mapping"),
        ({"poolLabel": "pool"}, "different versions of the contract"),
        ({"zones": {}}, r"unknown field\(s\) \['zones'\]"),
    ],
)
def test_from_dict_refuses_what_no_platform_exports(data: dict, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        Placement.from_dict(data)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: GpuPool("p", 0), "placement.pools.p.gpusPerNode must be a whole number >= 1, got 0"),
        (lambda: GpuPool("p", 1, 0), "placement.pools.p.timeSlicingReplicas must be a whole number >= 1"),
        (lambda: GpuPool("p", 1, capacity_type="spot"), "capacityType must be one of ON_DEMAND, SPOT"),
        (lambda: GpuPool("bad name!", 1), "must be a label value"),
        (lambda: Placement(pools=(GpuPool("a", 1), GpuPool("a", 2))), "names a pool twice: a"),
        (lambda: Placement(pools=({"name": "a"},)), "must be GpuPool objects"),
    ],
)
def test_pools_built_in_python_are_checked_as_stack_outputs_are(build, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        build()


def test_a_placement_given_a_list_of_pools_keeps_a_tuple_and_stays_hashable() -> None:
    placement = Placement(pools=[GpuPool("a", 1, 2.0)])
    assert placement.pools == (GpuPool("a", 1, 2),) and hash(placement) == hash(
        Placement(pools=(GpuPool("a", 1, 2),))
    )
