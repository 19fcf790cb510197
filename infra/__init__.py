"""GPU workloads on Amazon EKS, as Pulumi components.

Consumers need only::

    from infra import GpuDeployment, Placement

The platform program itself lives in :mod:`infra.platform`.
"""

from __future__ import annotations

from infra.gpu_deployment import GpuDeployment, GpuDeploymentArgs
from infra.placement import DEFAULT_PLACEMENT, GPU_RESOURCE, Placement, PlacementError
from infra.podspec import PodSpecError, place_deployment_spec, place_pod_spec

__all__ = [
    "DEFAULT_PLACEMENT",
    "GPU_RESOURCE",
    "GpuDeployment",
    "GpuDeploymentArgs",
    "Placement",
    "PlacementError",
    "PodSpecError",
    "place_deployment_spec",
    "place_pod_spec",
]
