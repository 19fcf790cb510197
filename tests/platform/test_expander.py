"""Which tier of the priority expander each GPU pool gets, and that the chart always has its config.

What the autoscaler then does with the tiers is asked of the real autoscaler
(tests/cluster/test_autoscaler.py: the cheapest fitting pool for a pod naming none, a two-GPU pod
on the two-GPU pool, the priority expander's config loaded). These tests state the ranking for
pool mixes the dev stack does not have, which is our own logic (``expander_priorities``): a pool
is ranked by the dearest node it may start, then by the pods a node takes; spot goes first only
among pools of one rank.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from infra.platform.autoscaler import asg_name_pattern, helm_values
from infra.platform.config import PlatformConfig, load
from localcluster.chart_args import priority_configmap

UUID = "a2c8f1e4-58b1-1d2e-7f3a-0c9d8e7f6a5b"


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


def _tiers(config: PlatformConfig) -> list[set[str]]:
    """Pools by tier, highest priority first, read back from the regexes the chart writes."""
    priorities = helm_values(config)["expanderPriorities"]
    pools = list(config.gpu_pools)
    return [
        {
            p
            for p in pools
            if any(re.match(r, f"eks-gpu-{p}-2026120210153012340000000a-{UUID}") for r in regexes)
        }
        for _, regexes in sorted(priorities.items(), key=lambda item: -int(item[0]))
    ]


def test_spot_first_among_interchangeable_pools_only() -> None:
    config = _config(
        {
            "small-od": {"instanceTypes": ["g5g.xlarge"]},
            "small-spot": {"instanceTypes": ["g5g.xlarge"], "capacityType": "SPOT"},
            "big-spot": {"instanceTypes": ["g5g.16xlarge"], "capacityType": "SPOT"},
        }
    )
    assert _tiers(config) == [{"small-spot"}, {"small-od"}, {"big-spot"}]


def test_two_node_types_at_one_price_and_gpu_count_are_interchangeable() -> None:
    config = _config(
        {
            "metal": {"instanceTypes": ["g5g.metal"]},
            "big-spot": {"instanceTypes": ["g5g.16xlarge"], "capacityType": "SPOT"},
        }
    )
    assert _tiers(config) == [{"big-spot"}, {"metal"}]


def test_a_pool_is_ranked_by_the_dearest_type_it_may_start() -> None:
    config = _config(
        {"mixed": {"instanceTypes": ["g5g.xlarge", "g5g.8xlarge"]}, "mid": {"instanceTypes": ["g5g.4xlarge"]}}
    )
    assert _tiers(config) == [{"mid"}, {"mixed"}]


def test_pools_of_one_rank_without_the_priority_expander_keep_the_configured_one() -> None:
    values = helm_values(_config({"a": {}, "b": {}}, expander="most-pods"))
    assert values["extraArgs"]["expander"] == "most-pods"
    assert "expanderPriorities" not in values
    assert priority_configmap(values, "kube-system") is None


def test_the_priority_expander_always_gets_its_config_even_when_all_pools_rank_equally() -> None:
    """Issue 26 item 8: no ConfigMap made the priority expander pass every option on, silently."""
    values = helm_values(_config({"a": {}, "b": {}}, expander="priority"))
    assert values["extraArgs"]["expander"] == "priority"
    assert values["expanderPriorities"] == {"10": [asg_name_pattern("a"), asg_name_pattern("b")]}
    configmap = priority_configmap(values, "kube-system")
    assert configmap is not None
    assert yaml.safe_load(configmap["data"]["priorities"]) == {
        10: [asg_name_pattern("a"), asg_name_pattern("b")]
    }


def test_ranked_pools_put_the_priority_expander_first_and_ties_to_the_configured_one() -> None:
    values = helm_values(_config({"a": {}, "b": {"instanceTypes": ["g5g.2xlarge"]}}, expander="least-waste"))
    assert values["extraArgs"]["expander"] == "priority,least-waste"
    assert priority_configmap(values, "kube-system") is not None
