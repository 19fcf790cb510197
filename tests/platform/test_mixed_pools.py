"""A stack with node-group and Karpenter pools: what the program declares so each pod is one provisioner's.

Decision 0098. The provisioners' own decisions on these objects: tests/cluster/test_mixed_pools.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.tooling.agents import landings
from infra.tooling.chart_models import is_device_plugin
from infra.tooling.offline import Run
from infra.workloads.placement import PROVISIONER_TAINT_KEY
from localcluster import karpenter as pins

PROVISIONER_TAINT = {"key": PROVISIONER_TAINT_KEY, "value": "karpenter", "effect": "NoSchedule"}
TOLERATION = {"key": PROVISIONER_TAINT_KEY, "operator": "Equal", "value": "karpenter", "effect": "NoSchedule"}
GPU_GROUPS = (
    "gpu-platform-gpu-inference",
    "gpu-platform-gpu-training",
    "nodepool-gpu-burst",
    "nodepool-gpu-batch",
)
KARPENTER_ONLY = {
    **{name: pool for name, pool in pins.POOLS.items()},
    "inference": {**pins.POOLS["burst"]},
    "training": {**pins.POOLS["batch"]},
}


@pytest.fixture(scope="module")
def mixed() -> tuple[Any, Run]:
    return pins.platform_run()


@pytest.fixture(scope="module")
def karpenter_only() -> tuple[Any, Run]:
    # The dev teams' quotas are sized for the dev node groups, replaced here; they are not what this is about.
    return pins.platform_run(KARPENTER_ONLY, top={"teams": {}})


def _taints(run: Run) -> dict[str, list[dict[str, str]]]:
    return {
        m["metadata"]["name"]: m["spec"]["template"]["spec"]["taints"] for m in pins.declared(run, "NodePool")
    }


def _plugin_tolerations(run: Run) -> list[dict[str, str]]:
    (release,) = [
        r for r in run.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "nvidia-device-plugin"
    ]
    return release.inputs["values"]["tolerations"]


def _cloudwatch_tolerations(run: Run) -> list[dict[str, str]]:
    (addon,) = [
        r
        for r in run.of_type("aws:eks/addon:Addon")
        if r.inputs["addonName"] == "amazon-cloudwatch-observability"
    ]
    return json.loads(addon.inputs["configurationValues"])["tolerations"]


def test_with_both_kinds_every_nodepool_carries_the_provisioner_taint(mixed: tuple[Any, Run]) -> None:
    assert all(PROVISIONER_TAINT in taints for taints in _taints(mixed[1]).values())
    groups = [g.inputs for g in mixed[1].of_type("aws:eks/nodeGroup:NodeGroup")]
    assert all(t["key"] != PROVISIONER_TAINT_KEY for g in groups for t in g.get("taints", []))


def test_the_exported_contract_names_the_karpenter_pools_only(mixed: tuple[Any, Run]) -> None:
    pools = mixed[1].stack_outputs["placement"]["pools"]
    assert {name: pool.get("provisioner") for name, pool in pools.items()} == {
        "inference": None,
        "training": None,
        "burst": "karpenter",
        "batch": "karpenter",
    }


def test_the_device_plugin_and_cloudwatch_agents_tolerate_the_provisioner_taint(
    mixed: tuple[Any, Run],
) -> None:
    assert TOLERATION in _plugin_tolerations(mixed[1])
    assert TOLERATION in _cloudwatch_tolerations(mixed[1])


def test_the_agent_model_lands_the_device_plugin_on_every_pool_of_both_kinds(mixed: tuple[Any, Run]) -> None:
    """What the preview's agent table and the pack's gpu-agents-on-gpu-pools rule see (infra/tooling/agents.py)."""
    settings, run = mixed
    resources = [(r.type, r.name, r.inputs) for r in run.resources]
    (plugin,) = [
        x for x in landings(resources, settings.contract) if x.agent.pod and is_device_plugin(x.agent.pod)
    ]
    assert {group: plugin.where[group] for group in GPU_GROUPS} == dict.fromkeys(GPU_GROUPS, "yes")
    assert plugin.problems == ()


def test_without_the_toleration_the_model_says_the_plugin_misses_karpenters_pools(
    mixed: tuple[Any, Run],
) -> None:
    settings, run = mixed
    resources = []
    for r in run.resources:
        inputs = r.inputs
        if r.type == "kubernetes:helm.sh/v3:Release" and inputs.get("chart") == "nvidia-device-plugin":
            values = {
                **inputs["values"],
                "tolerations": [t for t in inputs["values"]["tolerations"] if t != TOLERATION],
            }
            inputs = {**inputs, "values": values}
        resources.append((r.type, r.name, inputs))
    (plugin,) = [
        x for x in landings(resources, settings.contract) if x.agent.pod and is_device_plugin(x.agent.pod)
    ]
    (problem,) = plugin.problems
    assert (
        "misses GPU pool(s)" in problem
        and "nodepool-gpu-burst" in problem
        and PROVISIONER_TAINT_KEY in problem
    )


def test_a_stack_of_karpenter_pools_only_has_no_provisioner_taint(karpenter_only: tuple[Any, Run]) -> None:
    settings, run = karpenter_only
    assert not settings.contract.mixed
    assert all(PROVISIONER_TAINT not in taints for taints in _taints(run).values())
    assert TOLERATION not in _plugin_tolerations(run) and TOLERATION not in _cloudwatch_tolerations(run)
