"""CrossGuard pack: the rules of infra.tooling.policy_rules, with the contract read from the same module as the platform.

Levels are configurable per policy with `pulumi preview --policy-pack policy
--policy-pack-config config.json` ({"gpu-toleration-without-gpu": "mandatory"}).
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from infra.tooling.policy_rules import RULES, RuleSpec
from infra.workloads.placement import DEFAULT_PLACEMENT


def _stack_policy(spec: RuleSpec) -> StackValidationPolicy:
    """A stack rule sees every resource's inputs: node groups, DaemonSets, Helm release values, add-on configuration."""

    def validate(args: StackValidationArgs, report_violation) -> None:
        by_resource = {f"{r.resource_type} {r.name}": r.urn for r in args.resources}
        triples = [(r.resource_type, r.name, r.props) for r in args.resources]
        for resource, message in spec.rule(triples, DEFAULT_PLACEMENT):
            report_violation(message, by_resource.get(resource))

    return StackValidationPolicy(
        name=spec.name,
        description=(spec.rule.__doc__ or spec.name).strip().splitlines()[0],
        validate=validate,
        enforcement_level=EnforcementLevel(spec.default_level),
    )


def _policy(spec: RuleSpec) -> ResourceValidationPolicy | StackValidationPolicy:
    if spec.stack:
        return _stack_policy(spec)

    def validate(args: ResourceValidationArgs, report_violation) -> None:
        for message in spec.rule(args.resource_type, args.props, DEFAULT_PLACEMENT):
            report_violation(f"{args.name} {message}", None)

    return ResourceValidationPolicy(
        name=spec.name,
        description=(spec.rule.__doc__ or spec.name).strip().splitlines()[0],
        validate=validate,
        enforcement_level=EnforcementLevel(spec.default_level),
    )


PolicyPack(name="eks-gpu-guardrails", policies=[_policy(spec) for spec in RULES])
