"""The GPU platform: network, cluster, system node group, GPU pools, add-ons, device plugin, autoscaler."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from infra.platform import addons, node_pools, nodepool, pool_sizes
from infra.platform.autoscaler import autoscaler
from infra.platform.cluster import cluster, secrets_key
from infra.platform.config import PlatformConfig, Pool
from infra.platform.device_plugin import device_plugin
from infra.platform.iam import node_role
from infra.platform.karpenter import karpenter
from infra.platform.kueue import kueue
from infra.platform.network import Network, network
from infra.platform.node_group import managed_node_group
from infra.platform.observability import observability

TYPE_TOKEN = "eks-gpu:index:GpuPlatform"
GPU_AMI_TYPE = "AL2023_ARM_64_NVIDIA"
SYSTEM_AMI_TYPE = "AL2023_ARM_64_STANDARD"


class GpuPlatform(pulumi.ComponentResource):
    """An EKS cluster whose GPU nodes take only pods that tolerate the contract's taint."""

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        # Read before anything is declared: a maxSize below the nodes a pool runs is refused here.
        sizes = pool_sizes.desired_sizes(config)
        super().__init__(TYPE_TOKEN, name, None, opts)
        # Production protects the VPC, the KMS key and the cluster, not the GPU pools, whose replacement
        # is routine (docs/decisions/0004-production-protects-network-key-cluster.md).
        guarded = pulumi.ResourceOptions(parent=self, protect=config.production)
        discovery = {nodepool.DISCOVERY_TAG: config.cluster_name} if config.karpenter_pools else None
        net = network(
            f"{name}-vpc",
            config.network,
            guarded,
            secret=lambda v: config.secret("network", v),
            private_tags=discovery,
        )
        key = secrets_key(f"{name}-secrets", guarded)
        self.cluster = cluster(f"{name}-eks", config, net, key=key, opts=guarded)
        self.system_nodes, gpu_pools = self._node_groups(name, config, net, sizes)
        self.gpu_pools = {pool.name: group for pool, group in gpu_pools}
        after_nodes = pulumi.ResourceOptions(parent=self, depends_on=[self.system_nodes])
        on_nodes = (config.cluster_name, config.kubernetes_version, after_nodes)
        self.pod_identity_agent = addons.addon(f"{name}-pod-identity", addons.POD_IDENTITY_AGENT, *on_nodes)
        addons.addon(f"{name}-coredns", addons.COREDNS, *on_nodes)

        self.kubeconfig = pulumi.Output.secret(self.cluster.kubeconfig_json)
        self.provider = k8s.Provider(
            f"{name}-k8s", kubeconfig=self.kubeconfig, opts=pulumi.ResourceOptions(parent=self)
        )
        after_pools = list(self.gpu_pools.values())
        on_cluster = pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=after_pools)
        _, self.device_plugin = device_plugin(
            "nvidia-device-plugin", config.device_plugin, config.contract, on_cluster
        )
        self._scalers(config, net, gpu_pools)
        # Teams' GPU quotas (infra/platform/kueue.py): only with teams:, on the system nodes.
        on_system = pulumi.ResourceOptions(
            parent=self, provider=self.provider, depends_on=[self.system_nodes]
        )
        self.kueue = kueue("kueue", config, on_system)
        # GPU metrics, node health for auto-repair, dashboard and alarms (infra/platform/observability.py).
        observability(name, config, pod_identity_agent=self.pod_identity_agent, opts=after_nodes)
        self.register_outputs({"kubeconfig": self.kubeconfig})

    def _scalers(
        self, config: PlatformConfig, net: Network, gpu_pools: list[tuple[Pool, aws.eks.NodeGroup]]
    ) -> None:
        """Cluster Autoscaler for the node group pools, Karpenter for its own: each only if it has pools."""
        after_pools = [group for _, group in gpu_pools]
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=[self.system_nodes])
        if config.autoscaler.enabled and config.node_group_pools:  # Karpenter pools are never its business
            autoscaler(
                "cluster-autoscaler",
                config,
                [(pool, group) for pool, group in gpu_pools if pool in config.node_group_pools],
                pod_identity_agent=self.pod_identity_agent,
                opts=pulumi.ResourceOptions(parent=self, depends_on=after_pools),
                k8s_opts=k8s_opts,
            )
        if config.karpenter_pools:
            karpenter(
                "karpenter",
                config,
                net,
                pod_identity_agent=self.pod_identity_agent,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.cluster]),
                k8s_opts=k8s_opts,
            )

    def _node_groups(
        self, name: str, config: PlatformConfig, net: Network, sizes: dict[str, int]
    ) -> tuple[aws.eks.NodeGroup, list[tuple[Pool, aws.eks.NodeGroup]]]:
        """The system group, and each GPU pool with its node group: created after the cluster and the role's
        policy attachments, deleted before them."""
        role, attachments = node_role(f"{name}-node", pulumi.ResourceOptions(parent=self))
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[self.cluster, *attachments])
        common = {
            "cluster_name": config.cluster_name,
            "node_role_arn": role.arn,
            "subnet_ids": net.private_subnet_ids,
            "kubernetes_version": config.kubernetes_version,
            "opts": after_cluster,
        }
        system_nodes = managed_node_group(
            f"{name}-system",
            node_group_name_prefix="system-",
            ami_type=SYSTEM_AMI_TYPE,
            group=config.system_nodes,
            labels=dict(node_pools.SYSTEM_LABELS),
            **common,
        )
        contract = config.contract
        gpu_pools = [
            (
                pool,
                managed_node_group(
                    f"{name}-gpu-{pool.name}",
                    node_group_name_prefix=pool_sizes.node_group_name_prefix(pool.name),
                    ami_type=GPU_AMI_TYPE,
                    group=pool.settings,
                    labels=node_pools.labels(contract, pool.contract),
                    taints=[contract.eks_taint()],
                    tags=node_pools.node_group_tags(pool.contract),
                    node_repair=pool.settings.node_repair,
                    desired_size=sizes[pool.name],  # never below what the pool runs now
                    kept=pool.settings.provisioner == "karpenter",  # keepNodeGroup: left as it was
                    **common,
                ),
            )
            for pool in config.pools_with_node_groups  # Karpenter pools have none, but while moving (karpenter.py)
        ]
        return system_nodes, gpu_pools
