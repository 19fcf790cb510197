"""The EC2 Spot service-linked role a Karpenter pool needs to buy spot: found, made when asked, or refused."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from infra.platform.config import ConfigError, Pool

ROLE_NAME = "AWSServiceRoleForEC2Spot"
SERVICE = "spot.amazonaws.com"
CREATE_SETTING = "createSpotServiceLinkedRole"
FIX = f"aws iam create-service-linked-role --aws-service-name {SERVICE}"


def spot_pools(pools: Sequence[Pool]) -> list[Pool]:
    return [p for p in pools if "SPOT" in p.settings.capacity_types]


def role_exists(opts: pulumi.ResourceOptions) -> bool:
    found = aws.iam.get_roles(
        name_regex=f"^{ROLE_NAME}$",
        path_prefix=f"/aws-service-role/{SERVICE}/",
        opts=pulumi.InvokeOptions(parent=opts.parent, provider=opts.provider),
    )
    return bool(found.names)


def verdict(pools: Sequence[Pool], exists: bool, create: bool) -> str | None:
    """What to do: None (nothing needed), "create", or a warning; ConfigError for a SPOT-only pool."""
    spot = spot_pools(pools)
    if not spot or exists:
        return None
    if create:
        return "create"
    only = [p.name for p in spot if "ON_DEMAND" not in p.settings.capacity_types]
    if only:
        raise ConfigError(
            f"gpuPools.{only[0]}.karpenter.capacityTypes is [SPOT] but this account has no {ROLE_NAME}: Karpenter "
            f"could never launch a node. Set {CREATE_SETTING}: true, or run `{FIX}` once per account"
        )
    return (
        f"gpuPools.{spot[0].name} may buy spot, but this account has no {ROLE_NAME}: Karpenter will pay "
        f"on-demand for every node. Set {CREATE_SETTING}: true, or run `{FIX}` once per account"
    )


def spot_role(
    name: str, pools: Sequence[Pool], create: bool, opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """The role when it must be made (Karpenter's release waits for it); warns when spot would go unused."""
    action = verdict(pools, role_exists(opts) if spot_pools(pools) else True, create)
    if action is None:
        return []
    if action != "create":
        pulumi.log.warn(action)
        return []
    # Kept on destroy (account-wide, other stacks may use it); never protected, even under a protected
    # platform: once it exists the next run stops declaring it, and a protected resource cannot be dropped.
    keep = pulumi.ResourceOptions(retain_on_delete=True, protect=False)
    return [
        aws.iam.ServiceLinkedRole(
            name, aws_service_name=SERVICE, opts=pulumi.ResourceOptions.merge(opts, keep)
        )
    ]
