"""Malformed workloads give findings, never a crash: the sibling of test_node_group_props.

The rules see any program's Deployments, Jobs, DaemonSets and Pods, and the kubernetes
provider's Check does not hold them to the schema before the pack runs. Tolerations as text,
a nodeSelector as a list, a GPU limit that is no quantity: each is a workload-settings
finding naming the field, in the plain rules and through the CrossGuard pack the CLI runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.tooling.pod_props import problems
from infra.tooling.policy_rules import check
from tests.tooling import crossguard

NODE_GROUP = (
    "aws:eks/nodeGroup:NodeGroup",
    "gpu",
    {
        "instanceTypes": ["g5g.xlarge"],
        "amiType": "AL2023_ARM_64_NVIDIA",
        "labels": {"GPU": "true"},
        "taints": [{"key": "GPU", "value": "true", "effect": "NO_SCHEDULE"}],
        "scalingConfig": {"minSize": 0, "desiredSize": 0, "maxSize": 2},
    },
)
GPU_LIMIT = {"resources": {"limits": {"nvidia.com/gpu": 1}}}
TYPES = ["kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:DaemonSet", "kubernetes:batch/v1:CronJob"]

finite = st.floats(allow_nan=False, allow_infinity=False)  # what JSON and the engine carry
junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | finite | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
toleration = st.fixed_dictionaries(
    {},
    optional={
        f: st.sampled_from(["GPU", "Exists", "true", "NoSchedule"]) | junk
        for f in ("key", "operator", "value", "effect")
    },
)
expression = st.fixed_dictionaries(
    {},
    optional={
        "key": st.just("GPU") | junk,
        "operator": st.just("In") | junk,
        "values": st.just(["true"]) | junk,
    },
)
affinity = (
    st.fixed_dictionaries(
        {
            "nodeAffinity": st.fixed_dictionaries(
                {
                    "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries(
                        {
                            "nodeSelectorTerms": st.lists(
                                st.fixed_dictionaries(
                                    {"matchExpressions": st.lists(expression | junk, max_size=2) | junk}
                                )
                                | junk,
                                max_size=2,
                            )
                            | junk
                        }
                    )
                    | junk
                }
            )
            | junk
        }
    )
    | junk
)
container = st.fixed_dictionaries(
    {},
    optional={
        "resources": st.fixed_dictionaries(
            {}, optional={"limits": st.dictionaries(st.just("nvidia.com/gpu"), st.just(1) | junk) | junk}
        )
        | junk,
        "restartPolicy": st.just("Always") | junk,
    },
)
pod = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": st.dictionaries(st.sampled_from(["GPU", "eks-gpu/pool"]), st.just("true") | junk)
        | junk,
        "tolerations": st.lists(toleration | junk, max_size=2) | junk,
        "affinity": affinity,
        "containers": st.lists(container | junk, max_size=2) | junk,
        "initContainers": st.lists(container | junk, max_size=2) | junk,
    },
)
workload = st.tuples(
    st.sampled_from(TYPES),
    st.fixed_dictionaries(
        {"spec": st.fixed_dictionaries({"template": st.fixed_dictionaries({"spec": pod}) | junk}) | junk}
    )
    | st.fixed_dictionaries(
        {
            "spec": st.fixed_dictionaries(
                {
                    "jobTemplate": st.fixed_dictionaries(
                        {"spec": st.fixed_dictionaries({"template": st.fixed_dictionaries({"spec": pod})})}
                    )
                    | junk
                }
            )
        }
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(found=workload)
def test_every_rule_gives_a_finding_or_passes_on_any_workload(found: tuple[str, dict[str, Any]]) -> None:
    kind, props = found
    assert all(v.message for v in check([NODE_GROUP, (kind, "w", props)]))


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(found=workload)
def test_the_pack_never_fails_its_analysis_on_any_workload(
    analyzer: Any, found: tuple[str, dict[str, Any]]
) -> None:
    """Through pulumi_policy's analyzer (its proxies, Analyze and AnalyzeStack), as the CLI calls it."""
    kind, props = found
    crossguard.analyze_stack(analyzer, [NODE_GROUP, (kind, "w", props)])
    crossguard.analyze(analyzer, kind, "w", props)


@pytest.mark.parametrize(
    ("pod", "finding"),
    [
        (
            {"tolerations": "GPU=true:NoSchedule"},
            "tolerations must be a list of {key, operator, value, effect}, got 'GPU=true:NoSchedule'",
        ),
        (
            {"tolerations": ["GPU"]},
            "tolerations[0] must be an object of key, operator, value and effect as text, got 'GPU'",
        ),
        ({"nodeSelector": ["GPU=true"]}, "nodeSelector must be a map of label to text, got ['GPU=true']"),
        ({"nodeSelector": {"GPU": True}}, "nodeSelector.GPU must be text, got True"),
        ({"containers": ["triton"]}, "containers[0] must be a container object, got 'triton'"),
        (
            {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "one"}}}]},
            "containers[0].resources must hold limits and requests",
        ),
        (
            {"containers": [{"resources": {"limits": {"nvidia.com/gpu": []}}}]},  # empty, not zero
            "containers[0].resources must hold limits and requests",
        ),
        (
            {"affinity": {"nodeAffinity": "GPU"}},
            "affinity.nodeAffinity must be objects and lists as Kubernetes has them",
        ),
    ],
)
def test_each_malformed_field_is_a_workload_settings_finding(pod: dict[str, Any], finding: str) -> None:
    props = {"spec": {"template": {"spec": {"containers": [GPU_LIMIT], **pod}}}}
    assert any(finding in p for p in problems(props))
    found = check([NODE_GROUP, ("kubernetes:apps/v1:Deployment", "w", props)])
    assert any(
        v.rule == "workload-settings" and v.level == "mandatory" and finding in v.message for v in found
    )


def test_a_well_formed_gpu_workload_has_no_workload_settings_finding() -> None:
    pod = {
        "containers": [GPU_LIMIT],
        "nodeSelector": {"GPU": "true"},
        "tolerations": [{"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
    }
    found = check([NODE_GROUP, ("kubernetes:apps/v1:Deployment", "w", {"spec": {"template": {"spec": pod}}})])
    assert [v for v in found if v.rule in ("workload-settings", "gpu-workload-placement")] == []


def test_an_affinity_not_known_yet_is_no_finding_and_leaves_the_agent_unknown() -> None:
    """Unknowns reach stack rules as None: judged once known, as for node groups."""
    unknown = {"key": "GPU", "operator": None, "values": None}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [unknown]}]
            }
        }
    }
    props = {"spec": {"template": {"spec": {"affinity": affinity, "containers": [{"name": "agent"}]}}}}
    found = check([NODE_GROUP, ("kubernetes:apps/v1:DaemonSet", "agent", props)])
    assert [v.rule for v in found if v.rule in ("workload-settings", "gpu-agents-on-gpu-pools")] == []
    assert any(v.rule == "agent-placement-unknown" for v in found)
