"""What ML teams' stacks import: the contract, the pure merge, the components."""

from __future__ import annotations

from infra.workloads.deployment import place_deployment_spec
from infra.workloads.gpu_deployment import GpuDeployment, GpuDeploymentArgs
from infra.workloads.gpu_job import GpuJob, GpuJobArgs
from infra.workloads.job import place_job_spec
from infra.workloads.placement import (
    DEFAULT_PLACEMENT,
    GPU_RESOURCE,
    POOL_LABEL,
    GpuPool,
    Placement,
    PlacementError,
)
from infra.workloads.podspec import PodSpecError, place_pod_spec
from infra.workloads.security import SECURITY_PROFILES

__all__ = [
    "DEFAULT_PLACEMENT",
    "GPU_RESOURCE",
    "POOL_LABEL",
    "SECURITY_PROFILES",
    "GpuDeployment",
    "GpuDeploymentArgs",
    "GpuJob",
    "GpuJobArgs",
    "GpuPool",
    "Placement",
    "PlacementError",
    "PodSpecError",
    "place_deployment_spec",
    "place_job_spec",
    "place_pod_spec",
]
