"""Every agent, every pool: where each DaemonSet lands, and the stack policy that fails a GPU agent missing a pool."""

from __future__ import annotations

import copy
import json
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi_policy
import pytest

from infra.platform import observability
from infra.platform.device_plugin import values as device_plugin_values
from infra.tooling import agents
from infra.tooling.agents import agents_of, contract_groups, daemonset_intent, landings, table
from infra.tooling.offline import Run, run_project
from infra.tooling.policy_rules import RULES, check
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement

ROOT = Path(__file__).resolve().parents[2]
DS = "kubernetes:apps/v1:DaemonSet"


def _daemonset(
    name: str, pod: dict[str, Any], annotations: dict[str, str] | None = None
) -> tuple[str, str, dict]:
    metadata: dict[str, Any] = {"name": name, "namespace": "monitoring"}
    if annotations:
        metadata["annotations"] = annotations
    return (
        DS,
        name,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": metadata,
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"spec": pod}},
        },
    )


EXPORTER = {"containers": [{"name": "exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0"}]}
# The classic mistake (NVIDIA dcgm-exporter#731): selects the GPU nodes, does not tolerate their taint.
MISSES_THE_TAINT = _daemonset("gpu-exporter", {**EXPORTER, "nodeSelector": DEFAULT_PLACEMENT.node_selector()})
PLACED = _daemonset(
    "gpu-exporter",
    {
        **EXPORTER,
        "nodeSelector": DEFAULT_PLACEMENT.node_selector(),
        "tolerations": [DEFAULT_PLACEMENT.toleration()],
    },
)


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


def _triples(run: Run) -> list[tuple[str, str, dict]]:
    return [(r.type, r.name, r.inputs) for r in run.resources]


def test_a_daemonset_that_misses_the_gpu_taint_fails_the_mandatory_policy_on_the_dev_stack(dev: Run) -> None:
    violations = check([*_triples(dev), MISSES_THE_TAINT], DEFAULT_PLACEMENT)
    failing = [v for v in violations if v.rule == "gpu-agents-on-gpu-pools"]
    assert len(failing) == 1
    (violation,) = failing
    assert violation.level == "mandatory"
    assert violation.resource == "kubernetes:apps/v1:DaemonSet gpu-exporter"
    assert "DaemonSet/gpu-exporter is meant for GPU nodes but misses GPU pool(s)" in violation.message
    assert "untolerated taint GPU=true:NoSchedule" in violation.message
    assert (
        "add the toleration {'key': 'GPU', 'operator': 'Equal', 'value': 'true', 'effect': 'NoSchedule'}"
        in (violation.message)
    )
    assert not [v for v in check([*_triples(dev), PLACED], DEFAULT_PLACEMENT) if v.level == "mandatory"]


def test_without_node_groups_the_contract_stands_in_so_a_lone_daemonset_is_judged_too() -> None:
    (violation,) = check([MISSES_THE_TAINT], DEFAULT_PLACEMENT, {"agent-placement-unknown": "disabled"})
    assert violation.rule == "gpu-agents-on-gpu-pools"
    assert [g.name for g in contract_groups(DEFAULT_PLACEMENT)] == ["gpu (contract)", "system"]


def test_the_crossguard_pack_reports_it_as_a_stack_policy_with_the_resource_urn(
    monkeypatch, dev: Run
) -> None:
    packs = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda name, policies, **kw: packs.append(policies))
    runpy.run_path(str(ROOT / "policy" / "__main__.py"))
    (policies,) = packs
    by_name = {p.name: p for p in policies}
    policy = by_name["gpu-agents-on-gpu-pools"]
    assert isinstance(policy, pulumi_policy.StackValidationPolicy)
    assert policy.enforcement_level.value == "mandatory"
    resources = [
        SimpleNamespace(resource_type=t, name=n, props=p, urn=f"urn:pulumi:dev::p::{t}::{n}")
        for t, n, p in [*_triples(dev), MISSES_THE_TAINT]
    ]
    reported: list[tuple[str, str]] = []
    policy.validate(
        SimpleNamespace(resources=resources), lambda message, urn: reported.append((message, urn))
    )
    assert len(reported) == 1
    assert reported[0][1] == "urn:pulumi:dev::p::kubernetes:apps/v1:DaemonSet::gpu-exporter"
    assert [r.name for r in RULES if r.stack] == ["gpu-agents-on-gpu-pools", "agent-placement-unknown"]


def test_the_dev_stack_puts_every_agent_where_it_belongs(dev: Run) -> None:
    found = landings(_triples(dev), DEFAULT_PLACEMENT)
    names = [landing.agent.name for landing in found]
    assert any(n.startswith("nvidia-device-plugin") for n in names)
    for landing in found:
        assert landing.problems == (), (landing.agent.name, landing.problems)
        gpu_pools = [g for g, where in landing.where.items() if "-gpu-" in g]
        assert gpu_pools, landing.where
        if landing.agent.intent in ("gpu-nodes", "all-nodes"):
            assert all(landing.where[g] == "yes" for g in gpu_pools), landing
    rows = table(found)
    assert rows[0].split()[:3] == ["agent", "(DaemonSet)", "meant"]


def test_the_device_plugin_on_a_system_group_is_a_violation(dev: Run) -> None:
    bad = copy.deepcopy(device_plugin_values(DEFAULT_PLACEMENT))
    bad["nodeSelector"] = {"node-role": "system"}  # e.g. copied from the autoscaler's values
    bad["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
                ]
            }
        }
    }
    release = (
        "kubernetes:helm.sh/v3:Release",
        "rogue-plugin",
        {"chart": "nvidia-device-plugin", "values": bad},
    )
    resources = [t for t in _triples(dev) if t[0] != "kubernetes:helm.sh/v3:Release"] + [release]
    messages = [v.message for v in check(resources, DEFAULT_PLACEMENT) if v.rule == "gpu-agents-on-gpu-pools"]
    assert len(messages) == 2
    assert "is meant for GPU nodes but misses GPU pool(s)" in messages[0]
    assert "is the device plugin but lands on non-GPU group(s) ['gpu-platform-system']" in messages[1]


def test_an_unmodelled_chart_is_unknown_never_fine(dev: Run) -> None:
    release = ("kubernetes:helm.sh/v3:Release", "logs", {"chart": "fluent-bit", "name": "logs", "values": {}})
    found = landings([*_triples(dev), release], DEFAULT_PLACEMENT)
    (unknown,) = [landing for landing in found if landing.agent.pod is None]
    assert set(unknown.where.values()) == {"unknown"}
    assert any(row.rstrip().endswith("unknown") for row in table(found))
    advisory = [
        v for v in check([*_triples(dev), release], DEFAULT_PLACEMENT) if v.rule == "agent-placement-unknown"
    ]
    assert advisory and advisory[0].level == "advisory" and "placement unknown" in advisory[0].message


def test_configuration_values_not_known_yet_are_unknown() -> None:
    addon = (
        "aws:eks/addon:Addon",
        "cw",
        {"addonName": agents.CLOUDWATCH_ADDON, "configurationValues": "[unknown]"},
    )
    (agent,) = agents_of([addon], DEFAULT_PLACEMENT)
    assert agent.pod is None


def test_the_cloudwatch_addon_with_chart_defaults_would_land_everywhere_and_ours_only_where_needed() -> None:
    custom = Placement("accelerator", "t4g")
    ours = json.dumps(observability.cloudwatch_configuration(custom))
    for configuration, expected in (("", "yes"), (ours, "-")):
        addon = (
            "aws:eks/addon:Addon",
            "cw",
            {"addonName": agents.CLOUDWATCH_ADDON, "configurationValues": configuration},
        )
        other = (
            "aws:eks/nodeGroup:NodeGroup",
            "batch",
            {
                "instanceTypes": ["m7g.large"],
                "taints": [{"key": "batch", "value": "x", "effect": "NO_SCHEDULE"}],
            },
        )
        (landing,) = [
            x for x in landings([addon, other], custom) if x.agent.name.startswith("cloudwatch-agent")
        ]
        assert (
            landing.where["batch"] == expected
        )  # a group tainted for something else: only Exists tolerates it


def test_intent_comes_from_the_annotation_or_from_what_the_daemonset_asks_for() -> None:
    logs = _daemonset("logs", {"containers": [{"name": "c"}]})
    assert daemonset_intent(logs[2], logs[2]["spec"]["template"]["spec"], DEFAULT_PLACEMENT) == "all-nodes"
    annotated = _daemonset("x", {"containers": [{"name": "c"}]}, {agents.INTENT_ANNOTATION: "gpu-nodes"})
    assert daemonset_intent(annotated[2], {}, DEFAULT_PLACEMENT) == "gpu-nodes"
    assert daemonset_intent(
        MISSES_THE_TAINT[2], MISSES_THE_TAINT[2]["spec"]["template"]["spec"], DEFAULT_PLACEMENT
    ) == ("gpu-nodes")


def test_addon_names_match_the_platform() -> None:
    assert agents.CLOUDWATCH_ADDON == observability.CLOUDWATCH_ADDON
    assert agents.NODE_MONITORING_ADDON == observability.NODE_MONITORING_ADDON


def test_the_device_plugin_model_is_the_platforms() -> None:
    from infra.platform import device_plugin
    from infra.tooling import chart_models

    assert chart_models.DEVICE_PLUGIN_CHART == device_plugin.CHART
    assert chart_models.DEVICE_PLUGIN_DEFAULTS == device_plugin.CHART_DEFAULTS
    platform_values = device_plugin.values(DEFAULT_PLACEMENT)
    pod = chart_models.device_plugin_pod(platform_values)
    assert {k: v for k, v in pod.items() if k != "containers"} == device_plugin.rendered_scheduling(
        platform_values
    )


def test_the_rules_import_where_the_policy_pack_runs_without_the_platform_extra() -> None:
    """policy/install installs the package without [platform]: no pydantic, no pulumi_aws there."""
    code = (
        "import sys; sys.modules['pydantic'] = None; sys.modules['pulumi_aws'] = None; "
        "import infra.tooling.policy_rules as r; print(len(r.RULES))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
