"""The platform program: read config, build the GPU platform, export what consumers read."""

from __future__ import annotations

import pulumi

from infra.platform import config as platform_config
from infra.platform.gpu_platform import GpuPlatform

settings = platform_config.from_pulumi()
platform = GpuPlatform("gpu-platform", settings)

pulumi.export("clusterName", settings.cluster_name)
pulumi.export("kubeconfig", platform.kubeconfig)
# The contract with its pools: consumer stacks pass this to GpuDeployment(placement=...).
pulumi.export("placement", settings.contract.to_dict())
pulumi.export(
    "gpuNodeGroupNames", {pool: group.node_group_name for pool, group in platform.gpu_pools.items()}
)
pulumi.export("devicePluginRelease", platform.device_plugin.name)
pulumi.export("devicePluginNamespace", platform.device_plugin.namespace)
