"""Stack config: defaults, and every bad value refused with the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.platform.config import ConfigError, GpuPoolConfig, load
from infra.platform.network import subnet_layout

ROOT = Path(__file__).resolve().parents[2]
OK_ENDPOINT = {"publicAccessCidrs": ["203.0.113.0/24"]}


def _load(**raw):
    raw.setdefault("endpoint", OK_ENDPOINT)
    return load(raw, region="us-west-2", default_cluster_name="eks-gpu-platform-test")


def test_defaults_are_a_small_arm_platform_with_one_gpu_pool_from_zero() -> None:
    config = _load()
    assert config.kubernetes_version == "1.35"
    assert config.gpu_pools == {
        "default": GpuPoolConfig(instance_types=("g5g.xlarge",), min_size=0, max_size=2, disk_size_gib=100)
    }
    assert config.gpu_pools["default"].initial_size == 0
    assert config.gpu_pools["default"].node_repair is True
    assert config.cluster_admins == ()
    assert config.system_nodes.instance_types == ("t4g.large",)
    assert (config.contract.key, config.contract.value) == ("GPU", "true")
    assert config.contract.pool_names == ("default",)
    assert config.endpoint.private_access is True
    assert config.cluster_name == "eks-gpu-platform-test"


def test_dev_stack_file_is_valid() -> None:
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    project = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("eks-gpu-platform:")}
    config = load(project, region=raw["aws:region"], default_cluster_name="eks-gpu-platform-dev")
    assert set(config.gpu_pools) == {"inference", "training"}
    assert config.contract.pool("inference").time_slicing_replicas == 4
    assert config.gpu_pools["training"].capacity_type == "SPOT"
    assert config.contract.pool("training").gpus_per_node == 2
    assert config.device_plugin.chart_version == "0.19.3"


def test_existing_vpc() -> None:
    config = _load(
        network={"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0aaaaaaa", "subnet-0bbbbbbb"]}
    )
    assert config.network.vpc_id == "vpc-0123456789abcdef0"
    assert config.network.private_subnet_ids == ("subnet-0aaaaaaa", "subnet-0bbbbbbb")


def test_numbers_and_booleans_given_as_text_are_read() -> None:
    config = _load(gpuPools={"gpu": {"minSize": "0", "desiredSize": "1", "maxSize": "3"}}, production="true")
    assert config.gpu_pools["gpu"].max_size == 3 and config.production is True


BAD = [
    ({"kubernetesVersion": "1.20"}, "kubernetesVersion: Input should be '1.35' or '1.36', got '1.20'"),
    ({"kubernetesVersion": 1.35}, "kubernetesVersion: Input should be '1.35' or '1.36', got 1.35"),
    ({"kubernetesVersion": "1.34"}, "1.34 left EKS standard support on 2026-12-02"),
    (
        {"gpuPools": {"gpu": {"instanceTypes": ["g5.xlarge"]}}},
        "gpuPools.gpu.instanceTypes[0]: Input should be 'g5g.xlarge', 'g5g.2xlarge'",
    ),
    (
        {"gpuPools": {"gpu": {"instanceTypes": ["p6e-gb200.36xlarge"]}}},
        "or 'g5g.metal', got 'p6e-gb200.36xlarge'",
    ),
    (
        {"gpuPools": {"gpu": {"instanceTypes": []}}},
        "gpuPools.gpu.instanceTypes: Tuple should have at least 1 item",
    ),
    ({"gpuPools": {"gpu": {"instanceTypes": ["g5g.xlarge", "g5g.xlarge"]}}}, "lists an item twice"),
    (
        {"endpoint": {"publicAccessCidrs": ["203.0.113.7/32", "203.0.113.7/32"]}},
        "endpoint.publicAccessCidrs lists an item twice: ['203.0.113.7/32', '203.0.113.7/32']",
    ),
    ({"gpuPools": {"gpu": {"instanceTypes": ["g5.xlarge"]}}}, "only Arm NVIDIA (g5g) types"),
    (
        {"gpuPools": {"gpu": {"minSize": 3, "maxSize": 2, "desiredSize": 2}}},
        "minSize (3) must not exceed maxSize (2)",
    ),
    (
        {"gpuPools": {"gpu": {"desiredSize": 5}}},
        "gpuPools.gpu.desiredSize (5) must be within minSize..maxSize (0..2)",
    ),
    (
        {"gpuPools": {"gpu": {"minSize": -1}}},
        "gpuPools.gpu.minSize: Input should be greater than or equal to 0, got -1",
    ),
    (
        {"gpuPools": {"gpu": {"maxSize": True}}},
        "gpuPools.gpu.maxSize: Input should be a valid integer, got True",
    ),
    (
        {"gpuPools": {"gpu": {"diskSizeGiB": 30}}},
        "gpuPools.gpu.diskSizeGiB: Input should be greater than or equal to 50, got 30",
    ),
    (
        {"gpuPools": {"gpu": {"capacityType": "spot"}}},
        "gpuPools.gpu.capacityType: Input should be 'ON_DEMAND' or 'SPOT', got 'spot'",
    ),
    (
        {"gpuPools": {"gpu": {"instanceType": "g5g.xlarge"}}},
        "unknown setting gpuPools.gpu.instanceType (did you mean gpuPools.gpu.instanceTypes?)",
    ),
    (
        {"systemNodes": {"instanceTypes": ["m5.large"]}},
        "systemNodes.instanceTypes[0]: Input should be 't4g.medium'",
    ),
    ({"systemNodes": {"instanceTypes": ["g5g.xlarge"]}}, "or 'c7g.large', got 'g5g.xlarge'"),
    ({"gpuPool": {}}, "unknown setting gpuPool (did you mean gpuPools?)"),
    ({"placement": {"key": "GPU", "value": True}}, 'write "true" in quotes'),
    ({"placement": {"key": "kubernetes.io/gpu"}}, "EKS refuses"),
    ({"placement": {"effect": "NoExecute"}}, "unknown setting placement.effect"),
    (
        {"devicePlugin": {"chartVersion": "latest"}},
        "devicePlugin.chartVersion: String should match pattern '^\\d+\\.\\d+\\.\\d+$', got 'latest'; e.g. 0.19.3",
    ),
    (
        {"devicePlugin": {"namespace": "default"}},
        "devicePlugin.namespace: String should match pattern '^(?!default$|kube-system$)",
    ),
    ({"devicePlugin": {"namespace": "default"}}, "the chart refuses 'default' unless allowDefaultNamespace"),
    ({"devicePlugin": {"namespace": "Bad_NS"}}, "devicePlugin.namespace: String should match pattern"),
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
        "endpoint.publicAccessCidrs[0]: Input is not a valid IPv4 network",
    ),
    (
        {"endpoint": {"publicAccess": "yes", **OK_ENDPOINT}},
        "endpoint.publicAccess: Input should be a valid boolean, got 'yes'",
    ),
    ({"network": {"cidr": "10.0.0.0/24"}}, "cannot hold 3 private /19 and 3 public /22 subnets"),
    ({"network": {"cidr": "10.0.0.0/18", "availabilityZones": 2}}, "use a /17 or larger"),
    ({"network": {"cidr": "10.0.0.0/17", "availabilityZones": 4}}, "use a /16 or larger"),
    # EC2 CreateVpc takes /16 to /28; a /8 holds the subnets but AWS refuses it (issue 19).
    ({"network": {"cidr": "10.0.0.0/8"}}, "network.cidr must be an IPv4 block from /16 to /28"),
    ({"network": {"cidr": "10.0.0.0/15"}}, "the VPC sizes AWS CreateVpc accepts, got '10.0.0.0/15'"),
    ({"network": {"cidr": "10.0.0.0/29"}}, "network.cidr must be an IPv4 block from /16 to /28"),
    ({"network": {"cidr": "10.0.0.0/17"}}, None),  # 3 AZs fit a /17
    (
        {"network": {"cidr": "fd00::/56"}},
        "network.cidr: Input is not a valid IPv4 network, got 'fd00::/56'",
    ),
    (
        {"endpoint": {"publicAccessCidrs": ["2001:db8::/32"]}},
        "endpoint.publicAccessCidrs[0]: Input is not a valid IPv4 network",
    ),
    (
        {"network": {"availabilityZones": 1}},
        "network.availabilityZones: Input should be greater than or equal to 2, got 1",
    ),
    ({"network": {"natGateways": "None"}}, "network.natGateways: Input should be 'Single' or 'OnePerAz'"),
    ({"network": {"vpcId": "vpc-0123456789abcdef0"}}, "needs both vpcId and privateSubnetIds"),
    (
        {"network": {"vpcId": "my-vpc", "privateSubnetIds": ["subnet-0aaaaaaa", "subnet-0bbbbbbb"]}},
        "network.vpcId: String should match pattern '^vpc-[0-9a-f]{8,17}$', got 'my-vpc'",
    ),
    (
        {"network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0aaaaaaa"]}},
        "network.privateSubnetIds: Tuple should have at least 2 items",
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
    ({"network": "10.0.0.0/16"}, "network: Input should be an object (key: value settings)"),
    ({"production": "maybe"}, "production: Input should be a valid boolean"),
    (
        {"clusterName": "has space"},
        "clusterName: String should match pattern '^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$'",
    ),
    # What CreateNodegroup refuses: maxSize 0 (NodegroupScalingConfig.maxSize >= 1).
    (
        {"gpuPools": {"gpu": {"maxSize": 0}}},
        "gpuPools.gpu.maxSize: Input should be greater than or equal to 1, got 0",
    ),
    (
        {"systemNodes": {"maxSize": 0, "minSize": 0}},
        "systemNodes.maxSize: Input should be greater than or equal to 1, got 0",
    ),
    ({"gpuPools": {"gpu": {"maxSize": 2.5}}}, "gpuPools.gpu.maxSize: Input should be a valid integer"),
    # Wrong types at any depth.
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {"replicas": "four"}}}}},
        "gpuPools.gpu.sharing.timeSlicing.replicas: Input should be a valid integer, unable to parse",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {}}}}},
        "gpuPools.gpu.sharing.timeSlicing.replicas is required",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeslicing": {"replicas": 2}}}}},
        "did you mean gpuPools.gpu.sharing.timeSlicing?",
    ),
    ({"gpuPools": {"gpu": "g5g.xlarge"}}, "gpuPools.gpu: Input should be an object (key: value settings)"),
    ({"gpuPools": ["gpu"]}, "gpuPools: Input should be an object (key: value settings)"),
    (
        {"endpoint": {"publicAccessCidrs": "203.0.113.0/24"}},
        "endpoint.publicAccessCidrs: Input should be a list",
    ),
    # Pools (issue 12).
    ({"gpuNodes": {"instanceTypes": ["g5g.xlarge"]}}, "gpuNodes was replaced by gpuPools"),
    ({"gpuPools": {}}, "gpuPools: Dictionary should have at least 1 item"),
    (
        {"gpuPools": {"Inference Pool": {}}},
        "gpuPools key 'Inference Pool': String should match pattern",
    ),
    (
        {"gpuPools": {"a.b": {}}},
        "a pool name is 1-32 letters, digits, '-' or '_'",
    ),  # EKS node group names take no '.'
    ({"gpuPools": {"p" * 33: {}}}, "a pool name is 1-32"),  # gpu-<pool>- is capped at 37 characters
    # The device plugin's default config is named whole-gpus; a shared pool's config takes the pool's
    # name, so a pool called that would overwrite the default every unshared node runs (issue 19).
    (
        {"gpuPools": {"whole-gpus": {"sharing": {"timeSlicing": {"replicas": 2}}}}},
        "gpuPools key 'whole-gpus': String should match pattern '^(?!whole-gpus$)",
    ),
    (
        {"gpuPools": {"whole-gpus": {}}},
        "got 'whole-gpus'; 'whole-gpus' is reserved: the device plugin's default config",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {"replicas": 1}}}}},
        "gpuPools.gpu.sharing.timeSlicing.replicas: Input should be greater than or equal to 2, got 1",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {"replicas": 64}}}}},
        "replicas: Input should be less than or equal to 16, got 64",
    ),
    (
        {"gpuPools": {"gpu": {"instanceTypes": ["g5g.xlarge", "g5g.16xlarge"]}}},
        "gpuPools.gpu.instanceTypes mix GPU counts {'g5g.xlarge': 1, 'g5g.16xlarge': 2}",
    ),
    ({"placement": {"key": "node-role"}}, "collides with the system group's label"),
    ({"placement": {"key": "eks-gpu/pool"}}, "eks-gpu/pool"),
    # Access (issue 11).
    ({"clusterAdmins": ["arn:aws:iam::123456789012:role/ci-deploy"]}, None),
    (
        {"clusterAdmins": "arn:aws:iam::123456789012:role/ci-deploy"},
        "clusterAdmins: Input should be a list",
    ),
    ({"clusterAdmins": ["ci-deploy"]}, "clusterAdmins[0]: String should match pattern"),
    (
        {"clusterAdmins": ["arn:aws:sts::123456789012:assumed-role/ci-deploy/session"]},
        "got 'arn:aws:sts::123456789012:assumed-role/ci-deploy/session'; e.g. arn:aws:iam::123456789012:role/ci-deploy; "
        "an assumed-role session: give the role's ARN",
    ),
    (
        {"clusterAdmins": ["arn:aws:iam::123456789012:role/a", "arn:aws:iam::123456789012:role/a"]},
        "clusterAdmins lists an item twice",
    ),
    ({"region": "eu-west-1"}, "unknown setting region: set it with aws:region"),
]


def test_objects_and_lists_given_as_json_text_are_read_at_any_depth() -> None:
    """`pulumi config set` without --path stores an object or list as JSON text, nested ones too."""
    config = _load(
        gpuPools={"gpu": {"sharing": '{"timeSlicing": {"replicas": 4}}', "instanceTypes": '["g5g.2xlarge"]'}}
    )
    pool = config.gpu_pools["gpu"]
    assert pool.sharing.time_slicing.replicas == 4 and pool.instance_types == ("g5g.2xlarge",)


@pytest.mark.parametrize(("raw", "message"), BAD, ids=[str(m) for _, m in BAD])
def test_bad_config_is_refused_with_the_key_and_what_is_allowed(raw: dict, message: str | None) -> None:
    if message is None:
        _load(**raw)
        return
    with pytest.raises(ConfigError) as caught:
        _load(**raw)
    assert message in str(caught.value)


def test_subnet_layout_is_computed_and_fits_the_vpc() -> None:
    private, public = subnet_layout("10.0.0.0/16", 3)
    assert private == ["10.0.0.0/19", "10.0.32.0/19", "10.0.64.0/19"]
    assert public == ["10.0.96.0/22", "10.0.100.0/22", "10.0.104.0/22"]
    assert subnet_layout("10.0.0.0/17", 3)[1] == ["10.0.96.0/22", "10.0.100.0/22", "10.0.104.0/22"]


def test_secret_settings_are_supported_only_where_they_can_stay_secret() -> None:
    config = load(
        {"endpoint": OK_ENDPOINT, "clusterAdmins": ["arn:aws:iam::123456789012:role/x"]},
        region="us-west-2",
        default_cluster_name="x",
        secret_keys=frozenset({"clusterAdmins", "endpoint"}),
    )
    assert config.secret_keys == {"clusterAdmins", "endpoint"}
    with pytest.raises(ConfigError, match="gpuPools cannot be kept secret"):
        load(
            {"endpoint": OK_ENDPOINT},
            region="us-west-2",
            default_cluster_name="x",
            secret_keys=frozenset({"gpuPools"}),
        )


def test_region_is_required() -> None:
    with pytest.raises(ConfigError, match="aws:region is required"):
        load({}, region=None, default_cluster_name="x")
