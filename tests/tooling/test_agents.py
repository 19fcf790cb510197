"""Every agent, every pool: where each DaemonSet lands, and the stack policy that fails a GPU agent missing a pool."""

from __future__ import annotations

import copy
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi_policy
import pytest
from pulumi_policy.proxy import (
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    unknown_checking_proxy,
)

from infra.platform import observability
from infra.platform.addons import ADDON_VERSIONS, CLOUDWATCH_ADDON, NODE_MONITORING_ADDON
from infra.platform.config import DEVICE_PLUGIN_CHART_VERSION
from infra.platform.device_plugin import values as device_plugin_values
from infra.tooling import agents, chart_models, pinned_chart
from infra.tooling.agents import agents_of, contract_groups, daemonset_intent, groups_of, landings, table
from infra.tooling.offline import Run, run_project
from infra.tooling.policy_rules import RULES, check, gpu_node_group_contract
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from tests.tooling import crossguard
from tests.tooling.chart_pods import device_plugin_pod

ROOT = Path(__file__).resolve().parents[2]
DS = "kubernetes:apps/v1:DaemonSet"
CW_VERSION, NM_VERSION = "v6.4.0-eksbuild.1", "v1.7.0-eksbuild.1"


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
    found = check([MISSES_THE_TAINT], DEFAULT_PLACEMENT)
    (violation,) = [v for v in found if v.rule != "agent-placement-unknown"]
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
        SimpleNamespace(
            resource_type=t, name=n, props=p, urn=f"urn:pulumi:dev::p::{t}::{n}", parent=None, dependencies=[]
        )
        for t, n, p in [*_triples(dev), MISSES_THE_TAINT]
    ]
    reported: list[tuple[str, str]] = []
    policy.validate(
        SimpleNamespace(resources=resources, get_config=dict),
        lambda message, urn: reported.append((message, urn)),
    )
    assert len(reported) == 1
    assert reported[0][1] == "urn:pulumi:dev::p::kubernetes:apps/v1:DaemonSet::gpu-exporter"
    assert [r.name for r in RULES if r.stack][:2] == ["gpu-agents-on-gpu-pools", "agent-placement-unknown"]


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
        {"chart": "nvidia-device-plugin", "version": "0.19.3", "namespace": "gpu", "values": bad},
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
    for unknown in ("[unknown]", None):  # not JSON; or an unknown the policy pack turned into None
        addon = (
            "aws:eks/addon:Addon",
            "cw",
            {
                "addonName": CLOUDWATCH_ADDON,
                "addonVersion": CW_VERSION,
                "configurationValues": unknown,
            },
        )
        (agent,) = agents_of([addon], DEFAULT_PLACEMENT)
        assert agent.pod is None and agent.source == "configurationValues not known yet"
    # absent (not set) is the chart's defaults, not unknown
    (monitoring, _) = agents_of(
        [
            (
                "aws:eks/addon:Addon",
                "nm",
                {"addonName": NODE_MONITORING_ADDON, "addonVersion": NM_VERSION},
            )
        ],
        DEFAULT_PLACEMENT,
    )
    assert monitoring.pod is not None


def test_only_modelled_chart_and_addon_versions_are_judged_anything_else_is_unknown(dev: Run) -> None:
    def verdicts(resources: list[tuple[str, str, dict]]) -> dict[str, str]:
        return {row.split()[0]: row.split()[-1] for row in table(landings(resources, DEFAULT_PLACEMENT))[1:]}

    assert verdicts(_triples(dev))["nvidia-device-plugin"] == "ok"
    bumped = {
        "kubernetes:helm.sh/v3:Release": ("version", "0.99.0"),
        "aws:eks/addon:Addon": ("addonVersion", "v9.0.0-eksbuild.1"),
    }
    resources = []
    for typ, name, props in _triples(dev):
        if typ in bumped and props.get("chart", props.get("addonName")) in (
            "nvidia-device-plugin",
            CLOUDWATCH_ADDON,
            NODE_MONITORING_ADDON,
        ):
            key, version = bumped[typ]
            props = {**props, key: version}
        resources.append((typ, name, props))
    found = landings(resources, DEFAULT_PLACEMENT)
    unknown = {landing.agent.name: landing.agent.source for landing in found if landing.agent.pod is None}
    assert unknown == {
        "nvidia-device-plugin (helm 0.99.0)": "nvidia-device-plugin version '0.99.0' is not the one pinned and "
        "rendered here (0.19.3)",
        "add-on amazon-cloudwatch-observability v9.0.0-eksbuild.1": "amazon-cloudwatch-observability version "
        "'v9.0.0-eksbuild.1' is not one the chart model was read from (v6.4.0-*)",
        "add-on eks-node-monitoring-agent v9.0.0-eksbuild.1": "eks-node-monitoring-agent version "
        "'v9.0.0-eksbuild.1' is not one the chart model was read from (v1.7.0-*)",
    }
    assert not any(landing.problems for landing in found)  # unknown is advisory, never "ok" and never a pass
    assert {
        v.rule for v in check(resources, DEFAULT_PLACEMENT) if "version" in v.message and "0" in v.message
    } == {"agent-placement-unknown"}
    rows = table(found)
    assert all(row.rstrip().endswith("unknown") for row in rows if "0.99.0" in row or "v9.0.0" in row)
    # another eksbuild of the same upstream chart is the same model
    assert chart_models.modelled(CLOUDWATCH_ADDON, "v6.4.0-eksbuild.7")
    assert not chart_models.modelled(CLOUDWATCH_ADDON, "v6.4.01-eksbuild.1")
    assert not chart_models.modelled(CLOUDWATCH_ADDON, None)


def test_the_device_plugin_charts_mps_control_daemon_is_a_row_that_runs_only_on_mps_capable_nodes(
    dev: Run,
) -> None:
    found = {landing.agent.name: landing for landing in landings(_triples(dev), DEFAULT_PLACEMENT)}
    mps = found["nvidia-device-plugin-mps-control-daemon (helm 0.19.3)"]
    assert mps.agent.intent == "none" and set(mps.where.values()) == {"-"}
    assert mps.agent.pod["nodeSelector"] == {
        "nvidia.com/mps.capable": "true",
        **DEFAULT_PLACEMENT.node_selector(),
    }
    assert (
        mps.agent.pod["tolerations"] == found["nvidia-device-plugin (helm 0.19.3)"].agent.pod["tolerations"]
    )
    # a pool whose nodes are labelled MPS-capable (MPS sharing configured) does get it
    mps_pool = (
        "aws:eks/nodeGroup:NodeGroup",
        "mps",
        {
            "instanceTypes": ["g5g.xlarge"],
            "labels": {**DEFAULT_PLACEMENT.node_labels(), "nvidia.com/mps.capable": "true"},
            "taints": [DEFAULT_PLACEMENT.eks_taint()],
        },
    )
    (landing,) = [
        x for x in landings([*_triples(dev), mps_pool], DEFAULT_PLACEMENT) if x.agent.name == mps.agent.name
    ]
    assert landing.where["mps"] == "yes"


def test_the_stack_policy_still_runs_in_a_first_preview_with_unknown_outputs(monkeypatch, dev: Run) -> None:
    """Through pulumi_policy's real AnalyzeStack: outputs with unknowns, as the engine sends a first preview.

    The add-ons' configurationValues are computed outputs, unknown on create; read through
    pulumi_policy's unknown-checking proxy they would raise UnknownValueError and the whole
    mandatory policy would become one advisory "can't run policy during preview".
    """
    _, policies = crossguard.pack_module(monkeypatch)
    resources = []
    for typ, name, props in [*_triples(dev), MISSES_THE_TAINT]:
        if typ == "aws:eks/addon:Addon":
            props = {**props, "configurationValues": UNKNOWN_STRING_VALUE}  # unknown for every add-on
        resources.append((typ, name, props))
    response = crossguard.analyze_stack(crossguard.servicer(policies), resources)
    messages = [(d.policyName, crossguard.level(d), d.message, d.urn) for d in response.diagnostics]
    assert not [m for m in messages if "can't run policy" in m[2]], messages
    mandatory = [m for m in messages if m[1] == "mandatory"]
    assert len(mandatory) == 1, mandatory
    policy, _, message, urn = mandatory[0]
    assert policy == "gpu-agents-on-gpu-pools"
    assert "\nDaemonSet/gpu-exporter is meant for GPU nodes but misses GPU pool(s)" in message
    assert "untolerated taint GPU=true:NoSchedule" in message
    assert urn == crossguard.urn(DS, "gpu-exporter")
    advisory = {m[2] for m in messages if m[0] == "agent-placement-unknown"}
    for addon in (CLOUDWATCH_ADDON, NODE_MONITORING_ADDON):
        assert any(
            f"\nadd-on {addon} {NM_VERSION if addon == NODE_MONITORING_ADDON else CW_VERSION} "
            "placement unknown (configurationValues not known yet)" in m
            for m in advisory
        ), advisory
    # other add-ons' configurationValues (vpc-cni, kube-proxy, ...) are not read: no advisory for them
    assert not [m for m in advisory if "vpc-cni" in m or "kube-proxy (EKS add-on)" in m]
    # what the pack guards against: the proxy itself raises on the unknown value
    proxied = unknown_checking_proxy({"configurationValues": UNKNOWN_STRING_VALUE})
    with pytest.raises(UnknownValueError):
        proxied.get("configurationValues")


def test_the_pack_turns_every_unknown_into_none_at_any_depth(monkeypatch) -> None:
    module, _ = crossguard.pack_module(monkeypatch)
    proxied = unknown_checking_proxy(
        {"a": UNKNOWN_STRING_VALUE, "b": [1, {"c": UNKNOWN_OBJECT_VALUE}], "d": {"e": "known"}}
    )
    assert module["plain"](proxied) == {"a": None, "b": [1, {"c": None}], "d": {"e": "known"}}


def test_a_daemonset_whose_scheduling_fields_are_unknown_is_unknown_not_a_violation() -> None:
    pod = {**EXPORTER, "nodeSelector": DEFAULT_PLACEMENT.node_selector(), "tolerations": None}
    (agent,) = agents_of([_daemonset("gpu-exporter", pod)], DEFAULT_PLACEMENT)
    assert agent.pod is None and agent.source == "scheduling fields not known yet"
    found = check([_daemonset("gpu-exporter", pod)], DEFAULT_PLACEMENT)
    assert [v for v in found if v.rule != "agent-placement-unknown"] == []


def test_the_cloudwatch_addon_with_chart_defaults_would_land_everywhere_and_ours_only_where_needed() -> None:
    custom = Placement("accelerator", "t4g")
    ours = observability.configuration_json(custom)
    for configuration, expected in (("", "yes"), (ours, "-")):
        addon = (
            "aws:eks/addon:Addon",
            "cw",
            {
                "addonName": CLOUDWATCH_ADDON,
                "addonVersion": CW_VERSION,
                "configurationValues": configuration,
            },
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


@pytest.mark.parametrize(
    ("props", "gpu"),
    [
        ({"amiType": "AL2_x86_64_GPU", "instanceTypes": ["t3.large"]}, True),
        ({"amiType": "BOTTLEROCKET_ARM_64_NVIDIA_FIPS", "instanceTypes": ["t4g.large"]}, True),
        ({"amiType": "AL2023_ARM_64_STANDARD", "instanceTypes": ["g5g.xlarge"]}, True),
        ({"amiType": "AL2023_ARM_64_STANDARD", "instanceTypes": ["t4g.large"]}, False),
    ],
)
def test_the_agent_table_and_the_node_group_rule_agree_on_which_groups_are_gpu_groups(
    props: dict, gpu: bool
) -> None:
    (group,) = groups_of([(agents.NODE_GROUP, "g", props)], DEFAULT_PLACEMENT)
    assert group.gpu is gpu
    assert bool(gpu_node_group_contract(agents.NODE_GROUP, props, DEFAULT_PLACEMENT)) is gpu


def test_intent_comes_from_the_annotation_or_from_what_the_daemonset_asks_for() -> None:
    logs = _daemonset("logs", {"containers": [{"name": "c"}]})
    assert daemonset_intent(logs[2], logs[2]["spec"]["template"]["spec"], DEFAULT_PLACEMENT) == "all-nodes"
    annotated = _daemonset("x", {"containers": [{"name": "c"}]}, {agents.INTENT_ANNOTATION: "gpu-nodes"})
    assert daemonset_intent(annotated[2], {}, DEFAULT_PLACEMENT) == "gpu-nodes"
    assert daemonset_intent(
        MISSES_THE_TAINT[2], MISSES_THE_TAINT[2]["spec"]["template"]["spec"], DEFAULT_PLACEMENT
    ) == ("gpu-nodes")


def test_every_pinned_addon_version_is_one_the_models_were_read_from() -> None:
    """Bumping a pin in infra/platform/addons.py without re-reading the chart fails here, not on a cluster."""
    for pins in ADDON_VERSIONS.values():
        for addon in (CLOUDWATCH_ADDON, NODE_MONITORING_ADDON):
            assert chart_models.modelled(addon, pins[addon]), (addon, pins[addon])


def test_the_device_plugin_is_rendered_from_the_chart_the_platform_deploys() -> None:
    from infra.platform import device_plugin

    assert chart_models.DEVICE_PLUGIN_CHART == device_plugin.CHART
    assert chart_models.device_plugin_version() == DEVICE_PLUGIN_CHART_VERSION
    # the platform keeps the chart's own default tolerations beside the contract's
    assert list(device_plugin.CHART_TOLERATIONS) == device_plugin_pod({})["tolerations"]


def _release(**props: Any) -> tuple[str, str, dict]:
    values = device_plugin_values(DEFAULT_PLACEMENT)
    base = {"chart": "nvidia-device-plugin", "version": "0.19.3", "namespace": "gpu", "values": values}
    return ("kubernetes:helm.sh/v3:Release", "plugin", {**base, **props})


def test_every_daemonset_the_chart_renders_is_an_agent() -> None:
    """gpu-feature-discovery comes with gfd.enabled (and NFD's worker with it): rows of their own."""
    values = {**device_plugin_values(DEFAULT_PLACEMENT), "gfd": {"enabled": True}}
    found = {
        a.name: a
        for a in agents_of([_release(name="nvidia-device-plugin", values=values)], DEFAULT_PLACEMENT)
    }
    plugin = found["nvidia-device-plugin (helm 0.19.3)"]
    assert chart_models.is_device_plugin(plugin.pod) and plugin.intent == "gpu-nodes"
    assert found["nvidia-device-plugin-gpu-feature-discovery (helm 0.19.3)"].intent == "gpu-nodes"
    assert found["nvidia-device-plugin-mps-control-daemon (helm 0.19.3)"].intent == "none"
    assert found["nvidia-device-plugin-node-feature-discovery-worker (helm 0.19.3)"].intent == "all-nodes"


def test_a_release_the_chart_refuses_or_values_not_known_yet_are_unknown() -> None:
    typ, name, props = _release()
    del props["namespace"]  # helm.v3.Release installs into "default", which the chart refuses
    (default_namespace,) = agents_of([(typ, name, props)], DEFAULT_PLACEMENT)
    assert default_namespace.pod is None and "allowDefaultNamespace" in default_namespace.source
    for unknown in ({"values": None}, {"values": {"nodeSelector": None}}, {"namespace": None}):
        (agent,) = agents_of([_release(**unknown)], DEFAULT_PLACEMENT)
        assert agent.pod is None and agent.source == "Release values or namespace not known yet", unknown


def test_without_any_helm_the_plugin_is_unknown_and_says_where_it_looked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pinned_chart, "CHECKOUT_CACHE", tmp_path)
    monkeypatch.delenv(pinned_chart.HELM_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    chart_models._rendered.cache_clear()
    try:
        (agent,) = agents_of([_release()], DEFAULT_PLACEMENT)
        (violation,) = [v for v in check([_release()], DEFAULT_PLACEMENT) if v.rule != "helm-release-unseen"]
    finally:
        chart_models._rendered.cache_clear()
    assert agent.pod is None and "localcluster/build helm charts" in agent.source
    assert (
        violation.rule == "agent-placement-unknown"
        and "no helm: looked at $EKS_GPU_HELM" in violation.message
    )


def test_a_helm_that_hangs_leaves_the_plugin_unknown_rather_than_the_preview_hanging(
    tmp_path: Path, monkeypatch
) -> None:
    helm = tmp_path / "helm"
    helm.write_text("#!/bin/sh\nsleep 30\n")
    helm.chmod(0o755)
    monkeypatch.setenv(pinned_chart.HELM_ENV, str(helm))
    monkeypatch.setattr(pinned_chart, "RENDER_TIMEOUT", 0.5)
    chart_models._rendered.cache_clear()
    try:
        (agent,) = agents_of([_release()], DEFAULT_PLACEMENT)
    finally:
        chart_models._rendered.cache_clear()
    assert agent.pod is None and "`helm template` did not finish in 0.5 s" in agent.source


def test_the_rules_import_where_the_policy_pack_runs_without_the_platform_extra() -> None:
    """policy/install installs the package without [platform]: no pydantic, no pulumi_aws there."""
    code = (
        "import sys; sys.modules['pydantic'] = None; sys.modules['pulumi_aws'] = None; "
        "import infra.tooling.policy_rules as r; print(len(r.RULES))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
