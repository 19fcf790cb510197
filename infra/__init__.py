"""GPU workloads on Amazon EKS, as Pulumi components.

The package is laid out by audience, and imports flow one way only:

- :mod:`infra.workloads` -- what ML teams' stacks import: the placement contract,
  the pure pod-spec merge and scheduling model, the components. Needs only
  ``pulumi`` and ``pulumi-kubernetes``.
- :mod:`infra.platform` -- what ``pulumi up`` of the platform builds (the
  ``platform`` extra: pulumi-aws, pulumi-eks, pulumi-awsx).
- :mod:`infra.tooling` -- the offline engine, manifests, preview and policy rules.

Consumers need only::

    from infra import GpuDeployment, GpuJob, Placement
"""

from __future__ import annotations

from infra import workloads
from infra.workloads import *  # noqa: F403  (the export list lives in infra.workloads, once)

__all__: list[str] = []
__all__ += workloads.__all__
