"""The placement contract: one definition, every form a consumer needs."""

from __future__ import annotations

import json

import pytest

from infra.workloads.placement import DEFAULT_PLACEMENT, EKS_TO_K8S_EFFECT, Placement, PlacementError


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
    ],
)
def test_refuses_keys_and_values_kubernetes_or_eks_would_reject(kwargs: dict, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        Placement(**kwargs)


def test_from_dict_refuses_unknown_fields() -> None:
    with pytest.raises(PlacementError, match=r"unknown field\(s\) \['effect'\]"):
        Placement.from_dict({"key": "GPU", "effect": "NoExecute"})
