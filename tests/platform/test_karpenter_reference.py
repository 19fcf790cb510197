"""The controller's IAM, the interruption queue's policy and its rules, statement by statement against
Karpenter's getting-started CloudFormation template (tests/platform/reference/karpenter-getting-started.yaml
says which copy and why that one): the code is compared with upstream, never with itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.platform.karpenter import EVENT_RULES, controller_policy, event_pattern, queue_policy

REFERENCE = yaml.safe_load(
    (Path(__file__).parent / "reference" / "karpenter-getting-started.yaml").read_text()
)
ARGS = {
    "cluster_name": "eks-gpu-platform-dev",
    "region": "us-west-2",
    "account_id": "123456789012",
    "partition": "aws",
    "queue_arn": "arn:aws:sqs:us-west-2:123456789012:karpenter",
    "node_role_arn": "arn:aws:iam::123456789012:role/karpenter-node",
}
SUBSTITUTIONS = {
    "${AWS::Partition}": ARGS["partition"],
    "${AWS::Region}": ARGS["region"],
    "${AWS::AccountId}": ARGS["account_id"],
    "${ClusterName}": ARGS["cluster_name"],
    "${KarpenterNodeRole.Arn}": ARGS["node_role_arn"],
    "${KarpenterInterruptionQueue.Arn}": ARGS["queue_arn"],
}
# Left out on purpose: ZonalShiftPolicy (the chart's enableZonalShift stays off; docs/decisions/0080).
LEFT_OUT = {"ZonalShiftPolicy"}


def _substituted(text: str) -> str:
    for placeholder, value in SUBSTITUTIONS.items():
        text = text.replace(placeholder, value)
    return text


def _normal(value: Any) -> Any:
    """One-element lists as their element, booleans as IAM's strings: what IAM treats as the same."""
    if isinstance(value, list):
        return _normal(value[0]) if len(value) == 1 else sorted(json.dumps(_normal(v)) for v in value)
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, bool):
        return str(value).lower()
    return value


def _template_statements() -> dict[str, dict[str, Any]]:
    return {
        s["Sid"]: _normal(s)
        for name, text in REFERENCE["policies"].items()
        if name not in LEFT_OUT
        for s in json.loads(_substituted(text))["Statement"]
    }


def test_the_controller_policy_is_the_templates_statement_for_statement() -> None:
    ours = {s["Sid"]: _normal(s) for s in controller_policy(**ARGS)["Statement"]}
    theirs = _template_statements()
    assert sorted(ours) == sorted(theirs)
    for sid, statement in theirs.items():
        assert ours[sid] == statement, sid


def test_the_queue_policy_is_the_templates_with_deny_http() -> None:
    theirs = json.loads(_substituted(json.dumps(REFERENCE["queuePolicy"])))
    ours = queue_policy(ARGS["queue_arn"])
    assert ours["Id"] == theirs["Id"]
    assert [_normal(s) for s in ours["Statement"]] == [_normal(s) for s in theirs["Statement"]]


@pytest.mark.parametrize("rule", sorted(REFERENCE["rules"]))
def test_every_rule_of_the_template_feeds_the_queue(rule: str) -> None:
    pattern = REFERENCE["rules"][rule]
    assert pattern in [event_pattern(source, detail) for source, detail in EVENT_RULES.values()], rule


def test_no_rule_beyond_the_templates() -> None:
    assert len(EVENT_RULES) == len(REFERENCE["rules"]) == 5
