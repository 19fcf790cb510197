"""The GPU platform: network, cluster, system node group, GPU pools, add-ons, device plugin, autoscaler.

``GpuPlatform`` declares it all from a validated :class:`PlatformConfig`, as
children of one ``eks-gpu:index:GpuPlatform`` component; the root ``__main__.py`` only reads
config, calls it and exports what consumer stacks need.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from infra.platform import addons, node_pools, pool_sizes
from infra.platform.autoscaler import autoscaler
from infra.platform.cluster import cluster, secrets_key
from infra.platform.config import PlatformConfig
from infra.platform.device_plugin import device_plugin
from infra.platform.iam import node_role
from infra.platform.network import network
from infra.platform.node_group import managed_node_group
from infra.platform.observability import observability, pool_views, settings_from_config

TYPE_TOKEN = "eks-gpu:index:GpuPlatform"
GPU_AMI_TYPE = "AL2023_ARM_64_NVIDIA"
SYSTEM_AMI_TYPE = "AL2023_ARM_64_STANDARD"


class GpuPlatform(pulumi.ComponentResource):
    """An EKS cluster whose GPU nodes take only pods that tolerate the contract's taint."""

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        # Read before anything is declared: a maxSize below the nodes a pool runs is refused here.
        sizes = pool_sizes.desired_sizes(config)
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Production stacks protect what must never go by accident and cannot be rebuilt in place: the
        # VPC, the KMS key and the cluster. Not the GPU pools: replacing or removing one is routine
        # (docs/decisions/0004-production-protects-network-key-cluster.md).
        guarded = pulumi.ResourceOptions(parent=self, protect=config.production)

        net = network(f"{name}-vpc", config.network, guarded, secret=lambda v: config.secret("network", v))
        key = secrets_key(f"{name}-secrets", guarded)
        self.cluster = cluster(
            f"{name}-eks",
            config,
            vpc_id=net.vpc_id,
            private_subnet_ids=net.private_subnet_ids,
            public_subnet_ids=net.public_subnet_ids,
            key=key,
            opts=guarded,
        )
        nodes = node_role(f"{name}-node", child)
        # Node groups come after the cluster and the role's policy attachments, and go before them.
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[self.cluster, *nodes.attachments])

        self.system_nodes = managed_node_group(
            f"{name}-system",
            cluster_name=config.cluster_name,
            node_group_name_prefix="system-",
            node_role_arn=nodes.role.arn,
            subnet_ids=net.private_subnet_ids,
            kubernetes_version=config.kubernetes_version,
            ami_type=SYSTEM_AMI_TYPE,
            group=config.system_nodes,
            labels=dict(node_pools.SYSTEM_LABELS),
            opts=after_cluster,
        )
        contract = config.contract
        autoscaled = config.autoscaler.enabled
        self.gpu_pools: dict[str, aws.eks.NodeGroup] = {}
        for pool in contract.pools:
            settings = config.gpu_pools[pool.name]
            self.gpu_pools[pool.name] = managed_node_group(
                f"{name}-gpu-{pool.name}",
                cluster_name=config.cluster_name,
                node_group_name_prefix=pool_sizes.node_group_name_prefix(pool.name),
                node_role_arn=nodes.role.arn,
                subnet_ids=net.private_subnet_ids,
                kubernetes_version=config.kubernetes_version,
                ami_type=GPU_AMI_TYPE,
                group=settings,
                labels=node_pools.labels(contract, pool),
                taints=[contract.eks_taint()],
                tags=node_pools.node_group_tags(pool),
                node_repair=settings.node_repair,
                opts=after_cluster,
                desired_size=sizes[pool.name],  # never below what the pool runs now
            )
        after_nodes = pulumi.ResourceOptions(parent=self, depends_on=[self.system_nodes])
        self.pod_identity_agent = self._addon(name, addons.POD_IDENTITY_AGENT, config, after_nodes)
        self._addon(name, addons.COREDNS, config, after_nodes)

        self.kubeconfig = pulumi.Output.secret(self.cluster.kubeconfig_json)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        on_cluster = pulumi.ResourceOptions(
            parent=self, provider=self.provider, depends_on=list(self.gpu_pools.values())
        )
        self.device_plugin_namespace, self.device_plugin = device_plugin(
            "nvidia-device-plugin", config.device_plugin, contract, on_cluster
        )
        if autoscaled:
            autoscaler(
                "cluster-autoscaler",
                config.autoscaler,
                cluster_name=config.cluster_name,
                region=config.region,
                kubernetes_version=config.kubernetes_version,
                placement=contract,
                pools=config.gpu_pools,
                pool_asg_names={
                    pool: group.resources.apply(lambda r: r[0].autoscaling_groups[0].name)
                    for pool, group in self.gpu_pools.items()
                },
                pod_identity_agent=self.pod_identity_agent,
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.gpu_pools.values())),
                k8s_opts=pulumi.ResourceOptions(
                    parent=self, provider=self.provider, depends_on=[self.system_nodes]
                ),
            )
        # GPU metrics, node health for auto-repair, dashboard and alarms (infra/platform/observability.py).
        self.observability = observability(
            name,
            settings_from_config(config.observability),
            cluster_name=config.cluster_name,
            region=config.region,
            kubernetes_version=config.kubernetes_version,
            placement=contract,
            pools=pool_views(config.gpu_pools),
            pod_identity_agent=self.pod_identity_agent,
            opts=after_nodes,
        )
        self.register_outputs({"kubeconfig": self.kubeconfig})

    @staticmethod
    def _addon(name: str, addon: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> aws.eks.Addon:
        """An EKS add-on at the pinned version for the cluster's Kubernetes version."""
        short = {addons.POD_IDENTITY_AGENT: "pod-identity"}.get(addon, addon)  # names already in state
        return aws.eks.Addon(
            f"{name}-{short}",
            cluster_name=config.cluster_name,
            addon_name=addon,
            addon_version=addons.version(addon, config.kubernetes_version),
            resolve_conflicts_on_create=addons.RESOLVE_CONFLICTS,  # take over the copy EKS bootstraps
            resolve_conflicts_on_update=addons.RESOLVE_CONFLICTS,
            opts=opts,
        )
