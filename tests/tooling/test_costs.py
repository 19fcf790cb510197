"""The cost the preview prints: per node group at its minimum and maximum size, partial when a price is missing."""

from __future__ import annotations

import pytest

from infra.platform.instance_types import PRICES_SOURCE
from infra.tooling.costs import HOURS_PER_MONTH, PRICE_REGION, lines, stack_cost

GPU = (
    "aws:eks/nodeGroup:NodeGroup",
    "gpu-default",
    {
        "instanceTypes": ["g5g.xlarge", "g5g.2xlarge"],
        "scalingConfig": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
    },
)
SYSTEM_PRICED = (
    "aws:eks/nodeGroup:NodeGroup",
    "system",
    {"instanceTypes": ["t4g.medium"], "scalingConfig": {"minSize": 2, "maxSize": 3}},
)
SYSTEM_UNPRICED = (
    "aws:eks/nodeGroup:NodeGroup",
    "system",
    {"instanceTypes": ["t4g.large"], "scalingConfig": {"minSize": 2, "maxSize": 3}},
)


def test_min_uses_the_cheapest_type_and_max_the_dearest() -> None:
    report = stack_cost([GPU, SYSTEM_PRICED, ("aws:iam/role:Role", "r", {})])
    gpu, system = report.groups
    assert (gpu.min_usd_per_hour, gpu.max_usd_per_hour) == (0.0, pytest.approx(2 * 0.556))
    assert (system.min_usd_per_hour, system.max_usd_per_hour) == (
        pytest.approx(2 * 0.0336),
        pytest.approx(3 * 0.0336),
    )
    assert report.min_usd_per_hour == pytest.approx(0.0672)
    assert report.max_usd_per_hour == pytest.approx(1.112 + 0.1008)
    assert not report.partial
    text = "\n".join(lines(report))
    assert PRICES_SOURCE in text and f"{HOURS_PER_MONTH} h/month" in text
    assert "$1.213/h $885.34/month" in text  # (1.112 + 0.1008) x 730 = 885.344


def test_a_type_without_a_price_is_shown_and_the_total_says_it_is_partial() -> None:
    report = stack_cost([GPU, SYSTEM_UNPRICED])
    assert report.unpriced == ("t4g.large",) and report.partial
    system = report.groups[1]
    assert system.min_usd_per_hour is None and system.max_usd_per_hour is None
    assert report.max_usd_per_hour == pytest.approx(1.112)  # the priced part only
    text = "\n".join(lines(report))
    assert "no price (no price: t4g.large)" in text
    assert "PARTIAL: no price for t4g.large" in text
    total = next(line for line in text.splitlines() if line.strip().startswith("total"))
    assert total.count("(partial)") == 2  # 2..3 unpriced nodes: both bounds leave them out


def test_a_group_at_zero_costs_nothing_even_without_a_price() -> None:
    idle = (
        "aws:eks/nodeGroup:NodeGroup",
        "idle",
        {"instanceTypes": ["t4g.large"], "scalingConfig": {"minSize": 0, "maxSize": 1}},
    )
    report = stack_cost([idle])
    assert report.groups[0].min_usd_per_hour == 0.0 and report.groups[0].max_usd_per_hour is None
    assert report.partial


def test_the_cost_lines_say_the_prices_are_us_east_1_and_the_stacks_region_may_differ() -> None:
    report = stack_cost([GPU])
    assert PRICE_REGION in PRICES_SOURCE  # the table's prices really are that region's
    note = lines(report)[1]
    assert note.strip().startswith("prices are us-east-1 on-demand rates;")
    assert "the stack's region may differ (dev runs in us-west-2)" in note
    assert (
        "this stack runs in us-west-2, where the same instances may cost more or less"
        in lines(report, region="us-west-2")[1]
    )
    assert "the region this stack runs in" in lines(report, region="us-east-1")[1]


def test_a_karpenter_pool_costs_nothing_at_least_and_its_gpu_limit_at_most() -> None:
    from localcluster import karpenter

    _, run = karpenter.platform_run()
    report = stack_cost([(r.type, r.name, r.inputs) for r in run.resources])
    pools = {g.name: g for g in report.groups if g.name.endswith("(Karpenter)")}
    burst, batch = pools["gpu-burst (Karpenter)"], pools["gpu-batch (Karpenter)"]
    # burst: limit 8 time-sliced slots, 4 per node (its NodeOverlay) -> 2 nodes of the dearest type
    assert (burst.min_size, burst.max_size, burst.capacity_type) == (0, 2, "SPOT")
    assert burst.min_usd_per_hour == 0 and burst.max_usd_per_hour == pytest.approx(2 * 0.828)
    assert (batch.max_size, batch.max_usd_per_hour) == (2, pytest.approx(2 * 0.828))  # g5g.4xlarge
