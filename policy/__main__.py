"""CrossGuard pack: the rules of infra.tooling.policy_rules, each stack judged by the contract it declares.

Rules whose verdict depends on the contract are stack policies (only the whole stack shows
it); the security baseline stays a resource policy. Stack rules get plain data, unknowns as
None; per-resource rules keep pulumi_policy's proxy, so a field unknown in preview leaves
the resource unjudged. Config: per-policy levels, and ``placement`` to override the stack's
contract. Why: docs/decisions/0034-policy-pack-stack-contract.md.
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

from infra.tooling.policy_rules import (
    RULES,
    Links,
    RuleSpec,
    placement_from_config,
    resource_key,
    resource_violations,
    stack_view,
    stack_violations,
)
from infra.workloads.placement import DEFAULT_PLACEMENT

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
            "description": "Judge by this contract (placement.key and placement.value) instead of the "
            "one the stack declares (its placement output, GPU node groups or GPU components' pods)",
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


def _links(resources: list[Any]) -> Links:
    """Parents and dependencies as pulumi_policy resolved them (within the stack)."""
    return Links(
        parents={
            resource_key(r.resource_type, r.name): resource_key(r.parent.resource_type, r.parent.name)
            for r in resources
            if r.parent is not None
        },
        dependencies={
            resource_key(r.resource_type, r.name): [
                resource_key(d.resource_type, d.name) for d in r.dependencies
            ]
            for r in resources
        },
    )


def _described(spec: RuleSpec) -> dict[str, Any]:
    """What every policy of the pack says about itself: name, first docstring line, level, config."""
    return {
        "name": spec.name,
        "description": (spec.rule.__doc__ or spec.name).strip().splitlines()[0],
        "enforcement_level": EnforcementLevel(spec.default_level),
        "config_schema": CONFIG_SCHEMA,
    }


def _stack_policy(spec: RuleSpec) -> StackValidationPolicy:
    """Sees every resource's outputs: the contract the stack declares, node groups, workloads, agents."""

    def validate(args: StackValidationArgs, report_violation) -> None:
        override = placement_from_config(spec.name, args.get_config())
        by_resource = {resource_key(r.resource_type, r.name): r for r in args.resources}
        triples = [(r.resource_type, r.name, plain(r.props)) for r in args.resources]
        view = stack_view(triples, _links(args.resources), override)
        if spec.stack:
            for resource, message in stack_violations(spec, triples, view):
                found = by_resource.get(resource)
                report_violation(message, found.urn if found else None)
            return
        proxied = [(r.resource_type, r.name, r.props) for r in args.resources]
        for resource, message in resource_violations(spec, proxied, view, skip=(_proxy.UnknownValueError,)):
            found = by_resource[resource]
            report_violation(f"{found.name} {message}", found.urn)

    return StackValidationPolicy(validate=validate, **_described(spec))


def _policy(spec: RuleSpec) -> ResourceValidationPolicy | StackValidationPolicy:
    if spec.stack or spec.contract:
        return _stack_policy(spec)

    def validate(args: ResourceValidationArgs, report_violation) -> None:
        placement = placement_from_config(spec.name, args.get_config()) or DEFAULT_PLACEMENT
        # Resource rules keep the proxy: a field unknown during preview makes the policy
        # advisory-skip this resource rather than read as absent.
        for message in spec.rule(args.resource_type, args.props, placement):  # type: ignore[call-arg]
            report_violation(f"{args.name} {message}", None)

    return ResourceValidationPolicy(validate=validate, **_described(spec))


PolicyPack(name="eks-gpu-guardrails", policies=[_policy(spec) for spec in RULES])
