"""Stack config: defaults, and every bad value refused with the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.platform.config import ConfigError, NodeGroupConfig, load
from infra.workloads.placement import Placement

ROOT = Path(__file__).resolve().parents[2]
OK_ENDPOINT = {"publicAccessCidrs": ["203.0.113.0/24"]}


def _load(**raw):
    raw.setdefault("endpoint", OK_ENDPOINT)
    return load(raw, region="us-west-2", default_cluster_name="eks-gpu-platform-test")


def test_defaults_are_a_small_arm_platform_with_one_gpu_type() -> None:
    config = _load()
    assert config.kubernetes_version == "1.34"
    assert config.gpu_nodes == NodeGroupConfig(
        ("g5g.xlarge",), min_size=0, desired_size=1, max_size=2, disk_size_gib=100
    )
    assert config.system_nodes.instance_types == ("t4g.large",)
    assert config.placement == Placement("GPU", "true")
    assert config.endpoint.private_access is True
    assert config.cluster_name == "eks-gpu-platform-test"


def test_dev_stack_file_is_valid() -> None:
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    project = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("eks-gpu-platform:")}
    config = load(project, region=raw["aws:region"], default_cluster_name="eks-gpu-platform-dev")
    assert config.gpu_nodes.instance_types == ("g5g.xlarge", "g5g.2xlarge")
    assert config.device_plugin.chart_version == "0.20.0"


def test_existing_vpc() -> None:
    config = _load(
        network={"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0aaaaaaa", "subnet-0bbbbbbb"]}
    )
    assert config.network.vpc_id == "vpc-0123456789abcdef0"
    assert config.network.private_subnet_ids == ("subnet-0aaaaaaa", "subnet-0bbbbbbb")


def test_numbers_and_booleans_given_as_text_are_read() -> None:
    config = _load(gpuNodes={"minSize": "0", "desiredSize": "1", "maxSize": "3"}, production="true")
    assert config.gpu_nodes.max_size == 3 and config.production is True


BAD = [
    ({"kubernetesVersion": "1.20"}, "kubernetesVersion must be one of 1.32, 1.33, 1.34, 1.35"),
    ({"kubernetesVersion": 1.34}, "(a quoted string)"),
    (
        {"gpuNodes": {"instanceTypes": ["g5.xlarge"]}},
        "'g5.xlarge' is not an Arm NVIDIA instance type; allowed: g5g.xlarge",
    ),
    ({"gpuNodes": {"instanceTypes": ["p6e-gb200.36xlarge"]}}, "is not an Arm NVIDIA instance type"),
    ({"gpuNodes": {"instanceTypes": []}}, "gpuNodes.instanceTypes must be a list of at least 1"),
    ({"gpuNodes": {"instanceTypes": ["g5g.xlarge", "g5g.xlarge"]}}, "lists an item twice"),
    ({"gpuNodes": {"minSize": 3, "maxSize": 2, "desiredSize": 2}}, "minSize (3) must not exceed maxSize (2)"),
    ({"gpuNodes": {"desiredSize": 5}}, "gpuNodes.desiredSize (5) must be within minSize..maxSize (0..2)"),
    ({"gpuNodes": {"minSize": -1}}, "gpuNodes.minSize must be a whole number from 0 to 450"),
    ({"gpuNodes": {"maxSize": True}}, "gpuNodes.maxSize must be a whole number"),
    ({"gpuNodes": {"diskSizeGiB": 30}}, "gpuNodes.diskSizeGiB must be at least 50"),
    ({"gpuNodes": {"capacityType": "spot"}}, "gpuNodes.capacityType must be one of ON_DEMAND, SPOT"),
    (
        {"gpuNodes": {"instanceType": "g5g.xlarge"}},
        "unknown setting gpuNodes.instanceType (did you mean gpuNodes.instanceTypes?)",
    ),
    ({"systemNodes": {"instanceTypes": ["m5.large"]}}, "is not an Arm (Graviton) system type"),
    ({"systemNodes": {"instanceTypes": ["g5g.xlarge"]}}, "is not an Arm (Graviton) system type"),
    ({"gpuNode": {}}, "unknown setting gpuNode (did you mean gpuNodes?)"),
    ({"placement": {"key": "GPU", "value": True}}, 'write "true" in quotes'),
    ({"placement": {"key": "kubernetes.io/gpu"}}, "EKS refuses"),
    ({"placement": {"effect": "NoExecute"}}, "unknown setting placement.effect"),
    (
        {"devicePlugin": {"chartVersion": "latest"}},
        "devicePlugin.chartVersion must be a pinned chart version",
    ),
    ({"devicePlugin": {"namespace": "default"}}, "the chart refuses 'default'"),
    ({"devicePlugin": {"namespace": "Bad_NS"}}, "devicePlugin.namespace must be a namespace name"),
    (
        {"endpoint": {"publicAccess": True}},
        "endpoint.publicAccessCidrs is required while endpoint.publicAccess is true",
    ),
    ({"endpoint": {"publicAccess": False, "privateAccess": False}}, "cannot both be false"),
    (
        {"endpoint": {"publicAccess": False, "publicAccessCidrs": ["10.0.0.0/8"]}},
        "endpoint.publicAccess is false",
    ),
    ({"endpoint": {"publicAccessCidrs": ["203.0.113.5"]}}, None),  # a bare address is a /32: allowed
    (
        {"endpoint": {"publicAccessCidrs": ["203.0.113.1/24"]}},
        "endpoint.publicAccessCidrs[0] must be an IPv4 CIDR",
    ),
    ({"endpoint": {"publicAccess": "yes", **OK_ENDPOINT}}, "endpoint.publicAccess must be true or false"),
    ({"network": {"cidr": "10.0.0.0/24"}}, "too small for EKS pod IPs"),
    ({"network": {"availabilityZones": 1}}, "network.availabilityZones must be a whole number from 2 to 6"),
    ({"network": {"natGateways": "None"}}, "network.natGateways must be one of Single, OnePerAz"),
    ({"network": {"vpcId": "vpc-0123456789abcdef0"}}, "needs both vpcId and privateSubnetIds"),
    (
        {"network": {"vpcId": "my-vpc", "privateSubnetIds": ["subnet-0aaaaaaa", "subnet-0bbbbbbb"]}},
        "network.vpcId must be a VPC ID",
    ),
    (
        {"network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0aaaaaaa"]}},
        "at least 2 item(s)",
    ),
    (
        {
            "network": {
                "vpcId": "vpc-0123456789abcdef0",
                "privateSubnetIds": ["subnet-0aaaaaaa", "subnet-0bbbbbbb"],
                "cidr": "10.0.0.0/16",
            }
        },
        "not both",
    ),
    ({"network": "10.0.0.0/16"}, "network must be an object"),
    ({"production": "maybe"}, "production must be true or false"),
    ({"clusterName": "has space"}, "clusterName must be 1-100 letters"),
]


@pytest.mark.parametrize(("raw", "message"), BAD, ids=[str(m) for _, m in BAD])
def test_bad_config_is_refused_with_the_key_and_what_is_allowed(raw: dict, message: str | None) -> None:
    if message is None:
        _load(**raw)
        return
    with pytest.raises(ConfigError) as caught:
        _load(**raw)
    assert message in str(caught.value)


def test_region_is_required() -> None:
    with pytest.raises(ConfigError, match="aws:region is required"):
        load({}, region=None, default_cluster_name="x")
