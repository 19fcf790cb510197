"""``GpuDeployment``: a Kubernetes Deployment whose pods land on GPU nodes and only there."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.workloads import child_options, component, images
from infra.workloads.deployment import place_deployment_checked
from infra.workloads.durations import duration_seconds
from infra.workloads.values import UNKNOWN, PodSpecError, known

TYPE_TOKEN = "eks-gpu:index:GpuDeployment"
SPEC_ARGS = k8s.apps.v1.DeploymentSpecArgs
REPLICAS = "spec.replicas"
"""The Deployment's field an autoscaler owns: ignored in later updates with ``autoscaled`` (docs/decisions/0055)."""


@dataclass(kw_only=True)
class GpuDeploymentArgs(component.GpuWorkloadArgs[k8s.apps.v1.DeploymentSpecArgs]):
    """What a ``kubernetes.apps.v1.Deployment`` takes, plus the GPU settings (:class:`GpuWorkloadArgs`)."""

    pod_disruption_budget: bool = True
    """Declare a PodDisruptionBudget (maxUnavailable 1) when replicas > 1 or not known yet."""
    rolling_update_defaults: bool = True
    """Default to maxSurge 0 / maxUnavailable 1 so an update needs no spare GPU node."""
    autoscaled: bool = False
    """A HorizontalPodAutoscaler (or KEDA) owns ``spec.replicas``: yours, if given, is the count at create, and no
    later ``pulumi up`` sends it again, so the autoscaler's count stays; the PodDisruptionBudget is always declared."""


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
        owner = f"GpuDeployment({resource_name!r})"
        args = component.read_args(GpuDeploymentArgs, owner, args, kwargs)
        with component.refusals(owner):
            child_options.refuse_unsupported(opts)
            given = component.user_timeouts(args, opts)
            gpus, profile = component.gpu_settings(args)
            component.check_flag(args.pod_disruption_budget, "pod_disruption_budget")
            component.check_flag(args.rolling_update_defaults, "rolling_update_defaults")
            component.check_flag(args.autoscaled, "autoscaled")
            _check_ignore_changes(args, opts)
        metadata = component.checked_metadata(
            owner, args.metadata, [component.late_timeout_check(given.annotated)]
        )
        waits = component.child_timeouts(component.DEPLOYMENT_TIMEOUT, given.timeouts)
        # The progress deadline as long as Pulumi waits (deployment.PROGRESS_DEADLINE_SECONDS).
        deadline = int(max(duration_seconds(waits.create), duration_seconds(waits.update)))

        place = functools.partial(
            place_deployment_checked,
            gpus=gpus,
            pool=args.pool,
            profile=profile,
            rolling_update_defaults=args.rolling_update_defaults,
            progress_deadline=deadline,
        )
        eager = component.place_now(owner, args, SPEC_ARGS, place)
        args = images.check_workload_images(owner, args, SPEC_ARGS)

        super().__init__(TYPE_TOKEN, resource_name, None, child_options.for_component(opts))
        spec = component.place_final(owner, args, SPEC_ARGS, place, eager)
        main = child_options.for_main_child(opts, ignore_changes=[REPLICAS] if args.autoscaled else [])
        self.deployment = k8s.apps.v1.Deployment(
            resource_name,
            metadata=metadata,
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, custom_timeouts=waits, **main),
        )
        self.name, self.namespace = component.name_and_namespace(self.deployment, resource_name)
        self.pod_disruption_budget = self._disruption_budget(resource_name, args, eager, spec, opts)
        self.register_outputs({"name": self.name, "namespace": self.namespace})

    def _disruption_budget(
        self, resource_name: str, args: GpuDeploymentArgs, eager: Any, spec: Any, opts: Any
    ) -> k8s.policy.v1.PodDisruptionBudget | None:
        """Voluntary disruptions (drains, upgrades) take one GPU pod at a time, when there is (or may be) more than one."""
        replicas = eager.get("replicas", 1) if known(eager) and not args.autoscaled else UNKNOWN
        if not args.pod_disruption_budget or (known(replicas) and replicas <= 1):
            return None
        return k8s.policy.v1.PodDisruptionBudget(
            resource_name,
            metadata={"namespace": self.namespace},
            spec={
                "maxUnavailable": 1,
                "selector": pulumi.Output.from_input(spec).apply(lambda s: s["selector"]),
            },
            opts=pulumi.ResourceOptions(parent=self, **child_options.for_every_child(opts)),
        )


def _check_ignore_changes(args: GpuDeploymentArgs, opts: pulumi.ResourceOptions | None) -> None:
    """``ignore_changes`` reaches the Deployment; ``spec.replicas`` there is what ``autoscaled`` is for."""
    ignored = (opts.ignore_changes if opts else None) or []
    if REPLICAS in ignored and not args.autoscaled:
        raise PodSpecError(
            f"opts.ignore_changes {REPLICAS!r}: use autoscaled=True, which leaves spec.replicas to the "
            "HorizontalPodAutoscaler (or KEDA) the same way and also keeps the PodDisruptionBudget for when "
            "it scales out"
        )
