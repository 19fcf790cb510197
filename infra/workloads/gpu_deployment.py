"""``GpuDeployment``: a Kubernetes Deployment whose pods land on GPU nodes and only there.

Thin over :mod:`infra.workloads.deployment`: the spec is read in Kubernetes' form
(:mod:`infra.workloads.wire`), checked eagerly so bad input fails before anything is
declared, and merged with the placement contract inside ``Output.apply`` so
Outputs unknown during preview are fine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.workloads import component, images
from infra.workloads.deployment import place_deployment_checked
from infra.workloads.durations import duration_seconds
from infra.workloads.placement import Placement, PlacementError
from infra.workloads.podspec import check_gpus
from infra.workloads.security import check_profile
from infra.workloads.values import UNKNOWN, PodSpecError, known
from infra.workloads.wire import WireError, has_outputs

TYPE_TOKEN = "eks-gpu:index:GpuDeployment"


@dataclass
class GpuDeploymentArgs:
    """What a ``kubernetes.apps.v1.Deployment`` takes, plus the GPU settings.

    ``spec`` and ``metadata`` take typed Args or plain dicts (camelCase or
    snake_case), and any value inside may be an Output. The component also takes
    these args as a plain dict with camelCase or snake_case keys.
    """

    spec: pulumi.Input[k8s.apps.v1.DeploymentSpecArgs | Mapping[str, Any]]
    metadata: pulumi.Input[k8s.meta.v1.ObjectMetaArgs | Mapping[str, Any]] | None = None
    gpus: int | None = None
    """GPUs per pod, given to the first container unless a container declares nvidia.com/gpu (default 1)."""
    placement: Placement | Mapping[str, Any] | pulumi.Output[Any] | None = None
    """The contract; default ``GPU=true``. A dict or Output from a StackReference is fine."""
    pool: str | None = None
    """Run only on this GPU pool (nodeSelector ``eks-gpu/pool``); it must be one the placement exports."""
    security_profile: str | None = None
    """``baseline`` (default; ``restricted`` when the spec already runs as non-root), ``restricted`` or ``none``."""
    pod_disruption_budget: bool = True
    """Declare a PodDisruptionBudget (maxUnavailable 1) when replicas > 1 or not known yet."""
    rolling_update_defaults: bool = True
    """Default to maxSurge 0 / maxUnavailable 1 so an update needs no spare GPU node."""
    check_image_architecture: bool = True
    """Refuse images without a linux/arm64 build before anything is declared (``infra.workloads.images``)."""
    create_timeout: str | None = None
    """How long ``pulumi up`` waits for the create (a duration: "90m", "3h"); default 30m (DEPLOYMENT_TIMEOUT)."""
    update_timeout: str | None = None
    """How long ``pulumi up`` waits for an update; default 30m (DEPLOYMENT_TIMEOUT)."""
    delete_timeout: str | None = None
    """How long ``pulumi destroy`` waits for the deletion; default pulumi-kubernetes' own."""


class GpuDeployment(pulumi.ComponentResource):
    """A Deployment pinned to the GPU node group: nodeSelector, toleration and GPU limits always set."""

    deployment: k8s.apps.v1.Deployment
    pod_disruption_budget: k8s.policy.v1.PodDisruptionBudget | None
    name: pulumi.Output[str]
    namespace: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        args: GpuDeploymentArgs | Mapping[str, Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
        **kwargs: Any,
    ) -> None:
        args = component.read_args(GpuDeploymentArgs, "GpuDeployment", resource_name, args, kwargs)
        try:
            timeouts_given = component.user_timeouts(args, opts)
        except PodSpecError as error:
            raise PodSpecError(f"GpuDeployment({resource_name!r}): {error}") from None
        # The controller's progress deadline as long as Pulumi waits: pulumi-kubernetes does not
        # fail on ProgressDeadlineExceeded, but kubectl rollout status and GitOps health checks do,
        # and they should not call a slow scale-up failed while Pulumi still waits for it
        # (infra.workloads.deployment.PROGRESS_DEADLINE_SECONDS).
        waits = component.child_timeouts(component.DEPLOYMENT_TIMEOUT, timeouts_given)
        deadline = max(
            int(duration_seconds(waits.create or component.DEPLOYMENT_TIMEOUT)),
            int(duration_seconds(waits.update or component.DEPLOYMENT_TIMEOUT)),
        ) or int(duration_seconds(component.DEPLOYMENT_TIMEOUT))  # opts we could not read
        eager_spec = self._eager_check(resource_name, args, deadline)
        args = images.check_workload_images(
            f"GpuDeployment({resource_name!r})", args, k8s.apps.v1.DeploymentSpecArgs
        )

        super().__init__(TYPE_TOKEN, resource_name, None, opts)
        child = pulumi.ResourceOptions(parent=self, custom_timeouts=waits)
        gpus = check_gpus(args.gpus) if args.gpus is not None else None
        profile = check_profile(args.security_profile)

        spec: pulumi.Input[dict[str, Any]]
        if known(eager_spec) and not has_outputs(args.placement) and not has_outputs(args.spec):
            spec = eager_spec  # all known: the eager result is the final spec (and costs no Outputs)
        else:
            spec = component.final_inputs(args.spec, args.placement, k8s.apps.v1.DeploymentSpecArgs).apply(
                lambda both: place_deployment_checked(
                    both[0],
                    both[1],
                    gpus,
                    pool=args.pool,
                    profile=profile,
                    rolling_update_defaults=args.rolling_update_defaults,
                    progress_deadline=deadline,
                )
            )
        self.deployment = k8s.apps.v1.Deployment(
            resource_name, metadata=component.child_metadata(args.metadata), spec=spec, opts=child
        )
        self.name = component.name_output(self.deployment, resource_name)
        self.namespace = component.namespace_output(self.deployment)

        self.pod_disruption_budget = None
        replicas = eager_spec.get("replicas", 1) if known(eager_spec) else UNKNOWN
        if args.pod_disruption_budget and (not known(replicas) or replicas > 1):
            # Voluntary disruptions (drains, upgrades) take one GPU pod at a time.
            self.pod_disruption_budget = k8s.policy.v1.PodDisruptionBudget(
                resource_name,
                metadata={"namespace": self.namespace},
                spec={
                    "maxUnavailable": 1,
                    "selector": pulumi.Output.from_input(spec).apply(lambda s: s["selector"]),
                },
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({"name": self.name, "namespace": self.namespace})

    @staticmethod
    def _eager_check(resource_name: str, args: GpuDeploymentArgs, deadline: int) -> dict[str, Any] | Any:
        """Run every check that known values allow, before anything is declared.

        Returns the placed spec, or UNKNOWN when the whole spec is an Output.
        """
        try:
            gpus = check_gpus(args.gpus) if args.gpus is not None else None
            profile = check_profile(args.security_profile)
            component.check_flag(args.pod_disruption_budget, "pod_disruption_budget")
            component.check_flag(args.rolling_update_defaults, "rolling_update_defaults")
            placement, placement_known = component.eager_placement(args.placement)
            spec = component.wire_or_unknown(args.spec, k8s.apps.v1.DeploymentSpecArgs)
            if not known(spec):
                return UNKNOWN
            return place_deployment_checked(
                spec,
                placement,
                gpus,
                pool=args.pool,
                profile=profile,
                rolling_update_defaults=args.rolling_update_defaults,
                placement_known=placement_known,
                progress_deadline=deadline,
            )
        except (PodSpecError, PlacementError, WireError) as error:
            raise type(error)(f"GpuDeployment({resource_name!r}): {error}") from None


__all__ = ["TYPE_TOKEN", "GpuDeployment", "GpuDeploymentArgs"]
