"""Stack config: defaults, and every bad value refused with the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.platform.config import ConfigError, GpuPoolConfig, PlatformConfig, json_schema, load, words
from infra.platform.network import subnet_layout
from tests.platform.test_config_docs import _keys

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
    ({"kubernetesVersion": "1.20"}, 'kubernetesVersion must be one of "1.35", "1.36", got \'1.20\''),
    ({"kubernetesVersion": 1.35}, 'kubernetesVersion must be one of "1.35", "1.36", got 1.35'),
    ({"kubernetesVersion": "1.34"}, "1.34 left EKS standard support on 2026-12-02"),
    (
        {"gpuPools": {"gpu": {"instanceTypes": ["g5.xlarge"]}}},
        "gpuPools.gpu.instanceTypes[0] must be one of g5g.xlarge, g5g.2xlarge,",
    ),
    (
        {"gpuPools": {"gpu": {"instanceTypes": ["p6e-gb200.36xlarge"]}}},
        "g5g.16xlarge, g5g.metal, got 'p6e-gb200.36xlarge'",
    ),
    (
        {"gpuPools": {"gpu": {"instanceTypes": []}}},
        "gpuPools.gpu.instanceTypes must be a list (1 or more, no repeats), each one of g5g.xlarge",
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
        "gpuPools.gpu.minSize must be a whole number from 0 to 450, got -1",
    ),
    (
        {"gpuPools": {"gpu": {"maxSize": True}}},
        "gpuPools.gpu.maxSize must be a whole number from 1 to 450, got True",
    ),
    (
        {"gpuPools": {"gpu": {"diskSizeGiB": 30}}},
        "gpuPools.gpu.diskSizeGiB must be a whole number from 50 to 16384, got 30",
    ),
    (
        {"gpuPools": {"gpu": {"capacityType": "spot"}}},
        "gpuPools.gpu.capacityType must be one of ON_DEMAND, SPOT, got 'spot'",
    ),
    (
        {"gpuPools": {"gpu": {"instanceType": "g5g.xlarge"}}},
        "unknown setting gpuPools.gpu.instanceType (did you mean gpuPools.gpu.instanceTypes?)",
    ),
    (
        {"systemNodes": {"instanceTypes": ["m5.large"]}},
        "systemNodes.instanceTypes[0] must be one of t4g.medium,",
    ),
    ({"systemNodes": {"instanceTypes": ["g5g.xlarge"]}}, "m8g.large, c7g.large, got 'g5g.xlarge'"),
    ({"gpuPool": {}}, "unknown setting gpuPool (did you mean gpuPools?)"),
    ({"placement": {"key": "GPU", "value": True}}, 'write "true" in quotes'),
    ({"placement": {"key": "kubernetes.io/gpu"}}, "EKS refuses"),
    ({"placement": {"effect": "NoExecute"}}, "unknown setting placement.effect"),
    (
        {"devicePlugin": {"chartVersion": "latest"}},
        "devicePlugin.chartVersion must be a release version: three numbers joined by dots, no v and no range, e.g. \"0.19.3\", got 'latest'",
    ),
    (
        {"devicePlugin": {"namespace": "default"}},
        "devicePlugin.namespace must be a namespace name: 1-63 lowercase letters, digits or '-', a letter or digit at both ends, not default or kube-system, e.g. nvidia-device-plugin, got 'default'",
    ),
    ({"devicePlugin": {"namespace": "default"}}, "the chart refuses 'default' unless allowDefaultNamespace"),
    (
        {"devicePlugin": {"namespace": "Bad_NS"}},
        "not default or kube-system, e.g. nvidia-device-plugin, got 'Bad_NS'",
    ),
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
        "endpoint.publicAccessCidrs[0] has host bits set: '203.0.113.1/24' is inside 203.0.113.0/24, write that",
    ),
    (
        {"endpoint": {"publicAccess": "yes", **OK_ENDPOINT}},
        "endpoint.publicAccess must be true or false, got 'yes'",
    ),
    ({"network": {"cidr": "10.0.0.0/24"}}, "cannot hold 3 private /19 and 3 public /22 subnets"),
    ({"network": {"cidr": "10.0.0.0/18", "availabilityZones": 2}}, "use a /17 or larger"),
    ({"network": {"cidr": "10.0.0.0/17", "availabilityZones": 4}}, "use a /16 or larger"),
    # EC2 CreateVpc takes /16 to /28; a /8 holds the subnets but AWS refuses it (issue 19).
    ({"network": {"cidr": "10.0.0.0/8"}}, "network.cidr must be an IPv4 block from /16 to /28"),
    ({"network": {"cidr": "10.0.0.0/15"}}, "the VPC sizes AWS CreateVpc accepts, got '10.0.0.0/15'"),
    ({"network": {"cidr": "10.0.0.0/29"}}, "network.cidr must be an IPv4 block from /16 to /28"),
    ({"network": {"cidr": "10.0.0.0/17"}}, None),  # 3 AZs fit a /17
    (  # a host address with a prefix: the block it meant is named, not "must be a CIDR block"
        {"network": {"cidr": "10.0.0.1/16"}},
        "network.cidr has host bits set: '10.0.0.1/16' is inside 10.0.0.0/16, write that",
    ),
    (
        {"network": {"cidr": "fd00::/56"}},
        "network.cidr must be an IPv4 CIDR block",
    ),
    (
        {"endpoint": {"publicAccessCidrs": ["2001:db8::/32"]}},
        "endpoint.publicAccessCidrs[0] must be an IPv4 CIDR block (e.g. \"10.0.0.0/16\"), got '2001:db8::/32'",
    ),
    (
        {"network": {"availabilityZones": 1}},
        "network.availabilityZones must be a whole number from 2 to 6, got 1",
    ),
    ({"network": {"natGateways": "None"}}, "network.natGateways must be one of Single, OnePerAz, got 'None'"),
    ({"network": {"vpcId": "vpc-0123456789abcdef0"}}, "needs both vpcId and privateSubnetIds"),
    (
        {"network": {"vpcId": "my-vpc", "privateSubnetIds": ["subnet-0aaaaaaa", "subnet-0bbbbbbb"]}},
        "network.vpcId must be a VPC ID: vpc- and 8 to 17 lowercase hex digits, e.g. vpc-0123456789abcdef0, got 'my-vpc'",
    ),
    (
        {"network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0aaaaaaa"]}},
        "network.privateSubnetIds must be a list (2 or more, no repeats), each a subnet ID",
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
    ({"network": "10.0.0.0/16"}, "network must be an object of settings (key: value), got '10.0.0.0/16'"),
    ({"production": "maybe"}, "production must be true or false, got 'maybe'"),
    (
        {"clusterName": "has space"},
        "clusterName must be 1-100 letters, digits, '-' or '_', the first a letter or digit",
    ),
    # What CreateNodegroup refuses: maxSize 0 (NodegroupScalingConfig.maxSize >= 1).
    (
        {"gpuPools": {"gpu": {"maxSize": 0}}},
        "gpuPools.gpu.maxSize must be a whole number from 1 to 450, got 0",
    ),
    (
        {"systemNodes": {"maxSize": 0, "minSize": 0}},
        "systemNodes.maxSize must be a whole number from 1 to 450, got 0",
    ),
    (
        {"gpuPools": {"gpu": {"maxSize": 2.5}}},
        "gpuPools.gpu.maxSize must be a whole number from 1 to 450, got 2.5",
    ),
    # Wrong types at any depth.
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {"replicas": "four"}}}}},
        "gpuPools.gpu.sharing.timeSlicing.replicas must be a whole number from 2 to 16, got 'four'",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {}}}}},
        "gpuPools.gpu.sharing.timeSlicing.replicas is required",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeslicing": {"replicas": 2}}}}},
        "did you mean gpuPools.gpu.sharing.timeSlicing?",
    ),
    (
        {"gpuPools": {"gpu": "g5g.xlarge"}},
        "gpuPools.gpu must be an object of settings (key: value), got 'g5g.xlarge'",
    ),
    ({"gpuPools": ["gpu"]}, "gpuPools must be a map of pool name to pool settings, at least 1"),
    (
        {"endpoint": {"publicAccessCidrs": "203.0.113.0/24"}},
        "endpoint.publicAccessCidrs must be a list (1 or more, no repeats), each an IPv4 CIDR block",
    ),
    # Pools (issue 12).
    ({"gpuNodes": {"instanceTypes": ["g5g.xlarge"]}}, "gpuNodes was replaced by gpuPools"),
    (
        {"gpuPools": {}},
        "gpuPools must be a map of pool name to pool settings, at least 1 (a pool name: 1-32 letters",
    ),
    (
        {"gpuPools": {"Inference Pool": {}}},
        "gpuPools key 'Inference Pool' must be 1-32 letters, digits, '-' or '_', a letter or digit at both ends",
    ),
    (
        {"gpuPools": {"a.b": {}}},
        "gpuPools key 'a.b' must be 1-32 letters, digits, '-' or '_'",
    ),  # EKS node group names take no '.'
    ({"gpuPools": {"p" * 33: {}}}, "must be 1-32 letters"),  # gpu-<pool>- is capped at 37 characters
    # The device plugin's default config is named whole-gpus; a shared pool's config takes the pool's
    # name, so a pool called that would overwrite the default every unshared node runs (issue 19).
    (
        {"gpuPools": {"whole-gpus": {"sharing": {"timeSlicing": {"replicas": 2}}}}},
        "gpuPools key 'whole-gpus' must be 1-32 letters, digits, '-' or '_', a letter or digit at both ends, not whole-gpus",
    ),
    (
        {"gpuPools": {"whole-gpus": {}}},
        "got 'whole-gpus'; 'whole-gpus' is reserved: the device plugin's default config",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {"replicas": 1}}}}},
        "gpuPools.gpu.sharing.timeSlicing.replicas must be a whole number from 2 to 16, got 1",
    ),
    (
        {"gpuPools": {"gpu": {"sharing": {"timeSlicing": {"replicas": 64}}}}},
        "replicas must be a whole number from 2 to 16, got 64",
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
        "clusterAdmins must be a list (0 or more, no repeats), each an IAM role or user ARN",
    ),
    (
        {"clusterAdmins": ["ci-deploy"]},
        "clusterAdmins[0] must be an IAM role or user ARN, arn:PARTITION:iam::ACCOUNT:role/NAME",
    ),
    (
        {"clusterAdmins": ["arn:aws:sts::123456789012:assumed-role/ci-deploy/session"]},
        "e.g. arn:aws:iam::123456789012:role/ci-deploy, got 'arn:aws:sts::123456789012:assumed-role/ci-deploy/session'; "
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


@pytest.mark.parametrize(
    ("key", "value", "names"),
    [
        ("endpoint", '{"publicAccessCidrs": ["203.0.113.7/33"]}', "endpoint.publicAccessCidrs[0] must be"),
        (
            "network",
            {"vpcId": "vpc-0a1b2c3d", "privateSubnetIds": ["subnet-0a1b2c3d4e", "subnet-0a1b2c3d4e"]},
            "network.privateSubnetIds lists an item twice",
        ),
        ("clusterAdmins", ["arn:aws:iam::210987654321:role/ops team"], "clusterAdmins[0] must be"),
        (
            "endpoint",
            {"publicAccessCidrs": ["203.0.113.7/24"]},
            "endpoint.publicAccessCidrs[0] has host bits",
        ),
    ],
)
def test_a_refused_secret_setting_names_the_key_but_never_shows_the_value(
    key: str, value, names: str
) -> None:
    """The CLI masks a secret only where its whole text appears (engine/events.go FilterString), so a
    refusal quoting part of it would print that part: it says [secret] instead."""
    raw = {"endpoint": OK_ENDPOINT, key: value}
    with pytest.raises(ConfigError) as caught:
        load(raw, region="us-west-2", default_cluster_name="x", secret_keys=frozenset({key}))
    message = str(caught.value)
    assert names in message and "[secret]" in message
    for leaked in ("203.0.113", "subnet-0a1b2c3d4e", "210987654321", "ops team"):
        assert leaked not in message


def test_region_is_required() -> None:
    with pytest.raises(ConfigError, match="aws:region is required"):
        load({}, region=None, default_cluster_name="x")


# Every refusal in words (issue 26, item 4): every key the models accept, a value of the wrong type and
# one outside its constraint, and no message may fall back on pydantic's stock text or a regex.
STOCK = ("should match pattern", "Input should be", "valid boolean", "valid integer", "should have at least")
REGEX = ("^", "\\d", "$", "(?!", "{0,")
POOL = "inference"
TEAM = "vision"


def _schema_node(key: str) -> dict:
    node = words().resolve(json_schema())
    for part in key.split("."):
        node = words().resolve(
            next(iter(node["patternProperties"].values()))
            if part in ("<pool>", "<team>")
            else node["properties"][part]
        )
    return node


def _bad_values(node: dict) -> list:
    """A value of the wrong type and values outside the node's constraint."""
    if node.get("type") == "integer":
        return ["many", True, node["minimum"] - 1, node["maximum"] + 1]
    if node.get("type") == "boolean":
        return [3, "maybe"]
    if node.get("type") == "array":
        return [7, [] if node.get("minItems") else ["Not valid!"]]
    if "properties" in node or "patternProperties" in node:
        return ["x", [1]]
    if node.get("format") == "ipv4network":
        return [12345, "10.0.0.0/33"]
    if node.get("format") == "go-duration":
        return [12345, "ten minutes"]
    return [12345, {"a": 1}, "Not valid!"]  # text: enum, pattern, or the contract's label syntax


def _raw(key: str, value: object) -> dict:
    raw: dict = {"endpoint": dict(OK_ENDPOINT)} if not key.startswith("endpoint.") else {}
    *parents, last = key.replace("<pool>", POOL).replace("<team>", TEAM).split(".")
    here = raw
    for part in parents:
        here = here.setdefault(part, {})
    here[last] = value
    return raw


CASES = [
    (key, value) for key in sorted(set(_keys(PlatformConfig))) for value in _bad_values(_schema_node(key))
]


@pytest.mark.parametrize(("key", "value"), CASES, ids=[f"{k}={v!r}" for k, v in CASES])
def test_every_refusal_says_what_is_allowed_in_words_with_the_key_and_the_value(
    key: str, value: object
) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(**_raw(key, value))
    message = str(caught.value)
    given = [value, *value] if isinstance(value, list) else [value]  # a list's item may be the one refused
    assert key.replace("<pool>", POOL).replace("<team>", TEAM) in message, message
    assert any(repr(v) in message for v in given), message
    assert not any(phrase in message for phrase in STOCK), message
    assert not any(char in message for char in REGEX), message


@pytest.mark.parametrize("name", ["Inference Pool", "a.b", "p" * 33, "whole-gpus"])
def test_a_bad_pool_name_is_refused_in_words(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(gpuPools={name: {}})
    message = str(caught.value)
    assert f"gpuPools key {name!r}" in message and "1-32 letters, digits, '-' or '_'" in message
    assert not any(phrase in message for phrase in STOCK) and "^" not in message
