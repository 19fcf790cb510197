"""What the declared node groups cost per hour and per month, at their minimum and maximum sizes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM, PRICES_SOURCE
from infra.tooling.agents import (
    NODE_GROUP,
    NODEPOOL,
    Resources,
    aligned,
    nodepool_name,
    nodepool_requirement,
    nodepool_template,
    overlay_gpus,
)
from infra.tooling.node_group_props import instance_types, sizes
from infra.workloads.placement import GPU_RESOURCE
from infra.workloads.quantity import whole_count

HOURS_PER_MONTH = 730
PRICE_REGION = "us-east-1"
"""The region of every price in the table (PRICES_SOURCE); EC2 prices differ between regions."""
PRICES: Mapping[str, float | None] = {
    t.name: t.usd_per_hour for t in (*ARM_NVIDIA.values(), *ARM_SYSTEM.values())
}
BOUNDS = ("min_usd_per_hour", "max_usd_per_hour")


@dataclass(frozen=True)
class GroupCost:
    name: str
    instance_types: tuple[str, ...]
    capacity_type: str
    min_size: int
    max_size: int
    min_usd_per_hour: float | None
    """None when a price is missing (and min_size > 0)."""
    max_usd_per_hour: float | None
    unpriced: tuple[str, ...]


@dataclass(frozen=True)
class CostReport:
    groups: tuple[GroupCost, ...]
    unpriced: tuple[str, ...]
    """Instance types the totals leave out for want of a price: the totals are partial if any."""
    min_usd_per_hour: float
    max_usd_per_hour: float

    @property
    def partial(self) -> bool:
        return bool(self.unpriced)


def _bound(size: int, prices: list[float | None], pick: Callable[[list[float]], float]) -> float | None:
    if size == 0:
        return 0.0
    known = [p for p in prices if p is not None]
    return size * pick(known) if known and len(known) == len(prices) else None


def group_cost(name: str, props: Mapping[str, Any]) -> GroupCost:
    """A malformed group (any program's) is priced from its readable parts: sizes EKS would not
    take count as 0, types that are not text are left out; the policy pack names the rest."""
    types = tuple(instance_types(props))
    readable = sizes(props)
    low, high = readable.get("minSize", 0), readable.get("maxSize", 0)
    prices = [PRICES.get(t) for t in types]
    return GroupCost(
        name=name,
        instance_types=types,
        capacity_type=str(props.get("capacityType", "ON_DEMAND")),
        min_size=low,
        max_size=high,
        min_usd_per_hour=_bound(low, prices, min),
        max_usd_per_hour=_bound(high, prices, max),
        unpriced=tuple(t for t, p in zip(types, prices, strict=True) if p is None),
    )


def nodepool_cost(name: str, props: Mapping[str, Any], gpus_per_node: int | None) -> GroupCost:
    """A Karpenter NodePool: no nodes at least; at most what its GPU limit allows, ``gpus_per_node`` each
    (a NodeOverlay's time-sliced count, else the types' GPUs), priced with its dearest type."""
    _, _, types = nodepool_template(props)
    spec = props.get("spec") or {}
    per_node = gpus_per_node or min((ARM_NVIDIA[t].gpus for t in types if t in ARM_NVIDIA), default=1)
    limit = (spec.get("limits") or {}).get(GPU_RESOURCE)
    most = whole_count(limit) // per_node if limit is not None else 0
    capacity = nodepool_requirement(props, "karpenter.sh/capacity-type")
    return group_cost(
        f"{nodepool_name(name, props)} (Karpenter)",
        {
            "instanceTypes": types,
            "capacityType": "SPOT" if "spot" in capacity else "ON_DEMAND",
            "scalingConfig": {"minSize": 0, "maxSize": most},
        },
    )


def stack_cost(resources: Resources) -> CostReport:
    """The cost of every node group and Karpenter NodePool among ``resources`` (type, name, props)."""
    slots = overlay_gpus(resources)
    costs = [group_cost(n, p) for t, n, p in resources if t == NODE_GROUP]
    costs += [nodepool_cost(n, p, slots.get(nodepool_name(n, p))) for t, n, p in resources if t == NODEPOOL]
    groups = sorted(costs, key=lambda g: g.name)
    missing = {t for g in groups if None in (g.min_usd_per_hour, g.max_usd_per_hour) for t in g.unpriced}
    low, high = (sum(getattr(g, b) or 0.0 for g in groups) for b in BOUNDS)
    return CostReport(tuple(groups), tuple(sorted(missing)), min_usd_per_hour=low, max_usd_per_hour=high)


def _money(per_hour: float | None, missing: str = "") -> str:
    if per_hour is None:
        return f"no price{missing}"
    return f"${per_hour:,.3f}/h ${per_hour * HOURS_PER_MONTH:,.2f}/month"


def lines(report: CostReport, region: str | None = None) -> list[str]:
    """The preview's cost section; ``region`` is the stack's, when the caller knows it."""
    rows = [["node group", "types", "nodes", "at minimum", "at maximum"]]
    for g in report.groups:
        spot = " SPOT at on-demand price" if g.capacity_type == "SPOT" else ""
        sizes = f"{g.min_size}..{g.max_size}"
        money = [_money(getattr(g, b), f" (no price: {', '.join(g.unpriced)})") for b in BOUNDS]
        rows.append([g.name, ",".join(g.instance_types) + spot, sizes, *money])
    partial = [any(getattr(g, b) is None for g in report.groups) for b in BOUNDS]
    totals = [
        _money(getattr(report, b)) + (" (partial)" if p else "") for b, p in zip(BOUNDS, partial, strict=True)
    ]
    rows.append(["total", "", "", *totals])
    # The table's region is rarely the stack's, and EC2 prices differ by region.
    rates = f"  prices are {PRICE_REGION} on-demand rates"
    if region == PRICE_REGION:
        note = f"{rates}, the region this stack runs in"
    else:
        where = (
            f"this stack runs in {region}"
            if region
            else "the stack's region may differ (dev runs in us-west-2)"
        )
        note = f"{rates}; {where}, where the same instances may cost more or less"
    out = [
        f"cost of the node groups ({PRICES_SOURCE}; {HOURS_PER_MONTH} h/month; nodes only, no EBS/NAT/EKS fee):",
        note,
        *aligned(rows),
    ]
    if report.partial:
        out.append(
            f"  PARTIAL: no price for {', '.join(report.unpriced)} in infra/platform/instance_types.py; "
            "the totals leave those nodes out"
        )
    return out
