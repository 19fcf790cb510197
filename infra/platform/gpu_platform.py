"""The GPU platform: network, cluster, system and GPU node groups, device plugin.

``GpuPlatform`` declares it all from a validated :class:`PlatformConfig`, as
children of one ``eks-gpu:index:GpuPlatform`` component; the root ``__main__.py`` only reads
config, calls it and exports what consumer stacks need.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from infra.platform.autoscaler import autoscaler
from infra.platform.cluster import cluster, secrets_key
from infra.platform.config import PlatformConfig
from infra.platform.device_plugin import device_plugin
from infra.platform.iam import node_role
from infra.platform.network import network
from infra.platform.node_group import managed_node_group

TYPE_TOKEN = "eks-gpu:index:GpuPlatform"
GPU_AMI_TYPE = "AL2023_ARM_64_NVIDIA"
SYSTEM_AMI_TYPE = "AL2023_ARM_64_STANDARD"


class GpuPlatform(pulumi.ComponentResource):
    """An EKS cluster whose GPU nodes take only pods that tolerate the contract's taint."""

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Production stacks refuse to delete what holds running workloads.
        guarded = pulumi.ResourceOptions(parent=self, protect=config.production)

        net = network(f"{name}-vpc", config.network, child)
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
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[self.cluster])
        role = node_role(f"{name}-node", child)

        self.system_nodes = managed_node_group(
            f"{name}-system",
            cluster_name=config.cluster_name,
            node_group_name_prefix="system-",
            node_role_arn=role.arn,
            subnet_ids=net.private_subnet_ids,
            kubernetes_version=config.kubernetes_version,
            ami_type=SYSTEM_AMI_TYPE,
            group=config.system_nodes,
            labels={"node-role": "system"},
            opts=after_cluster,
        )
        self.gpu_nodes = managed_node_group(
            f"{name}-gpu",
            cluster_name=config.cluster_name,
            node_group_name_prefix="gpu-",
            node_role_arn=role.arn,
            subnet_ids=net.private_subnet_ids,
            kubernetes_version=config.kubernetes_version,
            ami_type=GPU_AMI_TYPE,
            group=config.gpu_nodes,
            labels=config.placement.node_labels(),
            taints=[config.placement.eks_taint()],
            opts=pulumi.ResourceOptions.merge(
                after_cluster, pulumi.ResourceOptions(protect=config.production)
            ),
            # With the autoscaler on, it owns the desired size after creation.
            ignore_desired_size=config.autoscaler.enabled,
        )
        after_nodes = pulumi.ResourceOptions(parent=self, depends_on=[self.system_nodes])
        aws.eks.Addon(
            f"{name}-pod-identity",
            cluster_name=config.cluster_name,
            addon_name="eks-pod-identity-agent",
            opts=after_nodes,
        )
        aws.eks.Addon(
            f"{name}-coredns",
            cluster_name=config.cluster_name,
            addon_name="coredns",
            resolve_conflicts_on_create="OVERWRITE",  # take over the copy EKS bootstraps
            opts=after_nodes,
        )

        self.kubeconfig = pulumi.Output.secret(self.cluster.kubeconfig_json)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        on_cluster = pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=[self.gpu_nodes])
        self.device_plugin_namespace, self.device_plugin = device_plugin(
            "nvidia-device-plugin", config.device_plugin, config.placement, on_cluster
        )
        if config.autoscaler.enabled:
            autoscaler(
                "cluster-autoscaler",
                config.autoscaler,
                cluster_name=config.cluster_name,
                region=config.region,
                kubernetes_version=config.kubernetes_version,
                placement=config.placement,
                gpu_instance_types=config.gpu_nodes.instance_types,
                gpu_asg_name=self.gpu_nodes.resources.apply(lambda r: r[0].autoscaling_groups[0].name),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.gpu_nodes]),
                k8s_opts=pulumi.ResourceOptions(
                    parent=self, provider=self.provider, depends_on=[self.system_nodes]
                ),
            )
        self.register_outputs({"kubeconfig": self.kubeconfig})
