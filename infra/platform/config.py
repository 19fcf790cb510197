"""Typed, validated stack config: every setting checked before any resource is declared.

One pydantic model per config section (strict: unknown keys are refused with a
"did you mean", wrong types at any depth are refused naming the key). Read from
plain data (what ``Pulumi.<stack>.yaml`` holds), so it is testable without the
engine; :func:`from_pulumi` is the thin adapter. The README's configuration
reference is generated from these models (``infra.platform.config_docs``).
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from infra.platform import config_types as t
from infra.platform.gpu_metrics import MAX_ALARM_SECONDS
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.platform.node_pools import SYSTEM_LABEL, WHOLE_GPUS
from infra.workloads.placement import CAPACITY_TYPES, POOL_LABEL, GpuPool, Placement, PlacementError

# EKS standard support (AWS user guide, "kubernetes-versions"): 1.34 ended on
# 2026-12-02, 1.35 runs to 2027-03-27, 1.36 to about 2027-08. Clusters move one
# minor at a time, so a 1.34 stack upgrades to 1.35 first.
SUPPORTED_KUBERNETES_VERSIONS = ("1.35", "1.36")
DEFAULT_KUBERNETES_VERSION = "1.35"
NAT_GATEWAYS = ("Single", "OnePerAz")
EXPANDERS = ("least-waste", "priority", "random", "most-pods")
DEVICE_PLUGIN_CHART_VERSION = "0.19.3"
MIN_GPU_DISK_GIB = 50  # CUDA base images alone are several GiB; models come on top
# The device plugin refuses fewer than 2 replicas (api/config/v1/replicas.go); above
# 16 a T4G's 16 GB leaves under 1 GB a slice, which no model we know of fits.
MAX_TIME_SLICES = 16
# Subnets each AZ gets in a new VPC: nodes and pods (VPC CNI) in private, load balancers in public.
PRIVATE_SUBNET_PREFIX = 19
PUBLIC_SUBNET_PREFIX = 22
# EC2 CreateVpc takes an IPv4 block from /16 (65,536 addresses) to /28 (16).
VPC_PREFIXES = (16, 28)
_IAM_PRINCIPAL = r"arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]{1,512}"


class ConfigError(ValueError):
    """A setting with a value the platform refuses; the message names the key and what is allowed."""


def _gpu_disk(value: Any) -> int:
    size = t.whole(20, 16384)(value)
    if size < MIN_GPU_DISK_GIB:
        raise ValueError(f"must be at least {MIN_GPU_DISK_GIB} for CUDA images, got {size}")
    return size


def _kubernetes_version(value: Any) -> str:
    if not isinstance(value, str) or value not in SUPPORTED_KUBERNETES_VERSIONS:
        hint = ""
        if value == "1.34":
            hint = (
                "; 1.34 left EKS standard support on 2026-12-02: set 1.35 (EKS upgrades one minor at a time)"
            )
        raise ValueError(
            f"must be one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)} (a quoted string), got {value!r}{hint}"
        )
    return value


def _principal(value: Any) -> str:
    if isinstance(value, str) and ":sts::" in value and ":assumed-role/" in value:
        raise ValueError(
            f"{value!r} is an assumed-role session; give the role's ARN "
            "(arn:aws:iam::<account>:role/<name>), which is what access entries take"
        )
    return t.text(_IAM_PRINCIPAL, "an IAM role or user ARN (arn:aws:iam::<12-digit account>:role/<name>)")(
        value
    )


def _vpc_cidr(value: Any) -> str:
    cidr = t.ipv4_cidr(value)
    prefix = ipaddress.ip_network(cidr).prefixlen
    low, high = VPC_PREFIXES
    if not low <= prefix <= high:
        raise ValueError(
            f"must be an IPv4 block from /{low} to /{high}, the VPC sizes AWS CreateVpc accepts, got {value!r}; "
            "e.g. 10.0.0.0/16"
        )
    return cidr


_vpc_cidr.allowed = f"IPv4 CIDR /{VPC_PREFIXES[0]} to /{VPC_PREFIXES[1]} (AWS's VPC sizes)"  # type: ignore[attr-defined]
_gpu_disk.allowed = f"whole number {MIN_GPU_DISK_GIB}-16384"  # type: ignore[attr-defined]
_kubernetes_version.allowed = ", ".join(f'`"{v}"`' for v in SUPPORTED_KUBERNETES_VERSIONS)  # type: ignore[attr-defined]
_principal.allowed = "IAM role or user ARN"  # type: ignore[attr-defined]


class Section(BaseModel):
    """A config object: camelCase keys as in the stack file, unknown keys refused with a suggestion."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
    )
    _internal: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _an_object_with_known_keys(cls, value: Any) -> Any:
        value = t.json_object(value)
        allowed = [f.alias or name for name, f in cls.model_fields.items() if name not in cls._internal]
        if not isinstance(value, Mapping):
            raise ValueError(f"must be an object with keys {', '.join(allowed)}, got {value!r}")
        names = set(cls.model_fields)  # Python field names, for models built in code
        for key in value:
            if key not in allowed and key not in names:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                raise PydanticCustomError(
                    "unknown_setting",
                    "unknown setting",
                    {"key": key, "close": close[0] if close else "", "allowed": ", ".join(allowed)},
                )
        return value


class NetworkConfig(Section):
    """An existing VPC (vpcId + subnets) or a new one (cidr, availabilityZones, natGateways)."""

    vpc_id: Annotated[str | None, BeforeValidator(t.text(r"vpc-[0-9a-f]{8,17}", "a VPC ID (vpc-...)"))] = None
    """An existing VPC to use; then also privateSubnetIds (secret-capable)."""
    private_subnet_ids: Annotated[
        tuple[str, ...],
        BeforeValidator(t.items(t.text(r"subnet-[0-9a-f]{8,17}", "a subnet ID"), min_items=2)),
    ] = ()
    """Subnets of an existing VPC for the nodes, in two AZs or more."""
    public_subnet_ids: Annotated[
        tuple[str, ...], BeforeValidator(t.items(t.text(r"subnet-[0-9a-f]{8,17}", "a subnet ID")))
    ] = ()
    """Subnets of an existing VPC for internet load balancers."""
    cidr: Annotated[str, BeforeValidator(_vpc_cidr)] = "10.0.0.0/16"
    """A new VPC's range: it must hold a private /19 and a public /22 per AZ (checked)."""
    availability_zones: Annotated[int, BeforeValidator(t.whole(2, 6))] = 3
    """AZs of a new VPC."""
    nat_gateways: Annotated[str, BeforeValidator(t.one_of(NAT_GATEWAYS))] = "Single"
    """NAT gateways of a new VPC: one, or one per AZ (no cross-AZ dependency)."""

    @model_validator(mode="after")
    def _one_kind_of_vpc(self) -> NetworkConfig:
        given = self.model_fields_set
        existing = {"vpc_id", "private_subnet_ids", "public_subnet_ids"} & given
        new = {"cidr", "availability_zones", "nat_gateways"} & given
        if existing and new:
            names = sorted(to_camel(n) for n in existing | new)
            raise ValueError(
                ": either an existing VPC (vpcId, privateSubnetIds, publicSubnetIds) or a new one "
                f"(cidr, availabilityZones, natGateways), not both; got {names}"
            )
        if existing and not {"vpc_id", "private_subnet_ids"} <= existing:
            raise ValueError(
                ": an existing VPC needs both vpcId and privateSubnetIds (at least two, in two AZs)"
            )
        if not self.vpc_id:
            subnet_layout(self.cidr, self.availability_zones)  # refuses a CIDR too small for the subnets
        return self


def subnet_layout(cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """The private and public subnet CIDRs a new VPC gets: private ones first, then public, aligned.

    Computed here, not left to awsx's allocator, so a CIDR that cannot hold them is
    refused with the size that would.
    """
    vpc = ipaddress.ip_network(cidr)
    private = list(vpc.subnets(new_prefix=PRIVATE_SUBNET_PREFIX))[:zones] if vpc.prefixlen <= 19 else []
    taken = private[-1].broadcast_address if private else None
    public = (
        [
            s
            for s in vpc.subnets(new_prefix=PUBLIC_SUBNET_PREFIX)
            if taken is None or s.network_address > taken
        ]
        if vpc.prefixlen <= PUBLIC_SUBNET_PREFIX
        else []
    )[:zones]
    if len(private) < zones or len(public) < zones:
        needed = zones * (2 ** (32 - PRIVATE_SUBNET_PREFIX) + 2 ** (32 - PUBLIC_SUBNET_PREFIX))
        smallest = next(p for p in range(PRIVATE_SUBNET_PREFIX, 0, -1) if 2 ** (32 - p) >= needed)
        raise ValueError(
            f".cidr {cidr} cannot hold {zones} private /{PRIVATE_SUBNET_PREFIX} and {zones} public "
            f"/{PUBLIC_SUBNET_PREFIX} subnets ({needed} addresses; pods take VPC addresses too): use a "
            f"/{smallest} or larger, e.g. 10.0.0.0/16"
        )
    return [str(s) for s in private], [str(s) for s in public]


class EndpointConfig(Section):
    private_access: t.Flag = True
    """The API endpoint inside the VPC."""
    public_access: t.Flag = True
    """The API endpoint on the internet (IAM authentication still applies)."""
    public_access_cidrs: Annotated[tuple[str, ...], BeforeValidator(t.items(t.ipv4_cidr, min_items=1))] = ()
    """Required while publicAccess is true: no silent 0.0.0.0/0 (secret-capable)."""

    @model_validator(mode="after")
    def _reachable_and_explicit(self) -> EndpointConfig:
        if not self.private_access and not self.public_access:
            raise ValueError(
                ": privateAccess and publicAccess cannot both be false; nothing could reach the API"
            )
        if self.public_access and not self.public_access_cidrs:
            raise ValueError(
                ".publicAccessCidrs is required while endpoint.publicAccess is true: list the CIDRs that may "
                "reach the Kubernetes API (e.g. your VPN egress /32), or set endpoint.publicAccess to false"
            )
        if not self.public_access and self.public_access_cidrs:
            raise ValueError(
                ".publicAccessCidrs is set but endpoint.publicAccess is false; remove one of them"
            )
        return self


class NodeGroupConfig(Section):
    """What an EKS managed node group's CreateNodegroup takes: types, sizes, disk, capacity type."""

    instance_types: Annotated[
        tuple[str, ...],
        BeforeValidator(t.items(t.one_of(ARM_SYSTEM, "an Arm (Graviton) system type"), min_items=1)),
    ] = ("t4g.large",)
    """Graviton types for CoreDNS, the autoscaler and controllers."""
    min_size: t.Count = 2
    """Nodes at least (EKS CreateNodegroup: 0 or more)."""
    desired_size: Annotated[int | None, BeforeValidator(t.whole(0, 450))] = None
    """Nodes wanted; defaults to minSize; applied as written."""
    # CreateNodegroup: maxSize is at least 1 (botocore's EKS model, NodegroupScalingConfig).
    max_size: Annotated[int, BeforeValidator(t.whole(1, 450))] = 3
    """Nodes at most (EKS CreateNodegroup: 1 or more)."""
    disk_size_gib: Annotated[int, BeforeValidator(t.whole(20, 16384)), Field(alias="diskSizeGiB")] = 30
    """Encrypted gp3 root volume, GiB."""
    capacity_type: Annotated[str, BeforeValidator(t.one_of(CAPACITY_TYPES))] = "ON_DEMAND"
    """SPOT nodes can be reclaimed with two minutes' notice; their pods reschedule."""

    @model_validator(mode="after")
    def _sizes_in_order(self) -> NodeGroupConfig:
        if self.min_size > self.max_size:
            raise ValueError(f": minSize ({self.min_size}) must not exceed maxSize ({self.max_size})")
        if self.desired_size is not None and not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f".desiredSize ({self.desired_size}) must be within minSize..maxSize "
                f"({self.min_size}..{self.max_size})"
            )
        return self

    @property
    def initial_size(self) -> int:
        return self.min_size if self.desired_size is None else self.desired_size


class TimeSlicingConfig(Section):
    replicas: Annotated[int, BeforeValidator(t.whole(2, MAX_TIME_SLICES))]
    """Pods per GPU; each gets time slices, not isolated memory. Requests above 1 GPU are refused."""


class SharingConfig(Section):
    time_slicing: TimeSlicingConfig
    """The device plugin's time-slicing."""


class GpuPoolConfig(NodeGroupConfig):
    """A GPU pool: a managed node group of one GPU count, tainted and labelled by the contract."""

    instance_types: Annotated[
        tuple[str, ...],
        BeforeValidator(t.items(t.one_of(ARM_NVIDIA, "an Arm NVIDIA instance type"), min_items=1)),
    ] = ("g5g.xlarge",)
    """Arm + NVIDIA T4G types, all with the same GPU count (x86 GPU types cannot run the Arm AMI)."""
    min_size: t.Count = 0
    """Nodes at least; 0 lets the pool scale from zero."""
    desired_size: Annotated[int | None, BeforeValidator(t.whole(0, 450))] = None
    """A new pool's size (default minSize); later the pool keeps the nodes it runs, raised to minSize (autoscaler off: to a larger desiredSize)."""
    max_size: Annotated[int, BeforeValidator(t.whole(1, 450))] = 2
    """Nodes at most: as far as the autoscaler may go; not below the nodes the pool runs (checked)."""
    disk_size_gib: Annotated[int, BeforeValidator(_gpu_disk), Field(alias="diskSizeGiB")] = 100
    """Encrypted gp3 root volume, GiB (CUDA images are large)."""
    sharing: SharingConfig | None = None
    """Time-slicing: {timeSlicing: {replicas: N}}; without it, whole GPUs."""
    node_repair: t.Flag = True
    """EKS node auto-repair: replace a node whose health checks fail."""

    @model_validator(mode="after")
    def _one_gpu_count(self) -> GpuPoolConfig:
        counts = {name: ARM_NVIDIA[name].gpus for name in self.instance_types}
        if len(set(counts.values())) > 1:
            raise ValueError(
                f".instanceTypes mix GPU counts {counts}: the autoscaler's node template must promise what "
                "every node of the pool brings; put types with different GPU counts in separate pools"
            )
        return self

    @property
    def gpus_per_node(self) -> int:
        return ARM_NVIDIA[self.instance_types[0]].gpus

    @property
    def time_slicing_replicas(self) -> int:
        return self.sharing.time_slicing.replicas if self.sharing else 1


# A pool name becomes a label value, a Pulumi resource name and the node group name prefix
# gpu-<pool>-: EKS takes letters, digits, '-' and '_' in node group names, and the AWS
# provider caps a name prefix at 37 characters (63 minus its 26-character unique suffix).
_POOL_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_-]{0,30}[A-Za-z0-9])?")


def _pool_name(value: Any) -> str:
    if not isinstance(value, str) or not _POOL_NAME.fullmatch(value):
        raise ValueError(
            f"pool name {value!r} must be 1-32 letters, digits, '-' or '_', starting and ending with a "
            "letter or digit (it becomes a node label value and part of the EKS node group's name)"
        )
    if value == WHOLE_GPUS:
        raise ValueError(
            f"pool name {value!r} is reserved: it names the NVIDIA device plugin's default config, which "
            "every pool without sharing runs, and a time-sliced pool's config takes its pool's name; "
            f"allowed: any other name of 1-32 letters, digits, '-' or '_'"
        )
    return value


class PlacementConfig(Section):
    key: Any = "GPU"
    """Label and taint key (label syntax; not under kubernetes.io/, k8s.io/, eks.amazonaws.com/)."""
    value: Any = "true"
    """Label and taint value, a string."""


class DevicePluginConfig(Section):
    chart_version: Annotated[
        str, BeforeValidator(t.text(r"\d+\.\d+\.\d+", "a pinned chart version such as 0.19.3"))
    ] = DEVICE_PLUGIN_CHART_VERSION
    """nvidia-device-plugin chart, pinned."""
    namespace: Annotated[
        str,
        BeforeValidator(
            t.text(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a namespace name (lower-case, <= 63 chars)")
        ),
    ] = "nvidia-device-plugin"
    """Its own namespace (the chart refuses default)."""

    @model_validator(mode="after")
    def _own_namespace(self) -> DevicePluginConfig:
        if self.namespace in ("default", "kube-system"):
            raise ValueError(
                f".namespace must be its own namespace, not {self.namespace!r} (the chart refuses 'default')"
            )
        return self


class AutoscalerConfig(Section):
    enabled: t.Flag = True
    """false declares no autoscaler resources at all; the pools keep the nodes they run and minSize/desiredSize size them."""
    chart_version: Annotated[
        str, BeforeValidator(t.text(r"\d+\.\d+\.\d+", "a pinned chart version such as 9.59.0"))
    ] = "9.59.0"
    """cluster-autoscaler chart, pinned; the image follows kubernetesVersion."""
    expander: Annotated[str, BeforeValidator(t.one_of(EXPANDERS))] = "least-waste"
    """How it picks among equally ranked pools; when pools differ in node price, pods per node or capacity type, priority (cheapest node first, spot first among equals) goes in front."""
    scale_down_unneeded_time: Annotated[str, BeforeValidator(t.duration())] = "10m"
    """How long a GPU node sits idle before it is removed."""
    balance_similar_node_groups: t.Flag = True
    """Spread scale-ups over alike pools (never across spot and on-demand: their labels differ)."""


_SECTION = Field(default_factory=dict, validate_default=True)  # defaults go through the same checks
_SNS_TOPIC_ARN = r"arn:aws(-cn|-us-gov)?:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?"
_NAMESPACE = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"


def _alarm_duration(value: Any) -> str:
    """A positive Go duration of at most a day: CloudWatch's cap on Period x EvaluationPeriods.

    Refused here, naming the key, rather than by PutMetricAlarm in the middle of ``pulumi up``.
    """
    value = t.duration(positive=True)(value)
    seconds = t.go_duration_seconds(value) or 0.0
    if seconds > MAX_ALARM_SECONDS:
        raise ValueError(
            f"must be at most 24h: CloudWatch refuses an alarm whose Period x EvaluationPeriods exceeds "
            f"{MAX_ALARM_SECONDS} s (one-minute periods here), got {value!r}"
        )
    return value


_alarm_duration.allowed = "positive Go duration up to `24h` (`90s`, `10m`, `1h30m`)"  # type: ignore[attr-defined]


class AlarmsConfig(Section):
    """CloudWatch alarms on the GPU pools."""

    sns_topic_arn: Annotated[
        str | None,
        BeforeValidator(t.text(_SNS_TOPIC_ARN, "an SNS topic ARN (arn:aws:sns:<region>:<12 digits>:<name>)")),
    ] = None
    """Where alarms notify; unset: the alarms exist but notify nobody."""
    gpu_pod_pending_for: Annotated[str, BeforeValidator(_alarm_duration)] = "10m"
    """Alarm when pods stay unschedulable this long (a stuck GPU scale-up; 8 of every 10 minutes); rounded up to whole minutes."""
    node_not_ready_for: Annotated[str, BeforeValidator(_alarm_duration)] = "10m"
    """Alarm when a node stays NotReady this long; rounded up to whole minutes."""


class ObservabilityConfig(Section):
    """GPU metrics (CloudWatch add-on with dcgm-exporter), node health for repair, dashboard and alarms."""

    enabled: t.Flag = True
    """The CloudWatch Observability add-on, its IAM role, the GPU dashboard and the alarms."""
    container_logs: t.Flag = False
    """Fluent Bit shipping every container's stdout to CloudWatch Logs (billed per GB)."""
    node_monitoring_agent: t.Flag = True
    """The eks-node-monitoring-agent add-on: the node conditions node auto-repair acts on."""
    gpu_namespaces: Annotated[
        tuple[str, ...], BeforeValidator(t.items(t.text(_NAMESPACE, "a namespace name")))
    ] = ()
    """Namespaces of GPU workloads: the dashboard adds their pending pods."""
    alarms: Annotated[AlarmsConfig, _SECTION]
    """Alarm thresholds and the SNS topic."""


def _default_pools() -> dict[str, Any]:
    return {"default": {}}


class PlatformConfig(Section):
    """The whole stack config. ``region`` and ``cluster_name`` default from the stack."""

    _internal: ClassVar[frozenset[str]] = frozenset({"region", "secret_keys"})

    region: str
    secret_keys: frozenset[str] = frozenset()
    """Config keys set with ``--secret``: their values reach resources only as secret Outputs."""
    cluster_name: Annotated[
        str, BeforeValidator(t.text(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", "1-100 letters, digits, '-' or '_'"))
    ]
    """The EKS cluster's name; default <project>-<stack>."""
    kubernetes_version: Annotated[str, BeforeValidator(_kubernetes_version)] = DEFAULT_KUBERNETES_VERSION
    """EKS minor in standard support; a bump upgrades control plane, node groups, add-ons and autoscaler image."""
    cluster_admins: Annotated[
        tuple[str, ...],
        BeforeValidator(t.items(_principal)),
    ] = ()
    """IAM roles or users that get cluster-admin access entries (the creator always has one)."""
    network: Annotated[NetworkConfig, _SECTION]
    """A new VPC (cidr, availabilityZones, natGateways) or an existing one (vpcId, subnets)."""
    endpoint: Annotated[EndpointConfig, _SECTION]
    """Who reaches the Kubernetes API."""
    system_nodes: Annotated[NodeGroupConfig, _SECTION]
    """The untainted node group for CoreDNS, the autoscaler and controllers."""
    gpu_pools: Annotated[
        dict[str, GpuPoolConfig], Field(default_factory=_default_pools, validate_default=True)
    ]
    """GPU pools by name (not whole-gpus, the device plugin's default config): each a managed node group tainted and labelled by the contract, plus eks-gpu/pool=<name>."""
    placement: Annotated[PlacementConfig, _SECTION]
    """The contract's label and taint on every GPU node."""
    device_plugin: Annotated[DevicePluginConfig, _SECTION]
    """The NVIDIA device plugin Helm release."""
    autoscaler: Annotated[AutoscalerConfig, _SECTION]
    """Cluster Autoscaler, which scales the GPU pools (only them) from and to zero."""
    production: t.Flag = False
    """true protects the VPC, the KMS key and the cluster from deletion and replacement; GPU pools stay replaceable."""
    observability: Annotated[ObservabilityConfig, _SECTION]
    """GPU metrics, node health agents, the GPU dashboard and alarms."""

    @model_validator(mode="before")
    @classmethod
    def _gpu_nodes_moved(cls, value: Any) -> Any:
        if isinstance(value, Mapping) and "gpuNodes" in value:
            raise ValueError(
                ".gpuNodes was replaced by gpuPools, a map from pool name to the same fields plus sharing; write\n"
                "  eks-gpu-platform:gpuPools:\n"
                "    default:\n"
                "      instanceTypes: [g5g.xlarge]\n"
                "      minSize: 0\n"
                "      maxSize: 2"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> PlatformConfig:
        if not self.gpu_pools:
            raise ValueError(
                ".gpuPools is empty: declare at least one pool, e.g. {default: {instanceTypes: [g5g.xlarge]}}"
            )
        for name in self.gpu_pools:
            try:
                _pool_name(name)
            except ValueError as error:
                raise ValueError(f".gpuPools.{name}: {error}") from None
        try:
            contract = self.contract
        except PlacementError as error:
            raise ValueError(f".placement: {error}") from None
        taken = {POOL_LABEL: "the pool label", SYSTEM_LABEL: "the system group's label"}
        if contract.key in taken:
            raise ValueError(
                f".placement.key {contract.key!r} collides with {taken[contract.key]}; choose another key"
            )
        return self

    def secret(self, key: str, value: Any) -> Any:
        """``value`` as a secret Output when config ``key`` was set with ``--secret``, else as is."""
        if key not in self.secret_keys:
            return value
        import pulumi

        return pulumi.Output.secret(value)

    @property
    def contract(self) -> Placement:
        """The placement contract with this stack's pools: what node groups, plugin and consumers read."""
        pools = tuple(
            GpuPool(
                name=name,
                gpus_per_node=pool.gpus_per_node,
                time_slicing_replicas=pool.time_slicing_replicas,
                capacity_type=pool.capacity_type,
            )
            for name, pool in self.gpu_pools.items()
        )
        return Placement(key=self.placement.key, value=self.placement.value, pools=pools)


def _setting(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(error: Mapping[str, Any]) -> str:
    setting = _setting(tuple(error["loc"]))
    if error["type"] == "unknown_setting":
        ctx = error["ctx"]
        prefix = f"{setting}." if setting else ""
        hint = f" (did you mean {prefix}{ctx['close']}?)" if ctx["close"] else ""
        return f"unknown setting {prefix}{ctx['key']}{hint}; allowed: {ctx['allowed']}"
    if error["type"] == "missing":
        return f"{setting} is required"
    if error["type"] != "value_error":
        return f"{setting}: {error['msg']}"
    message = str(error["ctx"]["error"])
    while message.startswith("["):
        index, _, message = message[1:].partition("] ")
        setting += f"[{index}]"
    if not setting:
        return message.lstrip(".: ")
    return f"{setting}{message}" if message[:1] in ".:" else f"{setting} {message}"


# Keys whose values may be secret: each reaches resources through ``PlatformConfig.secret``.
# The others name resources or pick versions, which Pulumi shows in URNs and plans.
SECRET_CAPABLE = ("clusterAdmins", "endpoint", "network")
# Namespaces a stack file may use besides the project's own: the providers this program runs.
PROVIDER_NAMESPACES = ("aws", "awsx", "eks", "kubernetes", "pulumi")


def load(
    raw: Mapping[str, Any],
    *,
    region: str | None,
    default_cluster_name: str,
    secret_keys: frozenset[str] = frozenset(),
) -> PlatformConfig:
    """Build the platform config from the project's config keys (namespace stripped)."""
    if not region:
        raise ConfigError(
            "aws:region is required: run `pulumi config set aws:region us-west-2` (or your region)"
        )
    for internal in ("region", "secret_keys"):
        if internal in raw:
            where = "aws:region" if internal == "region" else "`pulumi config set --secret`"
            raise ConfigError(f"unknown setting {internal}: set it with {where}, not under this project")
    data = {k: t.json_object(v) for k, v in raw.items()}
    data.setdefault("clusterName", default_cluster_name)
    cannot = sorted(secret_keys - set(SECRET_CAPABLE))
    if cannot:
        raise ConfigError(
            f"{', '.join(cannot)} cannot be kept secret: these settings name resources or pick versions, "
            f"which Pulumi shows in URNs and plans; set them without --secret (secrets are supported for "
            f"{', '.join(SECRET_CAPABLE)})"
        )
    try:
        return PlatformConfig.model_validate({**data, "region": region, "secret_keys": secret_keys})
    except ValidationError as error:
        raise ConfigError("; ".join(_message(e) for e in error.errors())) from None


def from_pulumi() -> PlatformConfig:
    """The running stack's config, validated. Reads every key so that typos are caught."""
    import pulumi

    from infra.workloads import sdk

    project = pulumi.get_project()
    everything = sdk.all_config()
    for key in everything:
        namespace, _, name = key.partition(":")
        if namespace not in (project, *PROVIDER_NAMESPACES):
            close = difflib.get_close_matches(namespace, [project], n=1, cutoff=0.6)
            hint = f"did you mean {project}:{name}? " if close else ""
            raise ConfigError(
                f"config key {key!r} is under the namespace {namespace!r}, which nothing here reads: {hint}"
                f"this project's keys are {project}:<key>; providers' are {', '.join(PROVIDER_NAMESPACES)}:<key>"
            )
    raw = {k.split(":", 1)[1]: v for k, v in everything.items() if k.startswith(f"{project}:")}
    secrets = frozenset(k.split(":", 1)[1] for k in sdk.secret_config_keys() if k.startswith(f"{project}:"))
    return load(
        raw,
        region=pulumi.Config("aws").get("region"),
        default_cluster_name=f"{project}-{pulumi.get_stack()}",
        secret_keys=secrets,
    )


__all__ = [
    "DEFAULT_KUBERNETES_VERSION",
    "SUPPORTED_KUBERNETES_VERSIONS",
    "AutoscalerConfig",
    "ConfigError",
    "DevicePluginConfig",
    "EndpointConfig",
    "GpuPoolConfig",
    "NetworkConfig",
    "NodeGroupConfig",
    "PlatformConfig",
    "load",
    "subnet_layout",
]
