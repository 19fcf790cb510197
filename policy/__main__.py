"""CrossGuard pack: the rules of infra.tooling.policy_rules, with the contract read from the same module as the platform.

Levels are configurable per policy with `pulumi preview --policy-pack policy
--policy-pack-config config.json` ({"gpu-toleration-without-gpu": "mandatory"}).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationArgs, ResourceValidationPolicy

from infra.tooling.policy_rules import RULES, RuleSpec
from infra.workloads.placement import DEFAULT_PLACEMENT


def _policy(spec: RuleSpec) -> ResourceValidationPolicy:
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
