"""The scheduler's placement filters, as Kubernetes defines them."""

from __future__ import annotations

import pytest

from infra.workloads.placement import DEFAULT_PLACEMENT
from infra.workloads.podspec import place_pod_spec
from infra.workloads.scheduling import Node, fits, gpu_limit, match_expression, placeable_on, tolerates
from tests.conftest import gpu_node, system_node

GPU_NODE = gpu_node()
SYSTEM_NODE = system_node()
NODES = [GPU_NODE, SYSTEM_NODE]


def test_node_group_taint_is_seen_in_kubernetes_spelling() -> None:
    assert GPU_NODE.taints == ({"key": "GPU", "value": "true", "effect": "NoSchedule"},)


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": "GPU", "value": "true"}, True),  # empty effect matches all, operator defaults to Equal
        ({"key": "GPU", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "GPU", "operator": "Equal", "value": "false", "effect": "NoSchedule"}, False),
        ({"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoExecute"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, False),
    ],
)
def test_toleration_matching(toleration: dict, expected: bool) -> None:
    assert tolerates(toleration, GPU_NODE.taints[0]) is expected


def test_a_plain_pod_lands_only_on_system_nodes() -> None:
    assert placeable_on({"containers": [{"name": "web"}]}, NODES) == ["system"]
    assert fits({"containers": [{"name": "web"}]}, GPU_NODE).reasons == (
        "untolerated taint GPU=true:NoSchedule",
    )


def test_a_toleration_alone_does_not_keep_a_pod_off_system_nodes() -> None:
    pod = {"containers": [{"name": "m"}], "tolerations": [DEFAULT_PLACEMENT.toleration()]}
    assert placeable_on(pod, NODES) == ["gpu", "system"]


def test_a_placed_pod_lands_only_on_gpu_nodes() -> None:
    assert placeable_on(place_pod_spec({"containers": [{"name": "m"}]}), NODES) == ["gpu"]


def test_a_pod_asking_more_gpus_than_the_node_has_does_not_fit() -> None:
    verdict = fits(place_pod_spec({"containers": [{"name": "m"}]}, gpus=2), GPU_NODE)
    assert verdict.reasons == ("needs 2 nvidia.com/gpu, node has 1",)


def test_nodeselector_and_required_affinity_must_both_match() -> None:
    pod = place_pod_spec({"containers": [{"name": "m"}]})
    pod["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                        ]
                    }
                ]
            }
        }
    }
    assert fits(pod, GPU_NODE).reasons == ("required node affinity does not match the node's labels",)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"key": "a", "operator": "In", "values": ["1"]}, True),
        ({"key": "a", "operator": "NotIn", "values": ["1"]}, False),
        ({"key": "b", "operator": "NotIn", "values": ["1"]}, True),
        ({"key": "a", "operator": "Exists"}, True),
        ({"key": "a", "operator": "DoesNotExist"}, False),
        ({"key": "a", "operator": "Gt", "values": ["0"]}, True),
        ({"key": "a", "operator": "Lt", "values": ["1"]}, False),
    ],
)
def test_match_expression_operators(expression: dict, expected: bool) -> None:
    assert match_expression(expression, {"a": "1"}) is expected


@pytest.mark.parametrize("quantity", ["1", "1000m", "1e0", "0.9995", 1])
def test_gpu_quantities_count_as_the_api_counts_them(quantity: object) -> None:
    """Found by the differential test: ``"1000m"`` crashed the model; the API rounds up to whole GPUs."""
    pod = {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": quantity}}}]}
    assert gpu_limit(pod) == 1


def test_a_gpu_pod_tolerates_an_nvidia_taint_through_eks_admission() -> None:
    """EKS's ExtendedResourceToleration admission adds the toleration; the real scheduler then allows it."""
    node = Node(
        "n",
        taints=({"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"},),
        allocatable={"nvidia.com/gpu": 1},
    )
    gpu_pod = {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    assert fits(gpu_pod, node).fits
    assert not fits({"containers": [{"name": "a"}]}, node).fits


@pytest.mark.parametrize(
    ("value", "fits_gt_3"), [("5", True), ("1_0", False), ("99999999999999999999", False), (" 5", False)]
)
def test_gt_reads_label_values_as_go_parseint_does(value: str, fits_gt_3: bool) -> None:
    """Found by review against kube-scheduler: Python's int() took '1_0' and values past int64."""
    assert match_expression({"key": "tier", "operator": "Gt", "values": ["3"]}, {"tier": value}) is fits_gt_3


def test_cpu_and_memory_requests_count_as_the_scheduler_counts_them() -> None:
    """A request, else the limit; containers add up, init containers one at a time."""
    from fractions import Fraction

    from infra.workloads.scheduling import request

    pod = {
        "initContainers": [{"name": "i", "resources": {"requests": {"memory": "6Gi"}}}],
        "containers": [
            {"name": "a", "resources": {"requests": {"memory": "1Gi", "cpu": "500m"}}},
            {"name": "b", "resources": {"limits": {"memory": "2Gi", "cpu": "1"}}},
        ],
    }
    assert request(pod, "memory") == 6 * 2**30
    assert request(pod, "cpu") == Fraction(3, 2)
