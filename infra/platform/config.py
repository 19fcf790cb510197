"""Typed, validated stack config: every setting checked before any resource is declared.

One pydantic model per config section; its constraints are also the JSON schema that generates
docs/configuration.md (docs/decisions/0020). A refusal names the key as the stack file spells
it, says in words what it allows (the reference's words, :func:`allowed`) and the value given,
never pydantic's text or a regular expression (docs/decisions/0050). :func:`load` reads plain
data; :func:`from_pulumi` adapts.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from infra.platform import nodepool
from infra.platform.addons import ADDON_VERSIONS
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.platform.network import subnet_layout
from infra.platform.node_pools import SYSTEM_LABEL, WHOLE_GPUS
from infra.workloads.durations import go_duration_seconds
from infra.workloads.placement import CAPACITY_TYPES, GpuPool, Placement, PlacementError

# The minors with pinned add-ons (addons.py), those in EKS standard support (AWS user guide,
# "kubernetes-versions": 1.35 to 2027-03-27, 1.36 to about 2027-08; 1.34 in HINTS).
SUPPORTED_KUBERNETES_VERSIONS = tuple(ADDON_VERSIONS)
DEFAULT_KUBERNETES_VERSION = "1.35"
DEVICE_PLUGIN_CHART_VERSION = "0.19.3"
# CloudWatch refuses an alarm whose Period x EvaluationPeriods exceeds one day.
MAX_ALARM_SECONDS = 86400
# EC2 CreateVpc takes an IPv4 block from /16 (65,536 addresses) to /28 (16).
VPC_PREFIXES = (16, 28)
# A pool name goes into the node group name prefix gpu-<pool>-, which the AWS provider caps at 37
# characters (63 minus its 26-character unique suffix); in words: POOL_NAME_WORDS (and node_pools.WHOLE_GPUS).
POOL_NAME = rf"^(?!{WHOLE_GPUS}$)[A-Za-z0-9]([A-Za-z0-9_-]{{0,30}}[A-Za-z0-9])?$"
POOL_NAME_WORDS = (
    f"1-32 letters, digits, '-' or '_', a letter or digit at both ends, not {WHOLE_GPUS}; "
    "it becomes a node label value and part of a node group name"
)
CHART_VERSION = r"^\d+\.\d+\.\d+$"
CHART_VERSION_WORDS = "a release version: three numbers joined by dots, no v and no range"
NAMESPACE_WORDS = "a namespace name: 1-63 lowercase letters, digits or '-', a letter or digit at both ends"


class ConfigError(ValueError):
    """A setting with a value the platform refuses; the message names the key and what is allowed."""


def _no_boolean(value: Any) -> Any:
    # Lax int reads the CLI's text ("3") and JSON's 2.0, but would also read true as 1.
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


def _cidr_text(value: Any) -> Any:
    # Lax IPv4Network reads the number 7 as 0.0.0.7/32: a CIDR is written as text.
    if not isinstance(value, (str, IPv4Network)):
        raise PydanticCustomError("ip_v4_network", "not a CIDR")
    if isinstance(value, str) and _host_bits(value):
        # A host address with a prefix (10.0.0.1/16): name the block it is in, which AWS wants.
        raise ValueError(
            f"has host bits set: {value!r} is inside {IPv4Network(value, strict=False)}, write that"
        )
    return value


def _host_bits(value: str) -> bool:
    """Is ``value`` an IPv4 network written with its host bits set (anything else: the type refuses)?"""
    for strict in (True, False):
        with contextlib.suppress(ValueError):
            IPv4Network(value, strict=strict)
            return not strict
    return False


def _cli_boolean(value: Any) -> Any:
    # `pulumi config set` stores true as text; strict bool then refuses "yes", 1 and the like.
    return value.lower() == "true" if isinstance(value, str) and value.lower() in ("true", "false") else value


def _unique(items: tuple[Any, ...]) -> tuple[Any, ...]:
    # Pydantic 2 dropped unique_items; the schema still says uniqueItems.
    if len(set(items)) != len(items):
        raise ValueError(f"lists an item twice: {[str(item) for item in items]}")
    return items


def _go_duration(value: str, alarm: bool = False) -> str:
    # Pydantic has no Go duration type; the grammar lives in infra.workloads.durations.
    seconds = go_duration_seconds(value)
    if seconds is not None and seconds < 0:
        raise ValueError(f"must not be negative, got {value!r}")
    if seconds is None:
        raise ValueError(
            f"must be a duration as Go writes it (e.g. 90s, 10m, 1h30m; units ns, us, ms, s, m, h), got {value!r}"
        )
    if alarm and not 0 < seconds <= MAX_ALARM_SECONDS:  # refused here, not mid-`pulumi up`
        raise ValueError(
            f"must be more than 0s and at most 24h: CloudWatch refuses an alarm whose Period x "
            f"EvaluationPeriods exceeds {MAX_ALARM_SECONDS} s (one-minute periods here), got {value!r}"
        )
    return value


# Constraints go before the validators, so pydantic checks them natively and the schema states them.
def whole(low: int, high: int) -> Any:
    """A whole number from ``low`` to ``high``."""
    return Annotated[int, Field(ge=low, le=high), BeforeValidator(_no_boolean)]


def unique(item: Any, min_items: int = 0) -> Any:
    """A list of ``item``, at least ``min_items`` long, none twice."""
    return Annotated[
        tuple[item, ...],
        Field(min_length=min_items, json_schema_extra={"uniqueItems": True}),
        AfterValidator(_unique),
    ]


Flag = Annotated[StrictBool, BeforeValidator(_cli_boolean)]
Cidr = Annotated[IPv4Network, BeforeValidator(_cidr_text)]
Nodes = whole(0, 450)  # EKS CreateNodegroup (NodegroupScalingConfig)
MaxNodes = whole(1, 450)
GoDuration = Annotated[str, AfterValidator(_go_duration), Field(json_schema_extra={"format": "go-duration"})]
AlarmWindow = Annotated[
    str,
    AfterValidator(functools.partial(_go_duration, alarm=True)),
    Field(json_schema_extra={"format": "go-duration", "exclusiveMinimum": "0s", "maximum": "24h"}),
]


def text(pattern: str, words: str, example: str) -> Any:
    """Text matching ``pattern``, which ``words`` says plainly (schema key ``x-allowed``): the docs and
    every refusal show the words and the example, never the expression."""
    return Annotated[str, Field(pattern=pattern, examples=[example], json_schema_extra={"x-allowed": words})]


SubnetId = text(
    r"^subnet-[0-9a-f]{8,17}$",
    "a subnet ID: subnet- and 8 to 17 lowercase hex digits",
    "subnet-0123456789abcdef0",
)
Namespace = text(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", NAMESPACE_WORDS, "inference")
IamPrincipal = text(
    r"^arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/[\w+=,.@/-]{1,512}$",
    "an IAM role or user ARN, arn:PARTITION:iam::ACCOUNT:role/NAME or :user/NAME (PARTITION aws, aws-cn "
    "or aws-us-gov; ACCOUNT 12 digits), not an sts assumed-role session",
    "arn:aws:iam::123456789012:role/ci-deploy",
)
SnsTopic = text(
    r"^arn:aws(-cn|-us-gov)?:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$",
    "an SNS topic ARN, arn:PARTITION:sns:REGION:ACCOUNT:TOPIC (PARTITION aws, aws-cn or aws-us-gov; "
    "ACCOUNT 12 digits; TOPIC 1-256 letters, digits, '-' or '_', then .fifo or nothing)",
    "arn:aws:sns:us-west-2:123456789012:gpu-oncall",
)
SystemType = Literal[tuple(ARM_SYSTEM)]
GpuType = Literal[tuple(ARM_NVIDIA)]


class Section(BaseModel):
    """A config object: camelCase keys as in the stack file; unknown keys refused (see :func:`_message`)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        regex_engine="python-re",  # for the look-aheads that refuse reserved names
    )

    @model_validator(mode="before")
    @classmethod
    def _json_text(cls, data: Any) -> Any:
        # `pulumi config set` without --path stores an object or list as JSON text, at any depth.
        data = _json(data)
        return {k: _json(v) for k, v in data.items()} if isinstance(data, Mapping) else data


class NetworkConfig(Section):
    vpc_id: (
        text(
            r"^vpc-[0-9a-f]{8,17}$",
            "a VPC ID: vpc- and 8 to 17 lowercase hex digits",
            "vpc-0123456789abcdef0",
        )
        | None
    ) = None
    """An existing VPC to use; then also privateSubnetIds (secret-capable)."""
    private_subnet_ids: unique(SubnetId, 2) = ()
    """Subnets of an existing VPC for the nodes, in two AZs or more."""
    public_subnet_ids: unique(SubnetId) = ()
    """Subnets of an existing VPC for internet load balancers."""
    cidr: Cidr = IPv4Network("10.0.0.0/16")
    """A new VPC's range, /16 to /28 (what AWS CreateVpc takes), holding a private /19 and a public /22 per AZ (checked)."""
    availability_zones: whole(2, 6) = 3
    """AZs of a new VPC."""
    nat_gateways: Literal["Single", "OnePerAz"] = "Single"
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
        # With an existing VPC, cidr and availabilityZones are the defaults, which pass both checks.
        low, high = VPC_PREFIXES  # a range of prefix lengths: no Field constraint says that
        if not low <= self.cidr.prefixlen <= high:
            raise ValueError(
                f".cidr must be an IPv4 block from /{low} to /{high}, the VPC sizes AWS CreateVpc "
                f"accepts, got '{self.cidr}'; e.g. 10.0.0.0/16"
            )
        subnet_layout(self.cidr, self.availability_zones)  # refuses a CIDR too small for the subnets
        return self


class EndpointConfig(Section):
    private_access: Flag = True
    """The API endpoint inside the VPC."""
    public_access: Flag = True
    """The API endpoint on the internet (IAM authentication still applies)."""
    public_access_cidrs: unique(Cidr, 1) = ()
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

    instance_types: unique(SystemType, 1) = ("t4g.large",)
    """Graviton types for CoreDNS, the autoscaler and controllers."""
    min_size: Nodes = 2
    """Nodes at least (EKS CreateNodegroup: 0 or more)."""
    desired_size: Nodes | None = None
    """Nodes at creation (default minSize); the system group is held at it, a GPU pool keeps the nodes it runs, raised to minSize (autoscaler off: to a larger desiredSize)."""
    max_size: MaxNodes = 3
    """Nodes at most (EKS CreateNodegroup: 1 or more)."""
    disk_size_gib: Annotated[whole(20, 16384), Field(alias="diskSizeGiB")] = 30
    """Encrypted gp3 root volume, GiB."""
    capacity_type: Literal[CAPACITY_TYPES] = "ON_DEMAND"
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
    # The device plugin refuses fewer than 2 replicas (api/config/v1/replicas.go); above 16 a
    # T4G's 16 GB leaves under 1 GB a slice, which no model we know of fits.
    replicas: whole(2, 16)
    """Pods per GPU; each gets time slices, not isolated memory. Requests above 1 GPU are refused."""


class SharingConfig(Section):
    time_slicing: TimeSlicingConfig
    """The device plugin's time-slicing."""


def _karpenter_duration(value: str) -> str:
    # A Go duration (as everywhere here) that Karpenter's NodePool CRD also takes: whole s, m, h parts.
    _go_duration(value)
    if not re.fullmatch(nodepool.CONSOLIDATE_AFTER, value):
        raise ValueError(
            f"must be whole seconds, minutes or hours as Karpenter's NodePool takes them (e.g. 30s, 10m, 1h30m), got {value!r}"
        )
    return value


KarpenterDuration = Annotated[
    str,
    AfterValidator(_karpenter_duration),
    Field(
        json_schema_extra={"format": "go-duration", "x-allowed": "a duration of whole s, m and h parts"},
        examples=["10m"],
    ),
]
PROVISIONERS = ("managedNodeGroup", "karpenter")


class KarpenterPoolConfig(Section):
    """How Karpenter provisions and consolidates a pool whose provisioner is karpenter."""

    capacity_types: unique(Literal[CAPACITY_TYPES], 1) | None = None
    """Capacity types Karpenter may launch (default: [capacityType]); with both, it takes spot where it is to be had."""
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = "WhenEmpty"
    """WhenEmpty removes only nodes without GPU pods; WhenEmptyOrUnderutilized also moves running pods to pack nodes."""
    consolidate_after: KarpenterDuration = "10m"
    """How long a node stays empty (or underutilized) before Karpenter removes it."""
    disruption_budget: text(nodepool.BUDGET_NODES, "a node count, or a percentage from 0% to 100%", "1") = "1"
    """Nodes (a count or a percentage) Karpenter may disrupt at once in this pool, consolidation and drift alike."""
    keep_node_group: Flag = False
    """Moving from a node group: keep its nodes (Cluster Autoscaler lets go of it) until you have drained them; then remove this."""
    ami_alias: text(nodepool.AMI_ALIAS_PATTERN, nodepool.AMI_ALIAS_WORDS, "al2023@v20261120") = (
        nodepool.AMI_ALIAS
    )
    """The EKS AL2023 AMI release its nodes run: al2023@vYYYYMMDD pins one (production must); a new value drifts the nodes, replaced within disruptionBudget."""
    gpu_limit: whole(1, 450 * 32) | None = None
    """nvidia.com/gpu the pool may hold in all (time-sliced slots on a shared pool); default maxSize x what one node advertises."""


class GpuPoolConfig(NodeGroupConfig):
    """A GPU pool: a managed node group of one GPU count, tainted and labelled by the contract."""

    instance_types: unique(GpuType, 1) = ("g5g.xlarge",)
    """Arm + NVIDIA T4G types, all with the same GPU count (x86 GPU types cannot run the Arm AMI)."""
    min_size: Nodes = 0
    """Nodes at least; 0 lets the pool scale from zero."""
    max_size: MaxNodes = 2
    """Nodes at most: as far as the autoscaler may go; not below the nodes the pool runs (checked)."""
    disk_size_gib: Annotated[whole(50, 16384), Field(alias="diskSizeGiB")] = 100
    """Encrypted gp3 root volume, GiB: CUDA base images alone are several GiB, models come on top."""
    sharing: SharingConfig | None = None
    """Time-slicing: {timeSlicing: {replicas: N}}; without it, whole GPUs."""
    node_repair: Flag = True
    """EKS node auto-repair: replace a node whose health checks fail (Karpenter pools: its node repair, alpha)."""
    provisioner: Literal[PROVISIONERS] = "managedNodeGroup"
    """Who adds and removes the pool's nodes: a managed node group scaled by Cluster Autoscaler, or Karpenter (no node group)."""
    karpenter: KarpenterPoolConfig | None = None
    """Karpenter's settings for this pool (only with provisioner: karpenter)."""

    @property
    def slots_per_node(self) -> int:
        """nvidia.com/gpu one node advertises: its GPUs times the time-slicing replicas."""
        replicas = self.sharing.time_slicing.replicas if self.sharing else 1
        return ARM_NVIDIA[self.instance_types[0]].gpus * replicas

    @property
    def karpenter_settings(self) -> KarpenterPoolConfig:
        return self.karpenter or KarpenterPoolConfig()

    @property
    def capacity_types(self) -> tuple[str, ...]:
        """What the pool's nodes may be bought as: Karpenter's list, else the one capacityType."""
        return self.karpenter_settings.capacity_types or (self.capacity_type,)

    @model_validator(mode="after")
    def _provisioner_settings(self) -> GpuPoolConfig:
        given = self.model_fields_set
        if self.provisioner != "karpenter":
            if self.karpenter is not None:
                raise ValueError(
                    ".karpenter is set but provisioner is not karpenter: set provisioner: karpenter or remove it"
                )
            return self
        if {"desired_size", "min_size"} & given and (self.min_size or self.desired_size):
            raise ValueError(
                ".minSize and .desiredSize do not apply with provisioner: karpenter, which keeps no minimum "
                "(nodes only while pods need them): leave them unset or 0"
            )
        settings = self.karpenter_settings
        if settings.capacity_types and "capacity_type" in given:
            raise ValueError(".capacityType and .karpenter.capacityTypes are both set: keep one of them")
        if settings.gpu_limit is not None and settings.gpu_limit < self.slots_per_node:
            raise ValueError(
                f".karpenter.gpuLimit ({settings.gpu_limit}) is below what one node advertises "
                f"({self.slots_per_node} nvidia.com/gpu): Karpenter could never launch a node"
            )
        return self

    @model_validator(mode="after")
    def _one_gpu_count(self) -> GpuPoolConfig:
        counts = {name: ARM_NVIDIA[name].gpus for name in self.instance_types}
        if len(set(counts.values())) > 1:
            raise ValueError(
                f".instanceTypes mix GPU counts {counts}: the autoscaler's node template must promise what "
                "every node of the pool brings; put types with different GPU counts in separate pools"
            )
        return self


@dataclass(frozen=True)
class Pool:
    """One GPU pool on its way to resources: its contract (what consumers see) and its node group's settings."""

    contract: GpuPool
    settings: GpuPoolConfig

    @property
    def name(self) -> str:
        return self.contract.name


class PlacementConfig(Section):
    key: Any = "GPU"
    """Label and taint key (label syntax; not under kubernetes.io/, k8s.io/, eks.amazonaws.com/)."""
    value: Any = "true"
    """Label and taint value, a string."""


class DevicePluginConfig(Section):
    chart_version: text(CHART_VERSION, CHART_VERSION_WORDS, DEVICE_PLUGIN_CHART_VERSION) = (
        DEVICE_PLUGIN_CHART_VERSION
    )
    """nvidia-device-plugin chart, pinned."""
    namespace: text(
        r"^(?!default$|kube-system$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        f"{NAMESPACE_WORDS}, not default or kube-system",
        "nvidia-device-plugin",
    ) = "nvidia-device-plugin"
    """Its own namespace (the chart refuses default)."""


class AutoscalerConfig(Section):
    enabled: Flag = True
    """false declares no autoscaler resources at all; the pools keep the nodes they run and minSize/desiredSize size them."""
    chart_version: text(CHART_VERSION, CHART_VERSION_WORDS, "9.59.0") = "9.59.0"
    """cluster-autoscaler chart, pinned; the image follows kubernetesVersion."""
    expander: Literal["least-waste", "priority", "random", "most-pods"] = "least-waste"
    """How it picks among equally ranked pools; when pools differ in node price, pods per node or capacity type, priority (cheapest node first, spot first among equals) goes in front."""
    scale_down_unneeded_time: GoDuration = "10m"
    """How long a GPU node sits idle before it is removed."""
    balance_similar_node_groups: Flag = True
    """Spread scale-ups over alike pools (never across spot and on-demand: their labels differ)."""


_SECTION = Field(default_factory=dict, validate_default=True)  # defaults go through the same checks


class AlarmsConfig(Section):
    sns_topic_arn: SnsTopic | None = None
    """Where alarms notify; unset: the alarms exist but notify nobody."""
    gpu_pod_pending_for: AlarmWindow = "10m"
    """Alarm when pods stay unschedulable this long (a stuck GPU scale-up; 8 of every 10 minutes); rounded up to whole minutes."""
    node_not_ready_for: AlarmWindow = "10m"
    """Alarm when a node stays NotReady this long; rounded up to whole minutes."""


class ObservabilityConfig(Section):
    enabled: Flag = True
    """The CloudWatch Observability add-on, its IAM role, the GPU dashboard and the alarms."""
    container_logs: Flag = False
    """Fluent Bit shipping every container's stdout to CloudWatch Logs (billed per GB)."""
    node_monitoring_agent: Flag = True
    """The eks-node-monitoring-agent add-on: the node conditions node auto-repair acts on."""
    gpu_namespaces: unique(Namespace) = ()
    """Namespaces of GPU workloads: the dashboard adds their pending pods."""
    alarms: Annotated[AlarmsConfig, _SECTION]
    """Alarm thresholds and the SNS topic."""


class PlatformConfig(Section):
    """The whole stack config. ``region`` and ``cluster_name`` default from the stack."""

    region: SkipJsonSchema[str]
    secret_keys: SkipJsonSchema[frozenset[str]] = frozenset()
    """Config keys set with ``--secret``: their values reach resources only as secret Outputs."""
    cluster_name: text(
        r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$",
        "1-100 letters, digits, '-' or '_', the first a letter or digit (what EKS CreateCluster takes)",
        "eks-gpu-platform-dev",
    )
    """The EKS cluster's name; default <project>-<stack>."""
    kubernetes_version: Literal[SUPPORTED_KUBERNETES_VERSIONS] = DEFAULT_KUBERNETES_VERSION
    """EKS minor in standard support, a quoted string; a bump upgrades control plane, node groups, add-ons and autoscaler image."""
    cluster_admins: unique(IamPrincipal) = ()
    """IAM roles or users that get cluster-admin access entries (the creator always has one)."""
    network: Annotated[NetworkConfig, _SECTION]
    """A new VPC (cidr, availabilityZones, natGateways) or an existing one (vpcId, subnets)."""
    endpoint: Annotated[EndpointConfig, _SECTION]
    """Who reaches the Kubernetes API."""
    system_nodes: Annotated[NodeGroupConfig, _SECTION]
    """The untainted node group for CoreDNS, the autoscaler and controllers."""
    gpu_pools: Annotated[
        dict[text(POOL_NAME, POOL_NAME_WORDS, "inference"), GpuPoolConfig],  # words: propertyNames
        Field(default_factory=lambda: {"default": {}}, validate_default=True, min_length=1),
    ]
    """GPU pools by name (not whole-gpus, the device plugin's default config): each a managed node group tainted and labelled by the contract, plus eks-gpu/pool=<name>."""
    placement: Annotated[PlacementConfig, _SECTION]
    """The contract's label and taint on every GPU node."""
    device_plugin: Annotated[DevicePluginConfig, _SECTION]
    """The NVIDIA device plugin Helm release."""
    autoscaler: Annotated[AutoscalerConfig, _SECTION]
    """Cluster Autoscaler, which scales the GPU pools (only them) from and to zero."""
    create_spot_service_linked_role: Flag = False
    """true makes the account-wide AWSServiceRoleForEC2Spot when a spot-capable Karpenter pool needs it and the account lacks it (kept on destroy); false warns (SPOT-only pools: refused)."""
    production: Flag = False
    """true protects the VPC, the KMS key and the cluster from deletion and replacement; GPU pools stay replaceable."""
    observability: Annotated[ObservabilityConfig, _SECTION]
    """GPU metrics, node health agents, the GPU dashboard and alarms."""

    @model_validator(mode="after")
    def _consistent(self) -> PlatformConfig:
        try:
            contract = self.contract  # the contract checks its key, value and pools
        except PlacementError as error:
            raise ValueError(f".placement: {error}") from None
        if contract.key == SYSTEM_LABEL:  # the contract refuses its own pool label
            raise ValueError(
                f".placement.key {contract.key!r} collides with the system group's label; choose another key"
            )
        self._karpenter_runs_here()
        return self

    def _karpenter_runs_here(self) -> None:
        """Karpenter pools need a Kubernetes minor the pinned Karpenter supports, and one node repair setting."""
        pools = [p.name for p in self.karpenter_pools]
        if not pools:
            return
        where = f"gpuPools.{pools[0]}.provisioner: karpenter"
        if not nodepool.kubernetes_supported(self.kubernetes_version):
            low, high = nodepool.KUBERNETES_MINORS
            raise ValueError(
                f".kubernetesVersion {self.kubernetes_version!r} is not one Karpenter {nodepool.VERSION} runs on "
                f"({low} to {high}), asked for by {where}: use managedNodeGroup pools or another minor"
            )
        floating = [
            p.name
            for p in self.karpenter_pools
            if p.settings.karpenter_settings.ami_alias.endswith("@latest")
        ]
        if self.production and floating:
            raise ValueError(
                f".gpuPools.{floating[0]}.karpenter.amiAlias is {nodepool.AMI_ALIAS!r} on a production stack: every "
                "EKS AMI release would drift every GPU node and bring an untested NVIDIA driver; allowed: a pinned "
                'release, al2023@vYYYYMMDD (docs/operations.md, "roll a new AMI to a Karpenter pool")'
            )
        repair = {p.name: p.settings.node_repair for p in self.karpenter_pools}
        if len(set(repair.values())) > 1:
            raise ValueError(
                f".gpuPools: nodeRepair differs between Karpenter pools {repair}: Karpenter's node repair is "
                "one switch for its whole controller; set the same value on every Karpenter pool"
            )

    def secret(self, key: str, value: Any) -> Any:
        """``value`` as a secret Output when config ``key`` was set with ``--secret``, else as is."""
        if key not in self.secret_keys:
            return value
        import pulumi

        return pulumi.Output.secret(value)

    @functools.cached_property
    def pools(self) -> tuple[Pool, ...]:
        """Each GPU pool as the contract states it, with its node group's settings: the one walk over gpuPools."""
        return tuple(
            Pool(
                GpuPool(
                    name=name,
                    gpus_per_node=ARM_NVIDIA[pool.instance_types[0]].gpus,  # one count per pool (checked)
                    time_slicing_replicas=pool.sharing.time_slicing.replicas if pool.sharing else 1,
                    # A pool that may run on spot is a spot pool to its consumers: nodes may be reclaimed.
                    capacity_type="SPOT" if "SPOT" in pool.capacity_types else "ON_DEMAND",
                ),
                pool,
            )
            for name, pool in self.gpu_pools.items()
        )

    @property
    def node_group_pools(self) -> tuple[Pool, ...]:
        """The pools that are managed node groups, scaled by Cluster Autoscaler."""
        return tuple(p for p in self.pools if p.settings.provisioner != "karpenter")

    @property
    def pools_with_node_groups(self) -> tuple[Pool, ...]:
        """The node group pools, and Karpenter pools moving off a node group that is kept until drained."""
        return tuple(
            p
            for p in self.pools
            if p.settings.provisioner != "karpenter" or p.settings.karpenter_settings.keep_node_group
        )

    @property
    def karpenter_pools(self) -> tuple[Pool, ...]:
        """The pools Karpenter provisions: no node group, nothing for Cluster Autoscaler."""
        return tuple(p for p in self.pools if p.settings.provisioner == "karpenter")

    @functools.cached_property
    def contract(self) -> Placement:
        """The placement contract with this stack's pools: what node groups, plugin and consumers read."""
        return Placement(
            key=self.placement.key, value=self.placement.value, pools=tuple(p.contract for p in self.pools)
        )


@functools.cache
def json_schema() -> dict[str, Any]:
    """The stack config's JSON schema (stack-file keys): what the docs and the refusals say is allowed."""
    return PlatformConfig.model_json_schema()


def resolve(node: Mapping[str, Any]) -> dict[str, Any]:
    """A schema node with its ``$ref`` and optional (``anyOf`` with null) unwrapped; the field's own keys win."""
    node = dict(node)
    while "$ref" in node or "anyOf" in node:
        if "$ref" in node:
            inner = json_schema()["$defs"][node.pop("$ref").rsplit("/", 1)[-1]]
        else:
            inner = next(n for n in node.pop("anyOf") if n.get("type") != "null")
        node = {**inner, **node}
    return node


def _schema_at(loc: tuple[Any, ...]) -> dict[str, Any]:
    node = resolve(json_schema())
    for part in loc:
        if part == "[key]":  # a map's key: what propertyNames says of it
            node = node.get("propertyNames", {})
        elif isinstance(part, int):
            node = resolve(node.get("items", {}))
        elif part in node.get("properties", {}):
            node = resolve(node["properties"][part])
        else:  # a map's value (gpuPools.<pool>)
            node = resolve(next(iter(node.get("patternProperties", {}).values()), {}))
    return node


def literal(value: Any) -> str:
    """A value as the stack file writes it: booleans in lower case, text YAML would read as a number in quotes."""
    if isinstance(value, bool):
        return str(value).lower()
    return f'"{value}"' if isinstance(value, str) and value[:1].isdigit() else str(value)


FORMATS = {
    "ipv4network": ("an IPv4 CIDR block", ("10.0.0.0/16",)),
    "go-duration": ("a Go duration", ("90s", "10m", "1h30m")),
}
BOUNDS = (("exclusiveMinimum", "above"), ("maximum", "up to"))


def allowed(node: Mapping[str, Any], code: Any = literal) -> str:
    """What a schema node accepts, in words: the configuration reference and every refusal say this.

    ``code`` renders a value (the docs put it in backticks). Patterns are said by their
    ``x-allowed`` words (:func:`text`), never as the expression.
    """
    if "enum" in node:
        return "one of " + ", ".join(code(v) for v in node["enum"])
    if node.get("type") == "array":
        repeats = ", no repeats" if node.get("uniqueItems") else ""
        return f"a list ({node.get('minItems', 0)} or more{repeats}), each {allowed(resolve(node['items']), code)}"
    if node.get("type") == "integer":
        return f"a whole number from {node['minimum']} to {node['maximum']}"
    if node.get("type") == "boolean":
        return f"{code(True)} or {code(False)}"
    if "format" in node:
        words, examples = FORMATS[node["format"]]
        bounds = (f"{word} {code(node[k])}" for k, word in BOUNDS if k in node)
        return ", ".join((f"{words} (e.g. {', '.join(code(e) for e in examples)})", *bounds))
    if "x-allowed" in node:
        return node["x-allowed"] + "".join(f", e.g. {code(e)}" for e in node.get("examples", [])[:1])
    if "patternProperties" in node:
        names = node["propertyNames"]["x-allowed"]
        return f"a map of pool name to pool settings, at least {node['minProperties']} (a pool name: {names})"
    if "properties" in node:
        return "an object of settings (key: value)"
    return ""


# Known mistakes, and what to write instead: (key, value) patterns -> the hint added to the refusal.
HINTS = {
    ("kubernetesVersion", r"1\.34"): "1.34 left EKS standard support on 2026-12-02: set 1.35 first",
    (r"clusterAdmins\[\d+\]", ".*:assumed-role/.*"): "an assumed-role session: give the role's ARN",
    ("gpuPools key .*", WHOLE_GPUS): f"{WHOLE_GPUS!r} is reserved: the device plugin's default config",
    ("gpuNodes", ".*"): "gpuNodes was replaced by gpuPools: {<name>: {the same fields, plus sharing}}",
    ("devicePlugin.namespace", "default|kube-system"): "the plugin needs its own namespace (the chart "
    "refuses 'default' unless allowDefaultNamespace; kube-system holds EKS's own agents)",
    (r"gpuPools\..*\.instanceTypes\[\d+\]", ".*"): "GPU pools run the Arm NVIDIA AMI "
    "(AL2023_ARM_64_NVIDIA), so only Arm NVIDIA (g5g) types; x86 GPU types cannot boot it",
}


def _setting(loc: tuple[Any, ...]) -> str:
    if loc[-1:] == ("[key]",):  # a map's key: the pool's name itself
        return f"{_setting(loc[:-2])} key {loc[-2]!r}"
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _message(error: Mapping[str, Any]) -> str:
    """One refusal: the key as the stack file spells it, what it allows in words (:func:`allowed`, the
    words of the configuration reference), the value given, a hint if known. Pydantic's own text only
    names the constraint, as a regular expression for a pattern, so it is not shown."""
    loc = tuple(error["loc"])
    setting, kind = _setting(loc), error["type"]
    if loc[-1:] == ("[key]",):  # a map's key: the words are the map's, not its value's
        loc = (*loc[:-2], "[key]")
    if kind == "extra_forbidden":
        known = list(_schema_at(loc[:-1]).get("properties", {}))
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f" (did you mean {_setting((*loc[:-1], close[0]))}?)" if close else ""
        message = f"unknown setting {setting}{hint}; allowed: {', '.join(known)}"
    elif kind == "missing":
        message = f"{setting} is required"
    elif kind == "value_error":  # our own checks: the message continues the key
        text = str(error["ctx"]["error"])
        message = (setting + (text if text[:1] in ".:" else f" {text}")).lstrip(".: ")
    else:  # a wrong type or a value outside a declared constraint
        message = f"{setting} must be {allowed(_schema_at(loc)) or 'text'}, got {error['input']!r}"
    for (key, value), hint in HINTS.items():
        if re.fullmatch(key, setting) and re.fullmatch(value, str(error.get("input")), re.S):
            return f"{message}; {hint}"
    return message


def _most_specific(errors: list[Any]) -> list[Any]:
    """Errors not explained by one deeper down (a list too short only because its items were refused)."""
    locs = [tuple(e["loc"]) for e in errors]
    return [
        e for e, loc in zip(errors, locs, strict=True) if not any(o[: len(loc)] == loc != o for o in locs)
    ]


# Keys whose values may be secret: each reaches resources through ``PlatformConfig.secret``.
# The others name resources or pick versions, which Pulumi shows in URNs and plans.
SECRET_CAPABLE = ("clusterAdmins", "endpoint", "network")
# Namespaces a stack file may use besides the project's own: the providers this program runs.
PROVIDER_NAMESPACES = ("aws", "awsx", "eks", "kubernetes", "pulumi")


def _json(value: Any) -> Any:
    """The CLI hands objects and lists over as JSON text."""
    if isinstance(value, str) and value[:1] in "[{":
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(value)
    return value


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
    for internal in ("region", "secretKeys", "secret_keys"):
        if internal in raw:
            where = "aws:region" if internal == "region" else "`pulumi config set --secret`"
            raise ConfigError(f"unknown setting {internal}: set it with {where}, not under this project")
    cannot = sorted(secret_keys - set(SECRET_CAPABLE))
    if cannot:
        raise ConfigError(
            f"{', '.join(cannot)} cannot be kept secret: these settings name resources or pick versions, "
            f"which Pulumi shows in URNs and plans; set them without --secret (secrets are supported for "
            f"{', '.join(SECRET_CAPABLE)})"
        )
    data = {"clusterName": default_cluster_name, **raw, "region": region, "secret_keys": secret_keys}
    try:
        return PlatformConfig.model_validate(data)
    except ValidationError as error:
        message = "; ".join(_message(e) for e in _most_specific(error.errors()))
        raise ConfigError(_masked(message, [raw[k] for k in secret_keys if k in raw])) from None


def _leaves(value: Any) -> Iterator[str]:
    value = _json(value)
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str) and value:
        yield value
        with contextlib.suppress(ValueError):  # the block a host-bits refusal names
            yield str(IPv4Network(value, strict=False))


def _masked(message: str, secrets: list[Any]) -> str:
    """``message`` with every text inside a secret setting as [secret]: the CLI masks a secret only where
    its whole text appears (pulumi engine/events.go, logging.FilterString), never a part of it."""
    for leaf in sorted({leaf for value in secrets for leaf in _leaves(value)}, key=len, reverse=True):
        message = message.replace(leaf, "[secret]")
    return message


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
