"""The NVIDIA device plugin's DaemonSet runs on every GPU node and on no other node."""

from __future__ import annotations

import pytest
import yaml

from infra.platform.device_plugin import CHART_TOLERATIONS, values
from infra.tooling import pinned_chart
from infra.workloads.placement import DEFAULT_PLACEMENT, GpuPool, Placement
from infra.workloads.scheduling import Node, placeable_on
from tests.tooling.chart_pods import device_plugin_pod


def _nodes(placement: Placement) -> list[Node]:
    """Nodes with exactly the labels and taints the platform's node groups declare."""
    gpu = dict(
        labels=placement.node_labels(),
        eks_taints=[placement.eks_taint()],
        instance_type="g5g.xlarge",
        arch="arm64",
        gpus=1,
    )
    return [
        Node.from_node_group("gpu-a", **gpu),
        Node.from_node_group("gpu-b", **{**gpu, "instance_type": "g5g.2xlarge"}),
        Node.from_node_group(
            "system", labels={"node-role": "system"}, instance_type="t4g.large", arch="arm64"
        ),
    ]


def test_chart_defaults_would_run_on_no_node_of_ours() -> None:
    """The default affinity wants NFD labels, the default tolerations miss GPU=true."""
    assert placeable_on(device_plugin_pod({}), _nodes(DEFAULT_PLACEMENT)) == []


@pytest.mark.parametrize("placement", [DEFAULT_PLACEMENT, Placement("example.com/accelerator", "nvidia")])
def test_our_values_run_it_on_every_gpu_node_and_no_other(placement: Placement) -> None:
    assert placeable_on(device_plugin_pod(values(placement)), _nodes(placement)) == ["gpu-a", "gpu-b"]


def test_values_replace_the_nfd_affinity_and_keep_the_charts_tolerations() -> None:
    rendered = device_plugin_pod(values(DEFAULT_PLACEMENT))
    assert rendered["nodeSelector"] == {"GPU": "true"}
    assert rendered["affinity"] == DEFAULT_PLACEMENT.node_affinity()
    chart_defaults = device_plugin_pod({})["tolerations"]
    assert rendered["tolerations"] == [DEFAULT_PLACEMENT.toleration(), *chart_defaults]
    assert list(CHART_TOLERATIONS) == chart_defaults  # the chart's own, kept


# --- the real chart at the pinned version, rendered by helm (infra/tooling/pinned_chart.py) --------


def _render(chart_values: dict) -> list[dict]:
    """``helm template`` of the real chart with ``chart_values``: every object it would install."""
    return pinned_chart.render(
        chart_values,
        release="nvidia-device-plugin",
        namespace="nvidia-device-plugin",
    )


SHARED = Placement(pools=(GpuPool("inference", 1, time_slicing_replicas=4), GpuPool("training", 2)))


def test_a_time_sliced_pool_gets_its_own_named_plugin_config() -> None:
    config = values(SHARED)["config"]
    assert config["default"] == "whole-gpus"  # untouched pools, and any node without the label
    assert {name: yaml.safe_load(text) for name, text in config["map"].items()} == {
        "whole-gpus": {"version": "v1", "flags": {"migStrategy": "none"}},
        "inference": {
            "version": "v1",
            "flags": {"migStrategy": "none"},
            "sharing": {
                "timeSlicing": {
                    # Allocate refuses a container asking for more than one shared GPU.
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
                }
            },
        },
    }


def test_sharing_keeps_the_plugin_at_drop_all_capabilities() -> None:
    """With a config map the chart adds SYS_ADMIN unless told the MIG and device-list strategies."""
    assert values(SHARED)["migStrategy"] == "none"
    assert values(SHARED)["deviceListStrategy"] == "envvar"


def test_without_sharing_there_is_no_config_and_no_sidecar() -> None:
    whole = values(Placement(pools=(GpuPool("training", 2),)))
    assert "config" not in whole and "migStrategy" not in whole


def test_the_real_chart_renders_the_sharing_config_as_the_model_says() -> None:
    objects = _render(values(SHARED))
    (config_map,) = [d for d in objects if d["kind"] == "ConfigMap"]
    rendered = {name: yaml.safe_load(text) for name, text in config_map["data"].items()}
    assert rendered == {name: yaml.safe_load(text) for name, text in values(SHARED)["config"]["map"].items()}
    plugin = next(
        d for d in objects if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "nvidia-device-plugin"
    )
    pod = plugin["spec"]["template"]["spec"]
    for container in pod["initContainers"] + pod["containers"]:
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        if "NODE_LABEL" in env:
            assert env["NODE_LABEL"] == "nvidia.com/device-plugin.config"
            assert env["DEFAULT_CONFIG"] == "whole-gpus"
        caps = (container.get("securityContext") or {}).get("capabilities") or {}
        assert "SYS_ADMIN" not in caps.get("add", [])
