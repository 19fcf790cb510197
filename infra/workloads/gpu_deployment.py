"""``GpuDeployment``: a Kubernetes Deployment whose pods land on GPU nodes and only there.

Thin over :mod:`infra.workloads.podspec`: the spec is read in Kubernetes' form
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

from infra.workloads.placement import DEFAULT_PLACEMENT, Placement, PlacementError
from infra.workloads.podspec import UNKNOWN, PodSpecError, check_gpus, known, place_deployment_spec
from infra.workloads.wire import has_outputs, to_wire

TYPE_TOKEN = "eks-gpu:index:GpuDeployment"

# Stand-in contract for the eager check when the real one is still an Output
# (read from a StackReference): no user spec mentions this key, so only the
# contract-independent checks (shape, containers, GPU counts) can fail on it.
_UNRESOLVED_PLACEMENT = Placement(key="placement.unresolved/contract", value="unresolved")


@dataclass
class GpuDeploymentArgs:
    """What a ``kubernetes.apps.v1.Deployment`` takes, plus the GPU settings.

    ``spec`` and ``metadata`` take typed Args or plain dicts (camelCase or
    snake_case), and any value inside may be an Output.
    """

    spec: pulumi.Input[k8s.apps.v1.DeploymentSpecArgs | Mapping[str, Any]]
    metadata: pulumi.Input[k8s.meta.v1.ObjectMetaArgs | Mapping[str, Any]] | None = None
    gpus: int | None = None
    """GPUs per pod, given to the first container unless a container declares nvidia.com/gpu (default 1)."""
    placement: Placement | Mapping[str, str] | pulumi.Output[Any] | None = None
    """The contract; default ``GPU=true``. A dict or Output from a StackReference is fine."""
    security_defaults: bool = True
    """Fill restricted securityContext defaults the spec leaves out (user values always win)."""
    pod_disruption_budget: bool = True
    """Declare a PodDisruptionBudget (maxUnavailable 1) when replicas > 1."""
    rolling_update_defaults: bool = True
    """Default to maxSurge 0 / maxUnavailable 1 so an update needs no spare GPU node."""


def _placement(value: Placement | Mapping[str, str] | None) -> Placement:
    if value is None:
        return DEFAULT_PLACEMENT
    if isinstance(value, Placement):
        return value
    return Placement.from_dict(value)


class GpuDeployment(pulumi.ComponentResource):
    """A Deployment pinned to the GPU node group: nodeSelector, toleration and GPU limits always set."""

    deployment: k8s.apps.v1.Deployment
    pod_disruption_budget: k8s.policy.v1.PodDisruptionBudget | None
    name: pulumi.Output[str]
    namespace: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        args: GpuDeploymentArgs | None = None,
        opts: pulumi.ResourceOptions | None = None,
        **kwargs: Any,
    ) -> None:
        if args is not None and kwargs:
            raise TypeError("GpuDeployment: pass either args or keyword arguments, not both")
        if args is None:
            try:
                args = GpuDeploymentArgs(**kwargs)
            except TypeError as error:
                raise TypeError(f"GpuDeployment({resource_name!r}): {error}") from None
        placement_is_output = isinstance(args.placement, pulumi.Output)
        eager_spec = self._eager_check(resource_name, args, placement_is_output)

        super().__init__(TYPE_TOKEN, resource_name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        spec: pulumi.Input[dict[str, Any]]
        if not placement_is_output and not has_outputs(args.spec):
            spec = eager_spec  # all known: the eager result is the final spec (and costs no Outputs)
        else:
            placement_input = args.placement if placement_is_output else _placement(args.placement).to_dict()
            spec = pulumi.Output.all(
                pulumi.Output.from_input(args.spec), pulumi.Output.from_input(placement_input)
            ).apply(
                lambda both: place_deployment_spec(
                    to_wire(both[0], k8s.apps.v1.DeploymentSpecArgs),
                    _placement(both[1]),
                    args.gpus,
                    security_defaults=args.security_defaults,
                    rolling_update_defaults=args.rolling_update_defaults,
                )
            )
        self.deployment = k8s.apps.v1.Deployment(resource_name, metadata=args.metadata, spec=spec, opts=child)
        self.name = self.deployment.metadata.apply(lambda m: m.name)
        self.namespace = self.deployment.metadata.apply(lambda m: m.namespace or "default")

        self.pod_disruption_budget = None
        replicas = eager_spec.get("replicas", 1)
        if args.pod_disruption_budget and (not known(replicas) or replicas > 1):
            # Voluntary disruptions (drains, upgrades) take one GPU pod at a time.
            self.pod_disruption_budget = k8s.policy.v1.PodDisruptionBudget(
                resource_name,
                metadata={"namespace": self.deployment.metadata.apply(lambda m: m.namespace)},
                spec={
                    "maxUnavailable": 1,
                    "selector": pulumi.Output.from_input(spec).apply(lambda s: s["selector"]),
                },
                opts=child,
            )
        self.register_outputs({"name": self.name, "namespace": self.namespace})

    @staticmethod
    def _eager_check(
        resource_name: str, args: GpuDeploymentArgs, placement_is_output: bool
    ) -> dict[str, Any]:
        """Run every check that known values allow, before anything is declared."""
        try:
            if args.gpus is not None:
                check_gpus(args.gpus)
            placement = _UNRESOLVED_PLACEMENT if placement_is_output else _placement(args.placement)
            spec = to_wire(args.spec, k8s.apps.v1.DeploymentSpecArgs, unknown=UNKNOWN)
            if not known(spec):
                return {}
            return place_deployment_spec(
                spec,
                placement,
                args.gpus,
                security_defaults=args.security_defaults,
                rolling_update_defaults=args.rolling_update_defaults,
            )
        except (PodSpecError, PlacementError) as error:
            raise type(error)(f"GpuDeployment({resource_name!r}): {error}") from None


__all__ = ["TYPE_TOKEN", "GpuDeployment", "GpuDeploymentArgs", "has_outputs"]
