"""``GpuDeployment``: a Kubernetes Deployment whose pods land on GPU nodes and only there.

Thin over :mod:`infra.workloads.deployment`, with the steps every GPU component takes
(:mod:`infra.workloads.component`); adds a PodDisruptionBudget when there is more than one pod.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.workloads import component, images
from infra.workloads.deployment import place_deployment_checked
from infra.workloads.durations import duration_seconds
from infra.workloads.values import UNKNOWN, known

TYPE_TOKEN = "eks-gpu:index:GpuDeployment"
SPEC_ARGS = k8s.apps.v1.DeploymentSpecArgs


@dataclass(kw_only=True)
class GpuDeploymentArgs(component.GpuWorkloadArgs[k8s.apps.v1.DeploymentSpecArgs]):
    """What a ``kubernetes.apps.v1.Deployment`` takes, plus the GPU settings (:class:`GpuWorkloadArgs`)."""

    pod_disruption_budget: bool = True
    """Declare a PodDisruptionBudget (maxUnavailable 1) when replicas > 1 or not known yet."""
    rolling_update_defaults: bool = True
    """Default to maxSurge 0 / maxUnavailable 1 so an update needs no spare GPU node."""


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
            given = component.user_timeouts(args, opts)
            gpus, profile = component.gpu_settings(args)
            component.check_flag(args.pod_disruption_budget, "pod_disruption_budget")
            component.check_flag(args.rolling_update_defaults, "rolling_update_defaults")
        waits = component.child_timeouts(component.DEPLOYMENT_TIMEOUT, given)
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

        super().__init__(TYPE_TOKEN, resource_name, None, opts)
        spec = component.place_final(owner, args, SPEC_ARGS, place, eager)
        self.deployment = k8s.apps.v1.Deployment(
            resource_name,
            metadata=component.child_metadata(args.metadata),
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, custom_timeouts=waits),
        )
        self.name, self.namespace = component.name_and_namespace(self.deployment, resource_name)
        self.pod_disruption_budget = self._disruption_budget(resource_name, args, eager, spec)
        self.register_outputs({"name": self.name, "namespace": self.namespace})

    def _disruption_budget(
        self, resource_name: str, args: GpuDeploymentArgs, eager: Any, spec: Any
    ) -> k8s.policy.v1.PodDisruptionBudget | None:
        """Voluntary disruptions (drains, upgrades) take one GPU pod at a time, when there is more than one."""
        replicas = eager.get("replicas", 1) if known(eager) else UNKNOWN
        if not args.pod_disruption_budget or (known(replicas) and replicas <= 1):
            return None
        return k8s.policy.v1.PodDisruptionBudget(
            resource_name,
            metadata={"namespace": self.namespace},
            spec={
                "maxUnavailable": 1,
                "selector": pulumi.Output.from_input(spec).apply(lambda s: s["selector"]),
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
