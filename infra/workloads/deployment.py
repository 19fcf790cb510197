"""The Deployment spec around a placed pod template: pure, what ``GpuDeployment`` declares.

Besides placing the template it defaults the rollout so an update never needs a
spare GPU node, and the progress deadline to as long as Pulumi waits. The apps/v1
rules themselves are the API server's
(docs/decisions/0010-kubernetes-rules-stay-with-the-api-server.md).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.podspec import place_template, prepare
from infra.workloads.values import PodSpecError, check_counts, check_spec_fields, known

DEPLOYMENT_SPEC_FIELDS = frozenset(
    {
        "minReadySeconds",
        "paused",
        "progressDeadlineSeconds",
        "replicas",
        "revisionHistoryLimit",
        "selector",
        "strategy",
        "template",
    }
)

COUNTS_READ = ("minReadySeconds", "replicas")
"""The counts this package computes with (the progress deadline, the PodDisruptionBudget): whole numbers."""

# A rolling update that never needs a spare GPU node: take one pod down, then start one.
ROLLING_UPDATE_DEFAULTS: Mapping[str, Any] = {"maxSurge": 0, "maxUnavailable": 1}
# When the user forbids unavailability (maxUnavailable 0), the only way forward is one extra pod.
ZERO_UNAVAILABLE_SURGE = 1
PROGRESS_DEADLINE_SECONDS = 1800
"""The Deployment's ``progressDeadlineSeconds`` unless you set one: the same 30 minutes Pulumi waits.

The deadline does not decide ``pulumi up``: pulumi-kubernetes' Deployment await
(``provider/pkg/await/deployment.go``, ``processDeploymentEvent``) logs a
``Progressing=False`` condition such as ``ProgressDeadlineExceeded`` as a warning and
keeps waiting until its own timeout, and the controller flips the condition back to
``NewReplicaSetAvailable`` once the pods are available
(``pkg/controller/deployment/progress.go``). It decides what everyone else says:
``kubectl rollout status`` fails with "exceeded its progress deadline", GitOps health
checks and alerts on the condition report a failed rollout. Kubernetes' default of
600 s would have them (and a warning in ``pulumi up``) call a routine scale-up of the
GPU group from zero plus a 10 GB image pull failed while it is on schedule; as long
as Pulumi waits, they agree with Pulumi (``infra.workloads.component.DEPLOYMENT_TIMEOUT``).
``GpuDeployment`` uses the longer of its create and update timeouts when you set them.
"""
MIN_READY_MARGIN_SECONDS = 60
"""Beyond ``minReadySeconds``: a ready pod makes no recorded progress until it is available,
and the API requires ``progressDeadlineSeconds > minReadySeconds``."""


def _is_zero(value: Any) -> bool:
    """An int-or-percent that the API reads as 0 (``0`` or ``"0%"``)."""
    return (value == 0 and not isinstance(value, bool)) or (isinstance(value, str) and value.strip() == "0%")


def rolling_update(strategy: Any, defaults: bool = True) -> Any:
    """The rollout strategy with our defaults where the user left gaps (``defaults=False``: as given)."""
    if not defaults or not known(strategy) or not isinstance(strategy or {}, Mapping):
        return strategy
    given = strategy
    strategy = dict(strategy or {})
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return given  # Recreate: the user chose it; nothing to default
    user = strategy.get("rollingUpdate")
    if not known(user):
        return given
    user = dict(user or {})
    merged = dict(ROLLING_UPDATE_DEFAULTS)
    unavailable = user.get("maxUnavailable")
    if unavailable is not None and known(unavailable) and _is_zero(unavailable):
        merged["maxSurge"] = ZERO_UNAVAILABLE_SURGE
    merged.update(user)
    strategy["type"] = "RollingUpdate"
    strategy["rollingUpdate"] = merged
    return strategy


def place_deployment_checked(
    spec: Any,
    placement: Placement,
    gpus: int | None,
    *,
    pool: str | None,
    profile: str | None,
    rolling_update_defaults: bool,
    placement_known: bool = True,
    progress_deadline: int = PROGRESS_DEADLINE_SECONDS,
) -> dict[str, Any]:
    """The merge on Kubernetes' form with UNKNOWN allowed (what ``GpuDeployment`` calls)."""
    check_spec_fields(spec, "Deployment", DEPLOYMENT_SPEC_FIELDS)
    check_counts(spec, COUNTS_READ)
    if "selector" not in spec:  # GpuDeployment's PodDisruptionBudget copies it
        raise PodSpecError("spec.selector is required: a Deployment selects its pods by label")
    result = copy.deepcopy(dict(spec))
    template = place_template(
        result, "Deployment", placement, gpus, pool=pool, profile=profile, placement_known=placement_known
    )
    if not known(template):
        return result
    result["template"] = template
    strategy = rolling_update(result.get("strategy"), rolling_update_defaults)
    if strategy is not None:
        result["strategy"] = strategy
    _progress_deadline(result, progress_deadline)
    return result


def _progress_deadline(spec: dict[str, Any], default: int) -> None:
    """Default ``progressDeadlineSeconds`` to the rollout budget, and beyond ``minReadySeconds``.

    The API requires it to be greater than ``minReadySeconds`` (``ValidateDeploymentSpec``)
    and defaults it to 600 when absent, so with a long ``minReadySeconds`` the default
    here grows beyond it rather than leaving the API's 600 to be refused.
    """
    deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds")
    if deadline is None and known(min_ready):
        spec["progressDeadlineSeconds"] = max(default, (min_ready or 0) + MIN_READY_MARGIN_SECONDS)


def place_deployment_spec(
    spec: Any,
    placement: Placement | Mapping[str, Any] = DEFAULT_PLACEMENT,
    gpus: int | None = None,
    *,
    pool: str | None = None,
    security_profile: str | None = None,
    rolling_update_defaults: bool = True,
) -> dict[str, Any]:
    """Check that ``spec`` is a Deployment spec and place its pod template on GPU nodes.

    Takes camelCase or snake_case dicts or ``k8s.apps.v1.DeploymentSpecArgs``;
    returns Kubernetes' camelCase form.
    """
    from pulumi_kubernetes.apps.v1 import DeploymentSpecArgs

    wire, placed_on, gpus, profile = prepare(
        spec, DeploymentSpecArgs, "place_deployment_spec", placement, gpus, security_profile
    )
    return place_deployment_checked(
        wire, placed_on, gpus, pool=pool, profile=profile, rolling_update_defaults=rolling_update_defaults
    )
