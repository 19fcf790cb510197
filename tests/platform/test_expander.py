"""Which pool Cluster Autoscaler scales up for a pending pod, with the expanders and priorities we give it.

The expander chain is modelled from kubernetes/autoscaler at cluster-autoscaler-1.35.2:

- ``expander/factory/chain.go`` ``BestOption``: each expander in ``--expander`` filters
  the options in turn; as soon as one is left it wins; ties left at the end go to random;
- ``expander/priority/priority.go`` ``BestOptions``: only the options of the highest
  matching priority stay; a group no regex matches is dropped (unless none matches);
- ``expander/waste/waste.go`` ``BestOptions``: least (unused CPU fraction + unused memory
  fraction) of the node template; a pod that requests neither wastes the same on every node;
- ``cloudprovider/aws/aws_wrapper.go``: a mixed-instances ASG's template is its first type.

Options are the pools whose zero-node template (``node_template``) takes the pod and
that are below their maximum, as the autoscaler computes them before it expands.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from infra.platform.autoscaler import helm_values
from infra.platform.config import GpuPoolConfig, PlatformConfig, load
from infra.platform.instance_types import ARM_NVIDIA
from infra.platform.node_pools import asg_tags, node_group_tags
from infra.tooling.offline import load_project, run_project
from infra.workloads.podspec import place_pod_spec
from infra.workloads.quantity import parse_quantity
from infra.workloads.scheduling import fits
from tests.platform.conftest import node_template

ROOT = Path(__file__).resolve().parents[2]
UUID = "a2c8f1e4-58b1-1d2e-7f3a-0c9d8e7f6a5b"


def _asg(pool: str) -> str:
    return f"eks-gpu-{pool}-2026120210153012340000000a-{UUID}"


def _priority(options: list[str], priorities: Mapping[str, Sequence[str]]) -> list[str]:
    best: list[str] = []
    top = -1
    for pool in options:
        for priority in sorted(
            (int(p) for p, res in priorities.items() if _matches(pool, res)), reverse=True
        )[:1]:
            if priority > top:
                top, best = priority, []
            if priority == top:
                best.append(pool)
    return best or options


def _matches(pool: str, regexes: Sequence[str]) -> bool:
    return any(re.search(r, _asg(pool)) for r in regexes)


def _requests(pod: Mapping[str, Any]) -> tuple[float, float]:
    """CPU cores and memory GiB the pod requests (waste.go resourcesForPods)."""
    cpu = memory = Fraction(0)
    for container in pod["containers"]:
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += parse_quantity(str(requests.get("cpu", "0")))
        memory += parse_quantity(str(requests.get("memory", "0"))) / 2**30
    return float(cpu), float(memory)


def _least_waste(options: list[str], pod: Mapping[str, Any], pools: Mapping[str, GpuPoolConfig]) -> list[str]:
    cpu, memory = _requests(pod)
    scores = {}
    for pool in options:
        node = ARM_NVIDIA[pools[pool].instance_types[0]]
        scores[pool] = (node.vcpus - cpu) / node.vcpus + (node.memory_gib - memory) / node.memory_gib
    least = min(scores.values())
    return [p for p in options if scores[p] == least]


def winners(
    config: PlatformConfig, pod: Mapping[str, Any], at_max: Sequence[str] = (), values: dict | None = None
) -> set[str]:
    """The pools the autoscaler may scale up for ``pod``: one unless random breaks a tie.

    ``values`` are the autoscaler release's Helm values; by default the ones ``config`` gives.
    """
    if values is None:
        values = helm_values(config)
    options = [name for name in config.gpu_pools if name not in at_max and _fits(config, name, pod)]
    for expander in values["extraArgs"]["expander"].split(","):
        if expander == "priority":
            options = _priority(options, values["expanderPriorities"])
        elif expander == "least-waste":
            options = _least_waste(options, pod, config.gpu_pools)
        if len(options) <= 1:
            break
    return set(options)


def _fits(config: PlatformConfig, name: str, pod: Mapping[str, Any]) -> bool:
    contract = config.contract
    pool = contract.pool(name)
    tags = {**asg_tags(contract, pool), **node_group_tags(pool)}
    return fits(pod, node_template(name, tags, config.gpu_pools[name].instance_types[0])).fits


def _pod(config: PlatformConfig, gpus: int, requests: Mapping[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "m", "image": "i"}
    if requests:
        container["resources"] = {"requests": dict(requests)}
    return place_pod_spec({"containers": [container]}, config.contract, gpus=gpus)


def _config(pools: Mapping[str, Any], **autoscaler: Any) -> PlatformConfig:
    return load(
        {
            "endpoint": {"publicAccessCidrs": ["203.0.113.0/24"]},
            "gpuPools": dict(pools),
            "autoscaler": autoscaler,
        },
        region="us-west-2",
        default_cluster_name="c",
    )


@pytest.fixture(scope="module")
def dev() -> PlatformConfig:
    project, raw = load_project(ROOT, "dev")
    ours = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{project}:")}
    return load(ours, region=raw["aws:region"], default_cluster_name=f"{project}-dev")


@pytest.fixture(scope="module")
def dev_values() -> dict:
    """The dev stack's autoscaler release values, as the program declares them."""
    return (
        run_project(ROOT, "dev").one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler").inputs["values"]
    )


def test_a_one_gpu_pod_that_names_no_pool_gets_the_cheapest_node_not_the_spot_16xlarge(
    dev: PlatformConfig, dev_values: dict
) -> None:
    """Issue 19: priority 50 for every spot pool sent such a pod to a g5g.16xlarge."""
    assert winners(dev, _pod(dev, gpus=1), values=dev_values) == {"inference"}
    sized = _pod(dev, gpus=1, requests={"cpu": "2", "memory": "6Gi"})
    assert winners(dev, sized, values=dev_values) == {"inference"}


def test_a_two_gpu_pod_fits_only_training_and_gets_it(dev: PlatformConfig, dev_values: dict) -> None:
    assert winners(dev, _pod(dev, gpus=2), values=dev_values) == {"training"}


def test_the_cheaper_pool_at_its_maximum_leaves_the_next_one(dev: PlatformConfig, dev_values: dict) -> None:
    assert winners(dev, _pod(dev, gpus=1), at_max=["inference"], values=dev_values) == {"training"}


def test_spot_first_among_interchangeable_pools_only() -> None:
    config = _config(
        {
            "small-od": {"instanceTypes": ["g5g.xlarge"]},
            "small-spot": {"instanceTypes": ["g5g.xlarge"], "capacityType": "SPOT"},
            "big-spot": {"instanceTypes": ["g5g.16xlarge"], "capacityType": "SPOT"},
        }
    )
    pod = _pod(config, gpus=1)
    assert winners(config, pod) == {"small-spot"}
    assert winners(config, pod, at_max=["small-spot"]) == {"small-od"}  # on-demand before a dearer node
    assert winners(config, pod, at_max=["small-spot", "small-od"]) == {"big-spot"}


def test_two_node_types_at_one_price_and_gpu_count_are_interchangeable() -> None:
    config = _config(
        {
            "metal": {"instanceTypes": ["g5g.metal"]},
            "big-spot": {"instanceTypes": ["g5g.16xlarge"], "capacityType": "SPOT"},
        }
    )
    assert winners(config, _pod(config, gpus=2)) == {"big-spot"}


def test_a_pool_is_ranked_by_the_dearest_type_it_may_start() -> None:
    config = _config(
        {
            "mixed": {"instanceTypes": ["g5g.xlarge", "g5g.8xlarge"]},
            "mid": {"instanceTypes": ["g5g.4xlarge"]},
        }
    )
    assert winners(config, _pod(config, gpus=1)) == {"mid"}


def test_pools_of_one_rank_need_no_priorities_and_keep_the_configured_expander() -> None:
    config = _config({"a": {}, "b": {}}, expander="most-pods")
    values = helm_values(config)
    assert values["extraArgs"]["expander"] == "most-pods"
    assert "expanderPriorities" not in values


def test_priority_alone_leaves_ties_to_random() -> None:
    config = _config(
        {"a": {}, "b": {"instanceTypes": ["g5g.2xlarge"]}},
        expander="priority",
    )
    values = helm_values(config)
    assert values["extraArgs"]["expander"] == "priority"
    assert winners(config, _pod(config, gpus=1)) == {"a"}
