"""What ML teams' stacks import: the contract, the pure merge, the components.

Depends on ``pulumi`` and ``pulumi-kubernetes`` only; nothing here imports
:mod:`infra.platform` or :mod:`infra.tooling`.
"""

from __future__ import annotations

from infra.workloads.gpu_deployment import GpuDeployment, GpuDeploymentArgs
from infra.workloads.placement import DEFAULT_PLACEMENT, GPU_RESOURCE, Placement, PlacementError
from infra.workloads.podspec import PodSpecError, place_deployment_spec, place_pod_spec

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
