"""What the Karpenter harness gives the real core: the platform's instance types, the declared NodePools with
only their node class swapped, and the settings the pinned chart would set."""

from __future__ import annotations

from infra.platform import allocatable
from infra.platform.instance_types import ARM_NVIDIA, X86_NVIDIA
from infra.workloads.placement import GPU_RESOURCE
from localcluster import karpenter


def test_kwok_instance_types_are_the_platforms_table_and_the_x86_gpus_beside_it() -> None:
    """Not only the pools' types: x86 GPU types too, some cheaper than a pool's (the requirements must hold)."""
    types = {t["name"]: t for t in karpenter.instance_types()}
    listed = {**ARM_NVIDIA, **X86_NVIDIA}
    assert set(types) == {name for name, t in listed.items() if t.usd_per_hour is not None}
    assert {types[name]["architecture"] for name in X86_NVIDIA} == {"amd64"}
    assert types["g4dn.xlarge"]["offerings"][0]["Price"] < types["g5g.2xlarge"]["offerings"][0]["Price"]
    assert types["g5g.xlarge"]["resources"]["pods"] == "58"  # nodeadm's max pods, not 110
    assert types["g5g.xlarge"]["resources"]["memory"] == "6594Mi"  # 6584Mi allocatable + kwok's 10Mi
    for name, spec in types.items():
        table = listed[name]
        assert spec["architecture"] == ("arm64" if name in ARM_NVIDIA else "amd64")
        assert spec["resources"][GPU_RESOURCE] == str(table.gpus)
        # kwok takes 100m and 10Mi off: what is left is nodeadm's allocatable (3920m, 6584Mi on a g5g.xlarge)
        assert (
            spec["resources"]["cpu"]
            == f"{table.vcpus * 1000 - allocatable.cpu_reserved_millis(table.vcpus * 1000) + 100}m"
        )
        prices = {o["Requirements"][0]["values"][0]: o["Price"] for o in spec["offerings"]}
        assert prices["on-demand"] == table.usd_per_hour and prices["spot"] < prices["on-demand"]


def test_a_declared_nodepool_reaches_kwok_with_only_its_node_class_changed() -> None:
    _, run = karpenter.platform_run()
    declared = karpenter.declared(run, "NodePool")[0]
    for_kwok = karpenter.for_kwok(declared)
    assert for_kwok["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.kwok.sh",
        "kind": "KWOKNodeClass",
        "name": "default",
    }
    for_kwok["spec"]["template"]["spec"]["nodeClassRef"] = declared["spec"]["template"]["spec"][
        "nodeClassRef"
    ]
    assert for_kwok == declared


def test_the_core_gets_the_feature_gates_the_pinned_chart_sets() -> None:
    _, run = karpenter.platform_run()
    env = karpenter.controller_env(karpenter._known(karpenter.release_values(run)))
    gates = dict(g.split("=") for g in env["FEATURE_GATES"].split(","))
    assert gates["NodeOverlay"] == "true" and gates["NodeRepair"] == "true"
    assert gates["SpotToSpotConsolidation"] == "false"


def test_karpenters_charts_run_no_daemonset_as_the_agent_table_assumes() -> None:
    from infra.platform.karpenter import CHART, CRD_CHART, REPOSITORY
    from infra.tooling.agents import NO_DAEMONSET_CHARTS
    from infra.tooling.pinned_chart import render

    assert {f"{REPOSITORY}/{CHART}", f"{REPOSITORY}/{CRD_CHART}"} <= NO_DAEMONSET_CHARTS
    _, run = karpenter.platform_run()
    values = karpenter._known(karpenter.release_values(run))
    rendered = render(values, release="k", namespace="kube-system", chart=karpenter.chart())
    kinds = {d["kind"] for d in rendered}
    assert "Deployment" in kinds and "DaemonSet" not in kinds
    deployment = next(d for d in rendered if d["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {
        "kubernetes.io/os": "linux",
        "node-role": "system",
    }
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "karpenter"
