"""The VPC: an existing one from config, or a new one built by pulumi-awsx."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_awsx as awsx

from infra.platform.config import NetworkConfig
from infra.platform.subnets import subnet_layout


@dataclass
class Network:
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[list[str]]
    public_subnet_ids: pulumi.Input[list[str]]


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
