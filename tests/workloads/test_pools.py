"""GPU pools: a pod lands only on pools whose nodes can give it its GPUs, and says which when asked."""

from __future__ import annotations

import pulumi
import pytest

from infra import GpuDeployment, PodSpecError
from infra.workloads.placement import DEFAULT_PLACEMENT, POOL_LABEL, GpuPool, Placement
from infra.workloads.podspec import place_pod_spec
from infra.workloads.scheduling import Node, placeable_on, pods_per_node
from tests.conftest import deployment_spec, system_node

INFERENCE = GpuPool("inference", gpus_per_node=1)
TRAINING = GpuPool("training", gpus_per_node=4)
SHARED = GpuPool("shared", gpus_per_node=1, time_slicing_replicas=4, capacity_type="SPOT")
POOLS = Placement(pools=(INFERENCE, TRAINING, SHARED))


def _pool_node(pool: GpuPool) -> Node:
    """A node of ``pool``: its labels, the GPU taint and every GPU slot."""
    return Node.from_node_group(
        pool.name,
        labels=POOLS.pool_labels(pool.name),
        eks_taints=[POOLS.eks_taint()],
        instance_type="g5g.xlarge",
        arch="arm64",
        gpus=pool.slots_per_node,
    )


NODES = [*(_pool_node(p) for p in POOLS.pools), system_node()]
POD = {"containers": [{"name": "m", "image": "i"}]}


def _pool_term(*names: str) -> dict:
    return {"key": POOL_LABEL, "operator": "In", "values": list(names)}


def test_a_chosen_pool_becomes_a_node_selector_entry_beside_the_contract() -> None:
    pod = place_pod_spec(POD, POOLS, gpus=4, pool="training")
    assert pod["nodeSelector"] == {"GPU": "true", "eks-gpu/pool": "training"}
    assert "affinity" not in pod
    assert placeable_on(pod, NODES) == ["training"]


def test_without_a_pool_a_pod_every_pool_can_run_gets_no_affinity() -> None:
    pod = place_pod_spec(POD, POOLS, gpus=1)
    assert pod["nodeSelector"] == {"GPU": "true"} and "affinity" not in pod
    assert placeable_on(pod, NODES) == ["inference", "shared", "training"]


def test_without_a_pool_a_pod_is_kept_off_pools_that_cannot_give_its_gpus() -> None:
    pod = place_pod_spec(POD, POOLS, gpus=2)
    assert pod["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [_pool_term("training")]}]
            }
        }
    }
    assert placeable_on(pod, NODES) == ["training"]


def test_the_pool_requirement_is_anded_into_every_user_term_keeping_them() -> None:
    zone_a = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}
    by_name = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [zone_a]}, {"matchFields": [by_name]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [zone_a]}}
            ],
        },
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
    }
    pod = place_pod_spec({**POD, "affinity": affinity}, POOLS, gpus=3)
    assert pod["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [zone_a, _pool_term("training")]},
                    {"matchFields": [by_name], "matchExpressions": [_pool_term("training")]},
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [zone_a]}}
            ],
        },
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []},
    }


@pytest.mark.parametrize(
    ("kwargs", "pod", "message"),
    [
        (
            {"pool": "gpu"},
            POD,
            r"pool: pool 'gpu' is not one the platform exports; allowed: inference, shared, training",
        ),
        (
            {"pool": "shared", "gpus": 2},
            POD,
            r"spec.containers\[0\] asks for 2 nvidia.com/gpu, but pool 'shared' shares each GPU 4 ways and its "
            r"device plugin refuses a container's request above 1 \(failRequestsGreaterThanOne, checked per "
            r"container\)",
        ),
        (
            {"pool": "training", "gpus": 8},
            POD,
            r"no node of pool 'training' can give more than 4 \(it has 4 GPUs per node\)",
        ),
        (
            {"gpus": 8},
            POD,
            r"asks for 8 nvidia.com/gpu \(at most 8 in one container, spec.containers\[0\]\) but no GPU pool "
            r"can give that \(inference: at most 1 per pod, shared: at most 4 per pod, 1 per container, "
            r"training: at most 4 per pod\)",
        ),
        (
            {"pool": "training"},
            {**POD, "nodeSelector": {POOL_LABEL: "inference"}},
            "nodeSelector eks-gpu/pool='inference' contradicts pool='training'",
        ),
        (
            {"gpus": 2},
            {**POD, "nodeSelector": {POOL_LABEL: "shared"}},
            r"spec.containers\[0\] asks for 2 nvidia.com/gpu, but pool 'shared'",
        ),
        (
            {"gpus": 2},
            {
                **POD,
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [_pool_term("inference", "shared")]}]
                        }
                    }
                },
            },
            "could never land on a GPU node",
        ),
    ],
)
def test_a_pod_no_node_of_its_pools_could_run_is_refused(kwargs: dict, pod: dict, message: str) -> None:
    with pytest.raises(PodSpecError, match=message):
        place_pod_spec(pod, POOLS, **kwargs)


def _one_gpu(name: str) -> dict:
    return {"name": name, "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}


def test_a_pod_of_two_one_gpu_containers_runs_on_a_time_sliced_pool() -> None:
    # failRequestsGreaterThanOne is checked per container request (device plugin internal/rm/rm.go);
    # the scheduler counts the pod's 2 against the node's 4 slots
    pod = place_pod_spec({"containers": [_one_gpu("a"), _one_gpu("b")]}, POOLS, pool="shared")
    assert pod["nodeSelector"] == {"GPU": "true", POOL_LABEL: "shared"}
    assert placeable_on(pod, NODES) == ["shared"]


def test_without_a_pool_two_one_gpu_containers_may_go_to_the_shared_pool_too() -> None:
    pod = place_pod_spec({"containers": [_one_gpu("a"), _one_gpu("b")]}, POOLS)
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [{"matchExpressions": [_pool_term("shared", "training")]}]
    assert placeable_on(pod, NODES) == ["shared", "training"]


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (
            {
                "containers": [_one_gpu("a")],
                "initContainers": [{**_one_gpu("w"), "resources": {"limits": {"nvidia.com/gpu": 2}}}],
            },
            r"spec.initContainers\[0\] asks for 2 nvidia.com/gpu, but pool 'shared' shares each GPU 4 ways",
        ),
        (
            {"containers": [_one_gpu(str(n)) for n in range(5)]},
            r"the pod asks for 5 nvidia.com/gpu but no node of pool 'shared' can give more than 4 \(1 GPU\(s\) "
            r"per node shared 4 ways, at most 1 per container\)",
        ),
    ],
)
def test_a_shared_pool_refuses_a_container_above_one_and_a_pod_above_its_slots(
    pod: dict, message: str
) -> None:
    with pytest.raises(PodSpecError, match=message):
        place_pod_spec(pod, POOLS, pool="shared")


def test_a_pool_is_refused_when_the_platform_exports_none() -> None:
    with pytest.raises(PodSpecError, match="the platform exports no GPU pools"):
        place_pod_spec(POD, DEFAULT_PLACEMENT, pool="training")


def test_init_containers_count_toward_what_the_pool_must_give() -> None:
    pod = {**POD, "initContainers": [{"name": "warm", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}
    with pytest.raises(PodSpecError, match=r"asks for 2 nvidia\.com/gpu but no node of pool 'inference'"):
        place_pod_spec(pod, POOLS, pool="inference")


@pytest.mark.parametrize(
    ("gpus", "pool", "expected"),
    [(1, "shared", 4), (1, "inference", 1), (2, "training", 2), (3, "training", 1), (2, "inference", 0)],
)
def test_pods_per_node_counts_gpu_slots(gpus: int, pool: str, expected: int) -> None:
    pod = place_pod_spec(POD, DEFAULT_PLACEMENT, gpus=gpus)
    assert pods_per_node(pod, _pool_node(POOLS.pool(pool))) == expected


def test_pods_per_node_is_zero_off_gpu_nodes_and_unbounded_without_gpus() -> None:
    assert pods_per_node(place_pod_spec(POD), system_node()) == 0
    assert pods_per_node(POD, system_node()) is None


def test_gpu_deployment_pins_its_pods_to_the_chosen_pool(run) -> None:
    exported = pulumi.Output.from_input(POOLS.to_dict())  # as a StackReference hands it over
    result = run(
        lambda: GpuDeployment("train", spec=deployment_spec(), placement=exported, pool="training", gpus=4)
    )
    pod = result.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"GPU": "true", "eks-gpu/pool": "training"}
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 4}


def test_gpu_deployment_refuses_an_unexported_pool_before_anything_is_declared(run) -> None:
    errors = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment("train", spec=deployment_spec(), placement=POOLS, pool="trianing")
        errors.append(str(raised.value))

    assert run(program).resources == []
    assert errors == [
        "GpuDeployment('train'): pool: pool 'trianing' is not one the platform exports; "
        "allowed: inference, shared, training"
    ]
