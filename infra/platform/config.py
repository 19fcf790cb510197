"""Typed, validated stack config: every setting checked before any resource is declared.

Read from plain data (what ``Pulumi.<stack>.yaml`` holds), so it is testable and
reusable without the engine; :func:`from_pulumi` is the thin adapter. Every error
names the key and what is allowed.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.workloads.placement import Placement, PlacementError

SUPPORTED_KUBERNETES_VERSIONS = ("1.32", "1.33", "1.34", "1.35")
DEFAULT_KUBERNETES_VERSION = "1.34"
CAPACITY_TYPES = ("ON_DEMAND", "SPOT")
NAT_GATEWAYS = ("Single", "OnePerAz")
DEVICE_PLUGIN_CHART_VERSION = "0.20.0"
MIN_GPU_DISK_GIB = 50  # CUDA base images alone are several GiB; models come on top


class ConfigError(ValueError):
    """A setting with a value the platform refuses; the message names the key and what is allowed."""


def check_kubernetes_version(version: object, setting: str = "kubernetesVersion") -> str:
    if not isinstance(version, str) or version not in SUPPORTED_KUBERNETES_VERSIONS:
        raise ConfigError(
            f"{setting} must be one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)} (a quoted string), got {version!r}"
        )
    return version


@dataclass(frozen=True)
class NetworkConfig:
    """An existing VPC (vpcId + subnets) or a new one (cidr, availabilityZones, natGateways)."""

    vpc_id: str | None = None
    private_subnet_ids: tuple[str, ...] = ()
    public_subnet_ids: tuple[str, ...] = ()
    cidr: str = "10.0.0.0/16"
    availability_zones: int = 3
    nat_gateways: str = "Single"


@dataclass(frozen=True)
class EndpointConfig:
    private_access: bool = True
    public_access: bool = True
    public_access_cidrs: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeGroupConfig:
    instance_types: tuple[str, ...]
    min_size: int
    desired_size: int
    max_size: int
    disk_size_gib: int
    capacity_type: str = "ON_DEMAND"


@dataclass(frozen=True)
class DevicePluginConfig:
    chart_version: str = DEVICE_PLUGIN_CHART_VERSION
    namespace: str = "nvidia-device-plugin"


@dataclass(frozen=True)
class AutoscalerConfig:
    enabled: bool = True
    chart_version: str = "9.59.0"
    expander: str = "least-waste"
    scale_down_unneeded_time: str = "10m"
    balance_similar_node_groups: bool = True


EXPANDERS = ("least-waste", "priority", "random", "most-pods")


@dataclass(frozen=True)
class PlatformConfig:
    region: str
    cluster_name: str
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    network: NetworkConfig = field(default_factory=NetworkConfig)
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)
    system_nodes: NodeGroupConfig = field(
        default_factory=lambda: NodeGroupConfig(
            ("t4g.large",), min_size=2, desired_size=2, max_size=3, disk_size_gib=30
        )
    )
    gpu_nodes: NodeGroupConfig = field(
        default_factory=lambda: NodeGroupConfig(
            ("g5g.xlarge",), min_size=0, desired_size=1, max_size=2, disk_size_gib=100
        )
    )
    placement: Placement = field(default_factory=Placement)
    device_plugin: DevicePluginConfig = field(default_factory=DevicePluginConfig)
    autoscaler: AutoscalerConfig = field(default_factory=AutoscalerConfig)
    production: bool = False


# --- field parsers: each takes (value, setting) and returns the typed value or raises ---

Parser = Callable[[Any, str], Any]


def _str(pattern: str | None = None, hint: str = "") -> Parser:
    def parse(value: Any, setting: str) -> str:
        if not isinstance(value, str) or not value or (pattern and not re.fullmatch(pattern, value)):
            raise ConfigError(f"{setting} must be {hint or 'a non-empty string'}, got {value!r}")
        return value

    return parse


def _choice(choices: Sequence[str] | Mapping[str, Any], what: str | None = None) -> Parser:
    def parse(value: Any, setting: str) -> str:
        if value not in choices:
            allowed = ", ".join(choices)
            if what:
                raise ConfigError(f"{setting}: {value!r} is not {what}; allowed: {allowed}")
            raise ConfigError(f"{setting} must be one of {allowed}, got {value!r}")
        return value

    return parse


def _int(low: int, high: int) -> Parser:
    def parse(value: Any, setting: str) -> int:
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"{setting} must be a whole number from {low} to {high}, got {value!r}")
        return value

    return parse


def _bool(value: Any, setting: str) -> bool:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ConfigError(f"{setting} must be true or false, got {value!r}")
    return value


def _list(item: Parser, *, min_items: int = 0) -> Parser:
    def parse(value: Any, setting: str) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)) or len(value) < min_items:
            raise ConfigError(f"{setting} must be a list of at least {min_items} item(s), got {value!r}")
        items = tuple(item(v, f"{setting}[{i}]") for i, v in enumerate(value))
        if len(set(items)) != len(items):
            raise ConfigError(f"{setting} lists an item twice: {list(value)}")
        return items

    return parse


def _cidr(value: Any, setting: str) -> str:
    try:
        return str(ipaddress.ip_network(value, strict=True))
    except (TypeError, ValueError):
        raise ConfigError(f"{setting} must be an IPv4 CIDR such as 203.0.113.0/24, got {value!r}") from None


_SUBNET = _str(r"subnet-[0-9a-f]{8,17}", "a subnet ID (subnet-...)")


def _object(value: Any, setting: str, fields: Mapping[str, Parser]) -> dict[str, Any]:
    """Parse a config object; unknown keys are an error with a suggestion, never ignored."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ConfigError(
                f"{setting} must be an object with keys {', '.join(fields)}, got {value!r}"
            ) from None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{setting} must be an object with keys {', '.join(fields)}, got {value!r}")
    _refuse_unknown(value, fields, setting + ".")
    return {key: fields[key](item, f"{setting}.{key}") for key, item in value.items()}


def _fields(parsed: Mapping[str, Any]) -> dict[str, Any]:
    """Config keys (camelCase, as in the stack file) as dataclass field names; unset ones keep their defaults."""
    return {re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): value for key, value in parsed.items()}


def _refuse_unknown(
    value: Mapping[str, Any], allowed: Mapping[str, Any] | tuple[str, ...], prefix: str
) -> None:
    for key in value:
        if key not in allowed:
            close = difflib.get_close_matches(key, list(allowed), n=1)
            hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
            raise ConfigError(f"unknown setting {prefix}{key}{hint}; allowed: {', '.join(allowed)}")


_NODE_GROUP_FIELDS = {
    "minSize": _int(0, 450),
    "desiredSize": _int(0, 450),
    "maxSize": _int(0, 450),
    "diskSizeGiB": _int(20, 16384),
    "capacityType": _choice(CAPACITY_TYPES),
}


def _node_group(
    value: Any, setting: str, default: NodeGroupConfig, allowed: Mapping[str, Any], what: str
) -> NodeGroupConfig:
    parsed = _object(
        value,
        setting,
        {"instanceTypes": _list(_choice(allowed, what), min_items=1), **_NODE_GROUP_FIELDS},
    )
    group = NodeGroupConfig(
        instance_types=parsed.get("instanceTypes", default.instance_types),
        min_size=parsed.get("minSize", default.min_size),
        desired_size=parsed.get("desiredSize", default.desired_size),
        max_size=parsed.get("maxSize", default.max_size),
        disk_size_gib=parsed.get("diskSizeGiB", default.disk_size_gib),
        capacity_type=parsed.get("capacityType", default.capacity_type),
    )
    if group.min_size > group.max_size:
        raise ConfigError(f"{setting}: minSize ({group.min_size}) must not exceed maxSize ({group.max_size})")
    if not group.min_size <= group.desired_size <= group.max_size:
        raise ConfigError(
            f"{setting}.desiredSize ({group.desired_size}) must be within minSize..maxSize "
            f"({group.min_size}..{group.max_size})"
        )
    return group


def _network(value: Any) -> NetworkConfig:
    parsed = _object(
        value,
        "network",
        {
            "vpcId": _str(r"vpc-[0-9a-f]{8,17}", "a VPC ID (vpc-...)"),
            "privateSubnetIds": _list(_SUBNET, min_items=2),
            "publicSubnetIds": _list(_SUBNET),
            "cidr": _cidr,
            "availabilityZones": _int(2, 6),
            "natGateways": _choice(NAT_GATEWAYS),
        },
    )
    existing = {"vpcId", "privateSubnetIds", "publicSubnetIds"} & set(parsed)
    new = {"cidr", "availabilityZones", "natGateways"} & set(parsed)
    if existing and new:
        raise ConfigError(
            f"network: either an existing VPC (vpcId, privateSubnetIds, publicSubnetIds) or a new one "
            f"(cidr, availabilityZones, natGateways), not both; got {sorted(existing | new)}"
        )
    if existing and not {"vpcId", "privateSubnetIds"} <= existing:
        raise ConfigError(
            "network: an existing VPC needs both vpcId and privateSubnetIds (at least two, in two AZs)"
        )
    network = NetworkConfig(**_fields(parsed))
    if network.cidr and ipaddress.ip_network(network.cidr).prefixlen > 20:
        raise ConfigError(
            f"network.cidr {network.cidr} is too small for EKS pod IPs; use a /20 or larger, e.g. 10.0.0.0/16"
        )
    return network


def _endpoint(value: Any) -> EndpointConfig:
    parsed = _object(
        value,
        "endpoint",
        {"privateAccess": _bool, "publicAccess": _bool, "publicAccessCidrs": _list(_cidr, min_items=1)},
    )
    endpoint = EndpointConfig(
        private_access=parsed.get("privateAccess", True),
        public_access=parsed.get("publicAccess", True),
        public_access_cidrs=parsed.get("publicAccessCidrs", ()),
    )
    if not endpoint.private_access and not endpoint.public_access:
        raise ConfigError(
            "endpoint: privateAccess and publicAccess cannot both be false; nothing could reach the API"
        )
    if endpoint.public_access and not endpoint.public_access_cidrs:
        raise ConfigError(
            "endpoint.publicAccessCidrs is required while endpoint.publicAccess is true: list the CIDRs that may "
            "reach the Kubernetes API (e.g. your VPN egress /32), or set endpoint.publicAccess to false"
        )
    if not endpoint.public_access and endpoint.public_access_cidrs:
        raise ConfigError(
            "endpoint.publicAccessCidrs is set but endpoint.publicAccess is false; remove one of them"
        )
    return endpoint


def _placement(value: Any) -> Placement:
    parsed = _object(value, "placement", {"key": lambda v, s: v, "value": lambda v, s: v})
    try:
        return Placement.from_dict(parsed)
    except PlacementError as error:
        raise ConfigError(str(error)) from None


def _device_plugin(value: Any) -> DevicePluginConfig:
    parsed = _object(
        value,
        "devicePlugin",
        {
            "chartVersion": _str(r"\d+\.\d+\.\d+", "a pinned chart version such as 0.20.0"),
            "namespace": _str(
                r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a namespace name (lower-case, <= 63 chars)"
            ),
        },
    )
    plugin = DevicePluginConfig(**_fields(parsed))
    if plugin.namespace in ("default", "kube-system"):
        raise ConfigError(
            f"devicePlugin.namespace must be its own namespace, not {plugin.namespace!r} (the chart refuses 'default')"
        )
    return plugin


def _autoscaler(value: Any, gpu: NodeGroupConfig) -> AutoscalerConfig:
    parsed = _object(
        value,
        "autoscaler",
        {
            "enabled": _bool,
            "chartVersion": _str(r"\d+\.\d+\.\d+", "a pinned chart version such as 9.59.0"),
            "expander": _choice(EXPANDERS),
            "scaleDownUnneededTime": _str(r"\d+(s|m|h)", "a duration such as 10m"),
            "balanceSimilarNodeGroups": _bool,
        },
    )
    config = AutoscalerConfig(**_fields(parsed))
    if config.enabled and gpu.max_size == 0:
        raise ConfigError(
            "autoscaler.enabled is true but gpuNodes.maxSize is 0: there is nothing to scale; raise maxSize or disable the autoscaler"
        )
    return config


KEYS = (
    "clusterName",
    "kubernetesVersion",
    "network",
    "endpoint",
    "systemNodes",
    "gpuNodes",
    "placement",
    "devicePlugin",
    "autoscaler",
    "production",
)


def load(raw: Mapping[str, Any], *, region: str | None, default_cluster_name: str) -> PlatformConfig:
    """Build the platform config from the project's config keys (namespace stripped)."""
    if not region:
        raise ConfigError(
            "aws:region is required: run `pulumi config set aws:region us-west-2` (or your region)"
        )
    _refuse_unknown(raw, KEYS, "")
    defaults = PlatformConfig(region=region, cluster_name=default_cluster_name)
    gpu = (
        _node_group(
            raw["gpuNodes"], "gpuNodes", defaults.gpu_nodes, ARM_NVIDIA, "an Arm NVIDIA instance type"
        )
        if "gpuNodes" in raw
        else defaults.gpu_nodes
    )
    if gpu.disk_size_gib < MIN_GPU_DISK_GIB:
        raise ConfigError(
            f"gpuNodes.diskSizeGiB must be at least {MIN_GPU_DISK_GIB} for CUDA images, got {gpu.disk_size_gib}"
        )
    return PlatformConfig(
        region=region,
        cluster_name=_str(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", "1-100 letters, digits, '-' or '_'")(
            raw["clusterName"], "clusterName"
        )
        if "clusterName" in raw
        else default_cluster_name,
        kubernetes_version=check_kubernetes_version(raw.get("kubernetesVersion", DEFAULT_KUBERNETES_VERSION)),
        network=_network(raw["network"]) if "network" in raw else defaults.network,
        endpoint=_endpoint(raw.get("endpoint", {})),
        system_nodes=_node_group(
            raw["systemNodes"],
            "systemNodes",
            defaults.system_nodes,
            ARM_SYSTEM,
            "an Arm (Graviton) system type",
        )
        if "systemNodes" in raw
        else defaults.system_nodes,
        gpu_nodes=gpu,
        placement=_placement(raw["placement"]) if "placement" in raw else defaults.placement,
        device_plugin=_device_plugin(raw["devicePlugin"])
        if "devicePlugin" in raw
        else defaults.device_plugin,
        autoscaler=_autoscaler(raw.get("autoscaler", {}), gpu),
        production=_bool(raw["production"], "production") if "production" in raw else False,
    )


def from_pulumi() -> PlatformConfig:
    """The running stack's config, validated. Reads every key so that typos are caught."""
    import pulumi
    from pulumi.runtime.config import get_config_env

    project = pulumi.get_project()
    everything = {**get_config_env(), **pulumi.runtime.config.CONFIG.get()}
    raw = {k.split(":", 1)[1]: _decode(v) for k, v in everything.items() if k.startswith(f"{project}:")}
    return load(
        raw, region=pulumi.Config("aws").get("region"), default_cluster_name=f"{project}-{pulumi.get_stack()}"
    )


def _decode(value: Any) -> Any:
    """The CLI passes objects and lists as JSON text and scalars as plain text."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
