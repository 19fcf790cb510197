"""Typed, validated stack config: every setting checked before any resource is declared."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from infra.platform import nodepool
from infra.platform.addons import ADDON_VERSIONS
from infra.platform.config_types import (
    SECTION,
    VPC_PREFIXES,
    AlarmWindow,
    Cidr,
    ClusterName,
    Flag,
    GoDuration,
    IamPrincipal,
    Namespace,
    PluginNamespace,
    PoolName,
    Section,
    SnsTopic,
    SubnetId,
    VpcId,
    release_version,
    unique,
    whole,
)
from infra.platform.config_words import Words
from infra.platform.node_pools import SYSTEM_LABEL
from infra.platform.pool_config import GpuPoolConfig, NodeGroupConfig, Pool
from infra.platform.subnets import subnet_layout
from infra.platform.team_config import TeamConfig, TeamName, check_teams, team_queues
from infra.workloads.placement import Placement, PlacementError

# The minors with pinned add-ons (addons.py), those in EKS standard support (AWS user guide,
# "kubernetes-versions": 1.35 to 2027-03-27, 1.36 to about 2027-08; 1.34 in HINTS).
SUPPORTED_KUBERNETES_VERSIONS = tuple(ADDON_VERSIONS)
DEFAULT_KUBERNETES_VERSION = "1.35"
DEVICE_PLUGIN_CHART_VERSION = "0.19.3"


class ConfigError(ValueError):
    """A setting with a value the platform refuses; the message names the key and what is allowed."""


class NetworkConfig(Section):
    vpc_id: VpcId | None = None
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


class PlacementConfig(Section):
    key: Any = "GPU"
    """Label and taint key (label syntax; not under kubernetes.io/, k8s.io/, eks.amazonaws.com/)."""
    value: Any = "true"
    """Label and taint value, a string."""


class DevicePluginConfig(Section):
    chart_version: release_version(DEVICE_PLUGIN_CHART_VERSION) = DEVICE_PLUGIN_CHART_VERSION
    """nvidia-device-plugin chart, pinned."""
    namespace: PluginNamespace = "nvidia-device-plugin"
    """Its own namespace (the chart refuses default)."""


class AutoscalerConfig(Section):
    enabled: Flag = True
    """false declares no autoscaler resources at all; the pools keep the nodes they run and minSize/desiredSize size them."""
    chart_version: release_version("9.59.0") = "9.59.0"
    """cluster-autoscaler chart, pinned; the image follows kubernetesVersion."""
    expander: Literal["least-waste", "priority", "random", "most-pods"] = "least-waste"
    """How it picks among equally ranked pools; when pools differ in node price, pods per node or capacity type, priority (cheapest node first, spot first among equals) goes in front."""
    scale_down_unneeded_time: GoDuration = "10m"
    """How long a GPU node sits idle before it is removed."""
    balance_similar_node_groups: Flag = True
    """Spread scale-ups over alike pools (never across spot and on-demand: their labels differ)."""


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
    alarms: Annotated[AlarmsConfig, SECTION]
    """Alarm thresholds and the SNS topic."""


class PlatformConfig(Section):
    """The whole stack config. ``region`` and ``cluster_name`` default from the stack."""

    region: SkipJsonSchema[str]
    secret_keys: SkipJsonSchema[frozenset[str]] = frozenset()
    """Config keys set with ``--secret``: their values reach resources only as secret Outputs."""
    cluster_name: ClusterName
    """The EKS cluster's name; default <project>-<stack>."""
    kubernetes_version: Literal[SUPPORTED_KUBERNETES_VERSIONS] = DEFAULT_KUBERNETES_VERSION
    """EKS minor in standard support, a quoted string; a bump upgrades control plane, node groups, add-ons and autoscaler image."""
    cluster_admins: unique(IamPrincipal) = ()
    """IAM roles or users that get cluster-admin access entries (the creator always has one)."""
    network: Annotated[NetworkConfig, SECTION]
    """A new VPC (cidr, availabilityZones, natGateways) or an existing one (vpcId, subnets)."""
    endpoint: Annotated[EndpointConfig, SECTION]
    """Who reaches the Kubernetes API."""
    system_nodes: Annotated[NodeGroupConfig, SECTION]
    """The untainted node group for CoreDNS, the autoscaler and controllers."""
    gpu_pools: Annotated[
        dict[PoolName, GpuPoolConfig],  # words: propertyNames
        Field(default_factory=lambda: {"default": {}}, validate_default=True, min_length=1),
    ]
    """GPU pools by name (not whole-gpus, the device plugin's default config): each a managed node group tainted and labelled by the contract, plus eks-gpu/pool=<name>."""
    placement: Annotated[PlacementConfig, SECTION]
    """The contract's label and taint on every GPU node."""
    device_plugin: Annotated[DevicePluginConfig, SECTION]
    """The NVIDIA device plugin Helm release."""
    autoscaler: Annotated[AutoscalerConfig, SECTION]
    """Cluster Autoscaler, which scales the GPU pools (only them) from and to zero."""
    create_spot_service_linked_role: Flag = False
    """true makes the account-wide AWSServiceRoleForEC2Spot when a spot-capable Karpenter pool needs it and the account lacks it (kept on destroy); false warns (SPOT-only pools: refused)."""
    production: Flag = False
    """true protects the VPC, the KMS key and the cluster from deletion and replacement; GPU pools stay replaceable."""
    observability: Annotated[ObservabilityConfig, SECTION]
    """GPU metrics, node health agents, the GPU dashboard and alarms."""
    teams: Annotated[dict[TeamName, TeamConfig], Field(json_schema_extra={"x-key": "team"})] = {}
    """GPU quotas per team through Kueue (docs/teams.md): each team's namespace, quota per pool, priority; unset: no Kueue at all."""

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
        check_teams(self.teams, self.pools, {self.device_plugin.namespace: "devicePlugin.namespace"})
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
        return tuple(Pool(pool.contract(name), pool) for name, pool in self.gpu_pools.items())

    @property
    def node_group_pools(self) -> tuple[Pool, ...]:
        """The pools that are managed node groups, scaled by Cluster Autoscaler."""
        return tuple(p for p in self.pools if not p.karpenter)

    @property
    def pools_with_node_groups(self) -> tuple[Pool, ...]:
        """The node group pools, and Karpenter pools moving off a node group that is kept until drained."""
        return tuple(
            p for p in self.pools if not p.karpenter or p.settings.karpenter_settings.keep_node_group
        )

    @property
    def karpenter_pools(self) -> tuple[Pool, ...]:
        """The pools Karpenter provisions."""
        return tuple(p for p in self.pools if p.karpenter)

    @functools.cached_property
    def contract(self) -> Placement:
        """The placement contract with this stack's pools: what node groups, plugin and consumers read."""
        return Placement(
            key=self.placement.key,
            value=self.placement.value,
            pools=tuple(p.contract for p in self.pools),
            queues=team_queues(self.teams),
        )


@functools.cache
def json_schema() -> dict[str, Any]:
    """The stack config's JSON schema (stack-file keys): what the docs and the refusals say is allowed."""
    return PlatformConfig.model_json_schema()


@functools.cache
def words() -> Words:
    """The one formatter of allowed values, over this schema: refusals and docs/configuration.md."""
    return Words(json_schema())


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
        secrets = [raw[k] for k in secret_keys if k in raw]
        raise ConfigError(words().refusals(error.errors(), secrets)) from None


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
