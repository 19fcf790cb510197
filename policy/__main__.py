"""CrossGuard pack: the rules of infra.tooling.policy_rules, each stack judged by the contract it declares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
    proxy,
)

from infra.tooling.policy_rules import RULES, Links, RuleSpec, placement_from_config, stack_view, violations
from infra.tooling.resource_keys import Named
from infra.workloads.placement import DEFAULT_PLACEMENT

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
    """``value`` without pulumi_policy's unknown-checking proxies, every unknown turned into None."""
    if isinstance(value, Mapping):
        return {key: plain(_known(value, key)) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(_known(value, index)) for index in range(len(value))]
    return _known(proxy.unknown_checking_proxy({"": value}), "")


def _known(container: Any, key: Any) -> Any:
    try:
        return container[key]
    except proxy.UnknownValueError:
        return None


def _links(resources: list[Any]) -> Links:
    """Parents and dependencies as pulumi_policy resolved them (within the stack), by URN."""
    return Links(
        parents={r.urn: r.parent.urn for r in resources if r.parent is not None},
        dependencies={r.urn: [d.urn for d in r.dependencies] for r in resources},
    )


def _policy(spec: RuleSpec) -> ResourceValidationPolicy | StackValidationPolicy:
    """A stack policy when the verdict depends on the contract (only the whole stack shows it), else a resource policy."""
    described = {
        "name": spec.name,
        "description": spec.description,
        "enforcement_level": EnforcementLevel(spec.default_level),
        "config_schema": CONFIG_SCHEMA,
    }

    def validate_stack(args: StackValidationArgs, report_violation) -> None:
        override = placement_from_config(spec.name, args.get_config())
        by_resource = {r.urn: r for r in args.resources}
        triples = [(r.resource_type, Named(r.name, r.urn), plain(r.props)) for r in args.resources]
        view = stack_view(triples, _links(args.resources), override)
        proxied = [(r.resource_type, Named(r.name, r.urn), r.props) for r in args.resources]
        judged = triples if spec.stack else proxied
        for resource, message in violations(spec, judged, view, skip=(proxy.UnknownValueError,)):
            found = by_resource.get(resource)
            named = message if spec.stack else f"{found.name} {message}"
            report_violation(named, found.urn if found else None)

    def validate_resource(args: ResourceValidationArgs, report_violation) -> None:
        placement = placement_from_config(spec.name, args.get_config()) or DEFAULT_PLACEMENT
        for message in spec.rule(args.resource_type, args.props, placement):  # type: ignore[call-arg]
            report_violation(f"{args.name} {message}", None)

    if spec.stack or spec.contract:
        return StackValidationPolicy(validate=validate_stack, **described)
    return ResourceValidationPolicy(validate=validate_resource, **described)


PolicyPack(name="eks-gpu-guardrails", policies=[_policy(spec) for spec in RULES])
