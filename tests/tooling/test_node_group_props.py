"""Malformed node groups give findings, never a crash (issue 26, item 5).

The rules see any program's node groups. A taint in the Kubernetes spelling (``NoSchedule``),
labels given as a list, sizes given as text, keys missing or None: each gives a finding naming
the setting and what EKS takes, or passes; never an exception, in the plain rules or through the
CrossGuard pack the CLI runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.tooling.costs import stack_cost
from infra.tooling.node_group_props import instance_types, problems
from infra.tooling.policy_rules import check
from infra.workloads.placement import EKS_TO_K8S_EFFECT, K8S_TO_EKS_EFFECT
from tests.tooling import crossguard

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
GPU = {"instanceTypes": ["g5g.xlarge"], "amiType": "AL2023_ARM_64_NVIDIA", "labels": {"GPU": "true"}}
GPU_TAINT = {"key": "GPU", "value": "true", "effect": "NO_SCHEDULE"}
SCALING = {"minSize": 0, "desiredSize": 0, "maxSize": 2}

finite = st.floats(allow_nan=False, allow_infinity=False)  # what JSON and the engine carry
junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 500) | finite | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
effects = st.sampled_from([*EKS_TO_K8S_EFFECT, *K8S_TO_EKS_EFFECT, "no_schedule", "", None]) | junk
taint = st.fixed_dictionaries(
    {},
    optional={"key": st.sampled_from(["GPU", ""]) | junk, "value": st.just("true") | junk, "effect": effects},
)
taints = st.lists(taint | junk, max_size=3) | junk
labels = st.dictionaries(st.text(max_size=6), st.just("true") | junk, max_size=3) | junk
scaling = (
    st.fixed_dictionaries(
        {}, optional={k: st.integers(-2, 3) | junk for k in ("minSize", "desiredSize", "maxSize")}
    )
    | junk
)
node_group = st.fixed_dictionaries(
    {},
    optional={
        "instanceTypes": st.just(["g5g.xlarge"]) | st.lists(st.text(max_size=10) | junk, max_size=2) | junk,
        "amiType": st.just("AL2023_ARM_64_NVIDIA") | junk,
        "labels": labels,
        "taints": taints,
        "scalingConfig": scaling,
        "tags": st.dictionaries(st.text(max_size=6), junk, max_size=2) | junk,
    },
)


# A GPU agent, so the agent rules land it on every node group, the malformed one too.
AGENT = (
    "kubernetes:apps/v1:DaemonSet",
    "gpu-agent",
    {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "gpu-agent"},
        "spec": {
            "template": {
                "spec": {
                    "nodeSelector": {"GPU": "true"},
                    "tolerations": [{"key": "GPU", "operator": "Exists"}],
                    "containers": [{"name": "a", "image": "a"}],
                }
            }
        },
    },
)


def _stack(props: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(NODE_GROUP, "gpu", props), (NODE_GROUP, "gpu-2", {**GPU, "taints": [GPU_TAINT]}), AGENT]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(props=node_group)
def test_every_rule_gives_a_finding_or_passes_on_any_node_group(props: dict[str, Any]) -> None:
    found = check(_stack(props))
    assert all(isinstance(v.message, str) and v.message for v in found)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(props=node_group)
def test_the_pack_never_fails_its_analysis_on_any_node_group(analyzer: Any, props: dict[str, Any]) -> None:
    """Through pulumi_policy's analyzer (its proxies, Analyze and AnalyzeStack), as the CLI calls it."""
    crossguard.analyze_stack(analyzer, _stack(props))
    crossguard.analyze(analyzer, NODE_GROUP, "gpu", props)


@settings(max_examples=200, deadline=None)
@given(effect=st.sampled_from(sorted(K8S_TO_EKS_EFFECT)), key=st.sampled_from(["GPU", "nvidia.com/gpu"]))
def test_a_taint_in_the_kubernetes_spelling_is_named_with_the_spelling_eks_expects(
    effect: str, key: str
) -> None:
    props = {**GPU, "taints": [{"key": key, "value": "true", "effect": effect}]}
    messages = [v.message for v in check([(NODE_GROUP, "gpu", props)]) if v.rule == "node-group-settings"]
    assert messages == [
        f"taints[0].effect is {effect!r}, the Kubernetes spelling: EKS takes {K8S_TO_EKS_EFFECT[effect]} "
        f"(one of {', '.join(EKS_TO_K8S_EFFECT)})"
    ]


@pytest.mark.parametrize(
    ("props", "finding"),
    [
        (
            {"taints": "GPU=true:NoSchedule"},
            "taints must be a list of {key, value, effect}, got 'GPU=true:NoSchedule'",
        ),
        (
            {"taints": [{"key": "GPU", "value": "true"}]},
            "taints[0].effect is missing: EKS takes one of NO_SCHEDULE",
        ),
        (
            {"taints": [["GPU", "true"]]},
            "taints[0] must be an object with key, value and effect, got ['GPU', 'true']",
        ),
        ({"taints": [{"value": "true", "effect": "NO_SCHEDULE"}]}, "taints[0].key is missing"),
        ({"labels": ["GPU=true"]}, "labels must be a map of text to text, got ['GPU=true']"),
        ({"labels": {"GPU": True}}, 'labels.GPU must be text (in quotes: "true"), got True'),
        (
            {"scalingConfig": {"minSize": "two", "maxSize": 2}},
            "scalingConfig.minSize must be a whole number of at least 0, got 'two'",
        ),
        (
            {"scalingConfig": {"minSize": 0, "maxSize": 0}},
            "scalingConfig.maxSize must be a whole number of at least 1, got 0",
        ),
        (
            {"scalingConfig": {"minSize": 3, "desiredSize": 1, "maxSize": 4}},
            "scalingConfig: EKS requires minSize <= desiredSize <= maxSize, got 3, 1, 4",
        ),
        (
            {"instanceTypes": "g5g.xlarge"},
            "instanceTypes must be a list of instance type names, got 'g5g.xlarge'",
        ),
    ],
)
def test_each_malformed_setting_is_named_with_what_eks_takes(props: dict[str, Any], finding: str) -> None:
    assert any(
        finding in p for p in problems({**GPU, "taints": [GPU_TAINT], "scalingConfig": SCALING, **props})
    )


def test_values_not_known_yet_are_no_finding() -> None:
    """Unknowns reach stack rules as None (policy/__main__.py ``plain``): judged once known."""
    props = {**GPU, "taints": [{"key": "GPU", "value": None, "effect": None}], "labels": {"GPU": None}}
    assert problems({**props, "scalingConfig": {"minSize": None, "maxSize": None}}) == []


def test_the_pack_reports_the_kubernetes_spelling_instead_of_crashing(analyzer: Any) -> None:
    """Through pulumi_policy's analyzer, as `pulumi preview --policy-pack policy` runs it."""
    props = {
        **GPU,
        "taints": [{"key": "GPU", "value": "true", "effect": "NoSchedule"}],
        "scalingConfig": SCALING,
    }
    stack = crossguard.analyze_stack(analyzer, [(NODE_GROUP, "gpu", props)])
    one = crossguard.analyze(analyzer, NODE_GROUP, "gpu", props)
    messages = [d.message for d in [*stack.diagnostics, *one.diagnostics]]
    assert any(
        "taints[0].effect is 'NoSchedule', the Kubernetes spelling: EKS takes NO_SCHEDULE" in m
        for m in messages
    )


@settings(max_examples=300, deadline=None)
@given(props=node_group)
def test_the_preview_prices_and_shows_any_node_group_without_crashing(props: dict[str, Any]) -> None:
    """The preview's cost table and GPU inputs read the same node groups the rules do: junk is no crash.

    A malformed group's unreadable sizes count as 0 and its non-text types are left out; the
    policy section beside them names what is wrong (node-group-settings)."""
    from infra.tooling.offline import Registration, Run
    from infra.tooling.preview import _gpu_inputs

    report = stack_cost([(NODE_GROUP, "gpu", props)])
    (group,) = report.groups
    assert group.instance_types == tuple(instance_types(props))
    assert group.min_size >= 0 and group.max_size >= 0
    (line,) = _gpu_inputs(Run([Registration("urn:g", NODE_GROUP, "gpu", "", True, "", False, props)], {}))
    assert line.startswith("  node group gpu:")


def test_text_instance_types_are_not_priced_letter_by_letter() -> None:
    (group,) = stack_cost([(NODE_GROUP, "gpu", {**GPU, "instanceTypes": "g5g.xlarge"})]).groups
    assert group.instance_types == ()
