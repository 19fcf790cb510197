"""The arguments the cluster-autoscaler chart 9.59.0 gives the container for the platform's values."""

from __future__ import annotations

import pytest

from infra.tooling.offline import PLATFORM_ROOT, run_project
from localcluster.autoscaling import autoscaler_values
from localcluster.chart_args import ChartValuesError, container_args


def test_the_dev_stacks_values_render_to_these_arguments() -> None:
    values = autoscaler_values(run_project(PLATFORM_ROOT, "dev"))
    assert container_args(values, "kube-system") == [
        "--cloud-provider=aws",
        "--namespace=kube-system",
        "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
        "k8s.io/cluster-autoscaler/eks-gpu-platform-dev,eks-gpu/autoscaled=true",
        # extraArgs in key order, the chart's defaults (logtostderr, stderrthreshold, v) merged under ours
        "--balance-similar-node-groups=true",
        "--expander=priority,least-waste",
        "--logtostderr=true",
        "--scale-down-unneeded-time=10m",
        "--stderrthreshold=info",
        "--v=4",
    ]


def test_a_repeated_flag_is_keyed_with_a_suffix_and_a_null_value_is_a_bare_flag() -> None:
    values = {
        "cloudProvider": "aws",
        "extraArgs": {"balancing-ignore-label_1": "a", "balancing-ignore-label_2": "b", "v": None},
    }
    assert container_args(values, "ns")[2:5] == [
        "--balancing-ignore-label=a",
        "--balancing-ignore-label=b",
        "--logtostderr=true",
    ]
    assert "--v" in container_args(values, "ns")


def test_values_it_does_not_follow_the_chart_for_are_refused() -> None:
    with pytest.raises(ChartValuesError, match="podAnnotations"):
        container_args({"cloudProvider": "aws", "podAnnotations": {}}, "ns")
    with pytest.raises(ChartValuesError, match="gce"):
        container_args({"cloudProvider": "gce"}, "ns")
