"""Cluster Autoscaler: scale from zero works for GPU pods only; IAM exactly as documented, scoped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.platform.autoscaler import POD_IDENTITY_TRUST_POLICY, asg_tags, iam_policy, node_template
from infra.platform.config import ConfigError, load
from infra.tooling.offline import Run, run_project
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.podspec import place_pod_spec
from infra.workloads.scheduling import fits

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "eks-gpu-platform-dev"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


def test_asg_tags_are_exactly_discovery_plus_node_template() -> None:
    assert asg_tags(CLUSTER, DEFAULT_PLACEMENT, ("g5g.xlarge", "g5g.16xlarge")) == {
        "k8s.io/cluster-autoscaler/enabled": "true",
        "k8s.io/cluster-autoscaler/eks-gpu-platform-dev": "owned",
        "k8s.io/cluster-autoscaler/node-template/label/GPU": "true",
        "k8s.io/cluster-autoscaler/node-template/taint/GPU": "true:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "1",
    }


def test_tags_are_declared_on_the_gpu_groups_asg(dev: Run) -> None:
    tags = {r.inputs["tag"]["key"]: r.inputs for r in dev.of_type("aws:autoscaling/tag:Tag")}
    assert {k: v["tag"]["value"] for k, v in tags.items()} == asg_tags(
        CLUSTER, DEFAULT_PLACEMENT, ("g5g.xlarge", "g5g.2xlarge")
    )
    assert {v["autoscalingGroupName"] for v in tags.values()} == {
        "computed(gpu-platform-gpu.autoscalingGroupName)"
    }
    assert all(v["tag"]["propagateAtLaunch"] is False for v in tags.values())


@pytest.mark.parametrize("placement", [DEFAULT_PLACEMENT, Placement("accelerator", "t4g")])
def test_zero_node_template_fits_gpu_pods_and_never_plain_ones(placement: Placement) -> None:
    template = node_template("gpu@0", asg_tags(CLUSTER, placement, ("g5g.xlarge",)), "g5g.xlarge")
    assert fits(place_pod_spec({"containers": [{"name": "m"}]}, placement), template).fits
    assert not fits({"containers": [{"name": "web"}]}, template).fits
    assert not fits(
        {"containers": [{"name": "web"}], "nodeSelector": placement.node_selector()}, template
    ).fits
    assert fits(place_pod_spec({"containers": [{"name": "m"}]}, placement, gpus=2), template).reasons == (
        "needs 2 nvidia.com/gpu, node has 1",
    )


def test_iam_policy_is_the_documented_one_scoped_to_this_cluster(dev: Run) -> None:
    policy = json.loads(dev.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    assert policy == iam_policy(CLUSTER, "us-west-2", "123456789012")
    assert (
        policy["Statement"][1]["Resource"]
        == "arn:aws:eks:us-west-2:123456789012:nodegroup/eks-gpu-platform-dev/*/*"
    )
    assert policy["Statement"][2]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/eks-gpu-platform-dev": "owned"}
    }
    role = dev.one("aws:iam/role:Role", "cluster-autoscaler-role")
    assert json.loads(role.inputs["assumeRolePolicy"]) == POD_IDENTITY_TRUST_POLICY
    association = dev.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association.inputs == {
        "clusterName": CLUSTER,
        "namespace": "kube-system",
        "serviceAccount": "cluster-autoscaler",
        "roleArn": "arn:aws:iam::123456789012:role/cluster-autoscaler-role",
    }


def test_release_runs_on_system_nodes_with_matching_image(dev: Run) -> None:
    release = dev.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler")
    values = release.inputs["values"]
    assert release.inputs["version"] == "9.59.0" and release.inputs["namespace"] == "kube-system"
    assert values["image"] == {"tag": "v1.34.5"}
    assert values["nodeSelector"] == {"node-role": "system"}
    assert values["autoDiscovery"] == {"clusterName": CLUSTER}
    assert values["extraArgs"] == {
        "expander": "least-waste",
        "scale-down-unneeded-time": "10m",
        "balance-similar-node-groups": "true",
    }


def test_pulumi_leaves_the_desired_size_to_the_autoscaler(dev: Run) -> None:
    assert dev.one("aws:eks/nodeGroup:NodeGroup", "gpu-platform-gpu").ignore_changes == [
        "scalingConfig.desiredSize"
    ]
    assert dev.one("aws:eks/nodeGroup:NodeGroup", "gpu-platform-system").ignore_changes == []


def test_autoscaler_off_declares_none_of_it(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    (tmp_path / "Pulumi.off.yaml").write_text(
        dev.replace(
            "    enabled: true\n    chartVersion: 9.59.0", "    enabled: false\n    chartVersion: 9.59.0"
        )
    )
    off = run_project(tmp_path, "off")
    assert [r for r in off.resources if "autoscal" in r.type.lower() or "autoscaler" in r.name] == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"autoscaler": {"enabled": True}, "gpuNodes": {"minSize": 0, "desiredSize": 0, "maxSize": 0}},
            "nothing to scale",
        ),
        (
            {"autoscaler": {"expander": "cheapest"}},
            "autoscaler.expander must be one of least-waste, priority",
        ),
        ({"autoscaler": {"scaleDownUnneededTime": "ten minutes"}}, "a duration such as 10m"),
        (
            {"autoscaler": {"chartVersion": "latest"}},
            "autoscaler.chartVersion must be a pinned chart version",
        ),
        ({"autoscaler": {"enable": True}}, "did you mean autoscaler.enabled?"),
    ],
)
def test_bad_autoscaler_config_is_refused(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(
            {"endpoint": {"publicAccessCidrs": ["203.0.113.0/24"]}, **raw},
            region="us-west-2",
            default_cluster_name="x",
        )
    assert message in str(caught.value)
