"""Cluster Autoscaler: the tags each GPU pool's ASG gets, its release values, IAM scoped to this cluster and
partition, start order. What the autoscaler decides from them is asked of the real one (tests/cluster/test_autoscaler.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.platform.autoscaler import IMAGE_TAGS, asg_name_pattern, iam_policy
from infra.platform.config import SUPPORTED_KUBERNETES_VERSIONS, ConfigError, load
from infra.platform.iam import POD_IDENTITY_TRUST_POLICY
from infra.platform.node_pools import asg_tags, ephemeral_storage
from infra.tooling import offline
from infra.tooling.offline import Run, run_project
from infra.workloads.placement import GpuPool, Placement
from tests.platform.conftest import dev_variant
from tests.platform.test_gpu_platform import _request_errors

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "eks-gpu-platform-dev"
TAG = "aws:autoscaling/tag:Tag"
INFERENCE = GpuPool("inference", gpus_per_node=1, time_slicing_replicas=4)
TRAINING = GpuPool("training", gpus_per_node=2, capacity_type="SPOT")
CONTRACT = Placement(pools=(INFERENCE, TRAINING))


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


def test_pool_asgs_get_only_tags_eks_does_not_set() -> None:
    tags = asg_tags(CONTRACT, INFERENCE, ("g5g.xlarge",), 100)
    assert "k8s.io/cluster-autoscaler/enabled" not in tags
    assert f"k8s.io/cluster-autoscaler/{CLUSTER}" not in tags
    assert tags == {
        "eks-gpu/autoscaled": "true",
        "k8s.io/cluster-autoscaler/node-template/label/GPU": "true",
        "k8s.io/cluster-autoscaler/node-template/label/eks-gpu/pool": "inference",
        "k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator": "nvidia-t4g",
        "k8s.io/cluster-autoscaler/node-template/label/nvidia.com/device-plugin.config": "inference",
        "k8s.io/cluster-autoscaler/node-template/taint/GPU": "true:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/resources/cpu": "3920m",
        "k8s.io/cluster-autoscaler/node-template/resources/memory": "6584Mi",
        "k8s.io/cluster-autoscaler/node-template/resources/pods": "58",
        "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage": "88Gi",
        "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": "4",
    }


def test_a_pool_of_several_types_promises_what_its_smallest_node_offers() -> None:
    """The template must hold for every node the group may launch: the least allocatable of its types."""
    tags = asg_tags(CONTRACT, INFERENCE, ("g5g.2xlarge", "g5g.xlarge"), 100)
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/memory"] == "6584Mi"
    assert tags["k8s.io/cluster-autoscaler/node-template/resources/cpu"] == "3920m"


@pytest.mark.parametrize(
    ("disk", "allocatable"), [(50, "43Gi"), (100, "88Gi"), (200, "177Gi"), (1000, "890Gi")]
)
def test_the_template_offers_the_disk_the_kubelet_leaves_to_pods(disk: int, allocatable: str) -> None:
    """Issue 26 item 6: the volume, less XFS's share, less nodeadm's evictionHard nodefs.available 10%
    and kubeReserved ephemeral-storage 1Gi, in whole GiB rounded down (never more than the node has)."""
    assert ephemeral_storage(disk) == allocatable
    assert (
        asg_tags(CONTRACT, TRAINING, ("g5g.16xlarge",), disk)[
            "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"
        ]
        == allocatable
    )


def test_the_dev_stack_tags_each_pools_asg_and_never_the_eks_discovery_tags(dev: Run) -> None:
    tags = dev.of_type(TAG)
    keys = {t.inputs["tag"]["key"] for t in tags}
    assert "k8s.io/cluster-autoscaler/enabled" not in keys
    assert f"k8s.io/cluster-autoscaler/{CLUSTER}" not in keys
    by_pool = {
        pool: {t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in tags if f"-{pool}-" in t.name}
        for pool in ("inference", "training")
    }
    assert by_pool["inference"]["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "4"
    assert by_pool["training"]["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "2"
    # From each pool's diskSizeGiB (100 and 200 in Pulumi.dev.yaml).
    assert (
        by_pool["inference"]["k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"] == "88Gi"
    )
    assert (
        by_pool["training"]["k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"] == "177Gi"
    )
    assert all(not t.inputs["tag"]["propagateAtLaunch"] for t in tags)


def test_node_group_tags_carry_the_gpu_count_the_autoscaler_reads_last(dev: Run) -> None:
    groups = {g.name: g.inputs for g in dev.of_type("aws:eks/nodeGroup:NodeGroup")}
    resource = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
    assert groups["gpu-platform-gpu-inference"]["tags"] == {resource: "4"}
    assert groups["gpu-platform-gpu-training"]["tags"] == {resource: "2"}


def test_iam_policy_scales_only_this_clusters_gpu_pools(dev: Run) -> None:
    policy = iam_policy(CLUSTER, "us-west-2", "123456789012", "aws")
    scale = next(s for s in policy["Statement"] if s["Sid"] == "ScaleOnlyThisClustersGpuPools")
    assert scale["Condition"]["StringEquals"] == {
        f"aws:ResourceTag/k8s.io/cluster-autoscaler/{CLUSTER}": "owned",
        "aws:ResourceTag/eks-gpu/autoscaled": "true",
    }
    read = next(s for s in policy["Statement"] if s["Sid"] == "ReadNodeGroupLabelsAndTaints")
    assert read["Resource"] == f"arn:aws:eks:us-west-2:123456789012:nodegroup/{CLUSTER}/*/*"
    role = dev.one("aws:iam/role:Role", "cluster-autoscaler-role")
    assert json.loads(role.inputs["assumeRolePolicy"]) == POD_IDENTITY_TRUST_POLICY
    assert (
        json.loads(dev.one("aws:iam/rolePolicy:RolePolicy", "cluster-autoscaler-policy").inputs["policy"])
        == policy
    )


@pytest.mark.parametrize(
    ("partition", "region"), [("aws-us-gov", "us-gov-west-1"), ("aws-cn", "cn-northwest-1")]
)
def test_iam_policy_names_the_accounts_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partition: str, region: str
) -> None:
    """Issue 26 item 9: an ARN in the wrong partition matches nothing, so DescribeNodegroup is denied."""
    answer = offline._call

    def call(token: str, args: dict) -> dict:
        if token == "aws:index/getPartition:getPartition":
            return {"partition": partition, "dnsSuffix": "amazonaws.com", "id": partition}
        return answer(token, args)

    monkeypatch.setattr(offline, "_call", call)
    run = dev_variant(tmp_path, {"aws:region: us-west-2": f"aws:region: {region}"})
    text = run.one("aws:iam/rolePolicy:RolePolicy", "cluster-autoscaler-policy").inputs["policy"]
    read = next(s for s in json.loads(text)["Statement"] if s["Sid"] == "ReadNodeGroupLabelsAndTaints")
    assert read["Resource"] == f"arn:{partition}:eks:{region}:123456789012:nodegroup/{CLUSTER}/*/*"
    request = {
        "RoleName": "cluster-autoscaler-role",
        "PolicyName": "cluster-autoscaler-policy",
        "PolicyDocument": text,
    }
    assert _request_errors("iam", "PutRolePolicy", request) == []


def test_release_discovers_gpu_pools_only_and_ranks_them_by_node_price(dev: Run) -> None:
    values = dev.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler").inputs["values"]
    assert values["image"] == {"tag": "v1.35.2"}
    assert values["nodeSelector"] == {"node-role": "system"}
    assert values["autoDiscovery"] == {
        "clusterName": CLUSTER,
        "tags": [
            "k8s.io/cluster-autoscaler/enabled",
            f"k8s.io/cluster-autoscaler/{CLUSTER}",
            "eks-gpu/autoscaled=true",
        ],
    }
    assert values["extraArgs"] == {
        "expander": "priority,least-waste",
        "scale-down-unneeded-time": "10m",
        "balance-similar-node-groups": "true",
    }
    # The g5g.xlarge/2xlarge inference pool costs less a node than the g5g.16xlarge spot training pool:
    # it ranks first for a pod both fit (tests/platform/test_expander.py runs the expander chain).
    assert values["expanderPriorities"] == {
        "20": ["^eks-gpu-inference-[0-9]{18}[0-9a-f]{8}-"],
        "15": ["^eks-gpu-training-[0-9]{18}[0-9a-f]{8}-"],
    }


def test_the_priorities_match_the_asg_names_eks_gives_the_pools() -> None:
    """ASG eks-<node group>-<uuid>; node group gpu-<pool>- + PrefixedUniqueId (counter in hex)."""
    import re

    uuid = "a2c8f1e4-58b1-1d2e-7f3a-0c9d8e7f6a5b"
    training = f"eks-gpu-training-2026120210153012340000000a-{uuid}"
    inference = f"eks-gpu-inference-2026120210153012340000001f-{uuid}"
    assert re.match(asg_name_pattern("training"), training)
    assert not re.match(asg_name_pattern("training"), inference)
    assert re.match(asg_name_pattern("inference"), inference)
    assert not re.match(asg_name_pattern("inference"), training)
    # A pool whose name extends another's is never matched by the shorter one's pattern.
    assert not re.match(asg_name_pattern("a"), f"eks-gpu-a-b-2026120210153012340000000a-{uuid}")


def test_every_supported_kubernetes_version_has_a_matching_image() -> None:
    assert set(IMAGE_TAGS) == set(SUPPORTED_KUBERNETES_VERSIONS)
    assert all(tag.startswith(f"v{version}.") for version, tag in IMAGE_TAGS.items())


def test_release_starts_only_after_its_pod_identity_and_the_agent(dev: Run) -> None:
    release = dev.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler")
    association = dev.one(
        "aws:eks/podIdentityAssociation:PodIdentityAssociation", "cluster-autoscaler-identity"
    )
    agent = dev.one("aws:eks/addon:Addon", "gpu-platform-pod-identity")
    assert association.urn in release.dependencies
    assert agent.urn in release.dependencies


def test_no_node_group_ignores_its_size(dev: Run) -> None:
    """The desired size sent is computed from the live one (test_scaling_updates), never ignored:
    an ignored path is filled from the old inputs, which is how minSize rises above it."""
    assert all(g.ignore_changes == [] for g in dev.of_type("aws:eks/nodeGroup:NodeGroup"))


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
    assert all(g.ignore_changes == [] for g in off.of_type("aws:eks/nodeGroup:NodeGroup"))


def _load(**raw):
    return load(
        {"endpoint": {"publicAccessCidrs": ["203.0.113.0/24"]}, **raw},
        region="us-west-2",
        default_cluster_name="x",
    )


@pytest.mark.parametrize("duration", ["10m", "90s", "1h30m", "1.5h", "300ms", "0", "2h45m30.5s", "1us"])
def test_every_duration_the_autoscaler_accepts_is_accepted(duration: str) -> None:
    assert (
        _load(autoscaler={"scaleDownUnneededTime": duration}).autoscaler.scale_down_unneeded_time == duration
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"autoscaler": {"expander": "cheapest"}},
            "autoscaler.expander must be one of least-waste, priority, random, most-pods, got 'cheapest'",
        ),
        ({"autoscaler": {"scaleDownUnneededTime": "ten minutes"}}, "must be a duration as Go writes it"),
        ({"autoscaler": {"scaleDownUnneededTime": "1d"}}, "units ns, us, ms, s, m, h"),
        ({"autoscaler": {"scaleDownUnneededTime": "++10m"}}, "must be a duration as Go writes it"),
        ({"autoscaler": {"scaleDownUnneededTime": "-10m"}}, "scaleDownUnneededTime must not be negative"),
        (
            {"autoscaler": {"scaleDownUnneededTime": 600}},
            'autoscaler.scaleDownUnneededTime must be a Go duration (e.g. "90s", "10m", "1h30m"), got 600',
        ),
        (
            {"autoscaler": {"chartVersion": "latest"}},
            "autoscaler.chartVersion must be a release version: three numbers joined by dots, no v and no range, e.g. \"9.59.0\", got 'latest'",
        ),
        ({"autoscaler": {"enable": True}}, "did you mean autoscaler.enabled?"),
    ],
)
def test_bad_autoscaler_config_is_refused(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(**raw)
    assert message in str(caught.value)
