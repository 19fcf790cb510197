"""The platform program: read config, build the GPU platform, export what consumers read."""

from __future__ import annotations

import pulumi

from infra.platform import config as platform_config
from infra.platform.gpu_platform import GpuPlatform

settings = platform_config.from_pulumi()
platform = GpuPlatform("gpu-platform", settings)

pulumi.export("clusterName", settings.cluster_name)
pulumi.export("kubeconfig", platform.kubeconfig)
pulumi.export("placement", settings.placement.to_dict())
pulumi.export("gpuNodeGroupName", platform.gpu_nodes.node_group_name)
pulumi.export("devicePluginRelease", platform.device_plugin.name)
pulumi.export("devicePluginNamespace", platform.device_plugin.namespace)
