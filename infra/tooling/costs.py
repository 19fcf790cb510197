"""What the declared node groups cost per hour and per month, at their minimum and maximum sizes.

Pure: reads the node groups' inputs (instance types, scaling sizes) and the price
table of ``infra.platform.instance_types``. A group at its minimum is priced with its
cheapest listed type and at its maximum with its dearest, so the two figures bound
what the autoscaler can run (on-demand EKS groups launch the first listed type
first; Spot is priced at the on-demand rate, an upper bound). Nodes only: EBS
volumes, NAT gateways, the EKS control plane and CloudWatch are not included. A
type without a price in the table is shown as "no price" and every total that
would need it says it is partial.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM, PRICES_SOURCE

HOURS_PER_MONTH = 730
PRICE_REGION = "us-east-1"
"""The region of every price in the table (PRICES_SOURCE); EC2 prices differ between regions."""
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
PRICES: Mapping[str, float | None] = {
    t.name: t.usd_per_hour for t in (*ARM_NVIDIA.values(), *ARM_SYSTEM.values())
}


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
    min_usd_per_hour: float
    max_usd_per_hour: float
    unpriced: tuple[str, ...]
    """Instance types the totals leave out for want of a price: the totals are partial if any."""
    source: str = PRICES_SOURCE

    @property
    def partial(self) -> bool:
        return bool(self.unpriced)


def _bound(size: int, prices: list[float | None], pick: Any) -> float | None:
    if size == 0:
        return 0.0
    if not prices or any(p is None for p in prices):
        return None
    return size * pick(prices)


def group_cost(name: str, props: Mapping[str, Any]) -> GroupCost:
    types = tuple(props.get("instanceTypes") or ())
    scaling = props.get("scalingConfig") or {}
    low, high = int(scaling.get("minSize", 0)), int(scaling.get("maxSize", 0))
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


def stack_cost(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> CostReport:
    """The cost of every node group among ``resources`` (type, name, props)."""
    groups = tuple(
        sorted(
            (group_cost(name, props) for typ, name, props in resources if typ == NODE_GROUP),
            key=lambda g: g.name,
        )
    )
    unpriced = tuple(
        sorted(
            {
                t
                for g in groups
                if g.min_usd_per_hour is None or g.max_usd_per_hour is None
                for t in g.unpriced
            }
        )
    )
    return CostReport(
        groups=groups,
        min_usd_per_hour=sum(g.min_usd_per_hour or 0.0 for g in groups),
        max_usd_per_hour=sum(g.max_usd_per_hour or 0.0 for g in groups),
        unpriced=unpriced,
    )


def _money(per_hour: float | None) -> str:
    if per_hour is None:
        return "no price"
    return f"${per_hour:,.3f}/h ${per_hour * HOURS_PER_MONTH:,.2f}/month"


def region_note(region: str | None = None) -> str:
    """Whose prices these are: the table's region is rarely the stack's, and EC2 prices differ by region."""
    if region == PRICE_REGION:
        return f"  prices are {PRICE_REGION} on-demand rates, the region this stack runs in"
    where = (
        f"this stack runs in {region}" if region else "the stack's region may differ (dev runs in us-west-2)"
    )
    return f"  prices are {PRICE_REGION} on-demand rates; {where}, where the same instances may cost more or less"


def lines(report: CostReport, region: str | None = None) -> list[str]:
    """The preview's cost section; ``region`` is the stack's, when the caller knows it."""
    out = [
        f"cost of the node groups ({report.source}; {HOURS_PER_MONTH} h/month; nodes only, no EBS/NAT/EKS fee):",
        region_note(region),
    ]
    rows = [["node group", "types", "nodes", "at minimum", "at maximum"]]
    for g in report.groups:
        missing = f" (no price: {', '.join(g.unpriced)})" if g.unpriced else ""
        spot = " SPOT at on-demand price" if g.capacity_type == "SPOT" else ""
        rows.append(
            [
                g.name,
                ",".join(g.instance_types) + spot,
                f"{g.min_size}..{g.max_size}",
                _money(g.min_usd_per_hour) + (missing if g.min_usd_per_hour is None else ""),
                _money(g.max_usd_per_hour) + (missing if g.max_usd_per_hour is None else ""),
            ]
        )
    min_partial = " (partial)" if any(g.min_usd_per_hour is None for g in report.groups) else ""
    max_partial = " (partial)" if any(g.max_usd_per_hour is None for g in report.groups) else ""
    rows.append(
        [
            "total",
            "",
            "",
            _money(report.min_usd_per_hour) + min_partial,
            _money(report.max_usd_per_hour) + max_partial,
        ]
    )
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    out += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    if report.partial:
        out.append(
            f"  PARTIAL: no price for {', '.join(report.unpriced)} in infra/platform/instance_types.py; "
            "the totals leave those nodes out"
        )
    return out
