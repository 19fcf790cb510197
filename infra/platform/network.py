"""The VPC: an existing one from config, or a new one built by pulumi-awsx.

A new VPC's subnets (private for nodes, public for load balancers, tagged for the AWS Load
Balancer Controller) come from :func:`subnet_layout`, which the config check runs too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_awsx as awsx

if TYPE_CHECKING:
    from infra.platform.config import NetworkConfig

# Subnets each AZ gets in a new VPC: nodes and pods (VPC CNI) in private, load balancers in public.
PRIVATE_PREFIX, PUBLIC_PREFIX = 19, 22


@dataclass
class Network:
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    public_subnet_ids: pulumi.Input[list[str]]


def subnet_layout(cidr: Any, zones: int) -> tuple[list[str], list[str]]:
    """The private and public subnet CIDRs a new VPC gets: private ones first, then public, aligned.

    Computed here, not left to awsx's allocator, so a CIDR that cannot hold them is
    refused with the size that would.
    """
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


def network(
    name: str,
    config: NetworkConfig,
    opts: pulumi.ResourceOptions,
    secret: Callable[[Any], Any] = lambda v: v,
    private_tags: Mapping[str, str] | None = None,
) -> Network:
    """``secret`` wraps what came from config when ``network`` was set with ``--secret``; a new VPC's
    private subnets also get ``private_tags`` (Karpenter's discovery tag: karpenter.py tags an existing VPC's)."""
    if config.vpc_id:
        return Network(
            secret(config.vpc_id),
            secret(list(config.private_subnet_ids)),
            secret(list(config.public_subnet_ids)),
        )
    private, public = subnet_layout(config.cidr, config.availability_zones)
    vpc = awsx.ec2.Vpc(
        name,
        cidr_block=str(config.cidr),
        number_of_availability_zones=config.availability_zones,
        enable_dns_hostnames=True,
        enable_dns_support=True,
        subnet_strategy=awsx.ec2.SubnetAllocationStrategy.AUTO,
        subnet_specs=[
            awsx.ec2.SubnetSpecArgs(
                type=awsx.ec2.SubnetType.PRIVATE,
                cidr_blocks=private,
                tags={"kubernetes.io/role/internal-elb": "1", **(private_tags or {})},
            ),
            awsx.ec2.SubnetSpecArgs(
                type=awsx.ec2.SubnetType.PUBLIC, cidr_blocks=public, tags={"kubernetes.io/role/elb": "1"}
            ),
        ],
        # The config's values are awsx's own: Single, OnePerAz.
        nat_gateways=awsx.ec2.NatGatewayConfigurationArgs(
            strategy=awsx.ec2.NatGatewayStrategy(config.nat_gateways)
        ),
        opts=opts,
    )
    return Network(vpc.vpc_id, vpc.private_subnet_ids, vpc.public_subnet_ids)
