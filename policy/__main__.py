"""CrossGuard pack: the rules of infra.tooling.policy_rules, with the contract read from the same module as the platform.

Levels and the placement are configurable per policy with `pulumi preview --policy-pack policy
--policy-pack-config config.json`: {"gpu-toleration-without-gpu": "mandatory"} sets a level;
{"gpu-workload-placement": {"placement": {"key": "accelerator", "value": "t4g"}}} checks that
policy against a platform whose contract is not the default GPU=true. CrossGuard config is per
policy, so a platform with its own placement sets it on every policy.

Stack policies get their properties as plain data: pulumi_policy wraps them in a proxy that
raises UnknownValueError on any value not known during preview, which would turn a whole
stack policy into one advisory "can't run policy during preview". Stack policies see
resource *outputs* (computed ones, like an add-on's configurationValues, are unknown on
create), so the proxy is unwrapped and every unknown becomes None, which the agent model
reports as "not known yet". Resource policies keep the proxy (see ``_policy``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import proxy as _proxy

from infra.tooling.policy_rules import RULES, RuleSpec, placement_from_config

UNKNOWNS = frozenset(
    {
        _proxy.UNKNOWN_BOOLEAN_VALUE,
        _proxy.UNKNOWN_NUMBER_VALUE,
        _proxy.UNKNOWN_STRING_VALUE,
        _proxy.UNKNOWN_ARRAY_VALUE,
        _proxy.UNKNOWN_ASSET_VALUE,
        _proxy.UNKNOWN_ARCHIVE_VALUE,
        _proxy.UNKNOWN_OBJECT_VALUE,
    }
)
"""The sentinels the engine sends for values not known during preview (pulumi_policy/proxy.py)."""

CONFIG_SCHEMA = PolicyConfigSchema(
    properties={
        "placement": {
            "type": "object",
            "description": "The platform's placement contract (its placement.key and placement.value); "
            "default GPU=true",
            "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
            "required": ["key", "value"],
            "additionalProperties": False,
        }
    }
)
"""What `--policy-pack-config` may set besides the level; the CLI checks it against this schema."""


def plain(value: Any) -> Any:
    """``value`` without pulumi_policy's unknown-checking proxies, every unknown turned into None.

    The proxies (``_DictProxy``/``_ListProxy``) hand out their wrapped container for the
    key ``"__target"`` without checking it; its items are proxies again, so this recurses.
    """
    if isinstance(value, (_proxy._DictProxy, _proxy._ListProxy)):
        value = value["__target"]
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, str) and value in UNKNOWNS:
        return None
    return value


def _stack_policy(spec: RuleSpec) -> StackValidationPolicy:
    """A stack rule sees every resource's outputs: node groups, DaemonSets, Helm release values, add-on configuration."""

    def validate(args: StackValidationArgs, report_violation) -> None:
        placement = placement_from_config(spec.name, args.get_config())
        by_resource = {f"{r.resource_type} {r.name}": r.urn for r in args.resources}
        triples = [(r.resource_type, r.name, plain(r.props)) for r in args.resources]
        for resource, message in spec.rule(triples, placement):
            report_violation(message, by_resource.get(resource))

    return StackValidationPolicy(
        name=spec.name,
        description=(spec.rule.__doc__ or spec.name).strip().splitlines()[0],
        validate=validate,
        enforcement_level=EnforcementLevel(spec.default_level),
        config_schema=CONFIG_SCHEMA,
    )


def _policy(spec: RuleSpec) -> ResourceValidationPolicy | StackValidationPolicy:
    if spec.stack:
        return _stack_policy(spec)

    def validate(args: ResourceValidationArgs, report_violation) -> None:
        placement = placement_from_config(spec.name, args.get_config())
        # Resource rules keep the proxy: a field unknown during preview makes the policy
        # advisory-skip this resource rather than read as absent (a missing toleration
        # would be a false mandatory failure).
        for message in spec.rule(args.resource_type, args.props, placement):
            report_violation(f"{args.name} {message}", None)

    return ResourceValidationPolicy(
        name=spec.name,
        description=(spec.rule.__doc__ or spec.name).strip().splitlines()[0],
        validate=validate,
        enforcement_level=EnforcementLevel(spec.default_level),
        config_schema=CONFIG_SCHEMA,
    )


PolicyPack(name="eks-gpu-guardrails", policies=[_policy(spec) for spec in RULES])
