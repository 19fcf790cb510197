"""A new VPC's subnet CIDRs: pure arithmetic that the config check and the VPC both use."""

from __future__ import annotations

import ipaddress
from typing import Any

# Subnets each AZ gets in a new VPC: nodes and pods (VPC CNI) in private, load balancers in public.
PRIVATE_PREFIX, PUBLIC_PREFIX = 19, 22


def subnet_layout(cidr: Any, zones: int) -> tuple[list[str], list[str]]:
    """The private and public subnet CIDRs a new VPC gets: private ones first, then public, aligned."""
    vpc = ipaddress.ip_network(cidr)
    private = list(vpc.subnets(new_prefix=PRIVATE_PREFIX))[:zones] if vpc.prefixlen <= PRIVATE_PREFIX else []
    after = private[-1].broadcast_address if private else vpc.broadcast_address
    public = (
        [s for s in vpc.subnets(new_prefix=PUBLIC_PREFIX) if s.network_address > after][:zones]
        if vpc.prefixlen <= PUBLIC_PREFIX
        else []
    )
    if len(private) < zones or len(public) < zones:
        needed = zones * (2 ** (32 - PRIVATE_PREFIX) + 2 ** (32 - PUBLIC_PREFIX))
        smallest = next(p for p in range(PRIVATE_PREFIX, 0, -1) if 2 ** (32 - p) >= needed)
        raise ValueError(
            f".cidr {cidr} cannot hold {zones} private /{PRIVATE_PREFIX} and {zones} public "
            f"/{PUBLIC_PREFIX} subnets ({needed} addresses; pods take VPC addresses too): use a "
            f"/{smallest} or larger, e.g. 10.0.0.0/16"
        )
    return [str(s) for s in private], [str(s) for s in public]
