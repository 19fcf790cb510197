"""GPU workloads on Amazon EKS, as Pulumi components."""

from __future__ import annotations

from infra import workloads
from infra.workloads import *  # noqa: F403  (the export list lives in infra.workloads, once)

__all__: list[str] = []
__all__ += workloads.__all__
