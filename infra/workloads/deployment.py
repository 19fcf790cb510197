"""The Deployment spec around a placed pod template: pure, what ``GpuDeployment`` declares.

Besides placing the template, it refuses what the apps/v1 API refuses (unknown
fields, a selector that misses the pods, a rollout that can never progress) and
defaults the rollout so an update never needs a spare GPU node.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from infra.workloads import security
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.podspec import (
    as_placement,
    check_gpus,
    check_selector_matches,
    place_template,
    to_kubernetes_form,
)
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

DEPLOYMENT_COUNTS = ("minReadySeconds", "progressDeadlineSeconds", "replicas", "revisionHistoryLimit")
"""Whole numbers >= 0 (``ValidateDeploymentSpec``: ``ValidateNonnegativeField`` for each)."""

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
    """The rollout strategy with our defaults where the user left gaps; a deadlocked one refused."""
    if not known(strategy) or not isinstance(strategy or {}, Mapping):
        return strategy
    given = strategy
    strategy = dict(strategy or {})
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return given  # Recreate: the user chose it; nothing to default
    user = strategy.get("rollingUpdate")
    if not known(user):
        return given
    user = dict(user or {})
    surge, unavailable = user.get("maxSurge"), user.get("maxUnavailable")
    if surge is not None and unavailable is not None and _is_zero(surge) and _is_zero(unavailable):
        raise PodSpecError(
            "spec.strategy.rollingUpdate: maxSurge and maxUnavailable are both 0, which the API refuses "
            "(the rollout could never progress); set maxUnavailable to 1 (no spare GPU needed) or maxSurge to 1"
        )
    if not defaults:
        return given
    merged = dict(ROLLING_UPDATE_DEFAULTS)
    if unavailable is not None and known(unavailable) and _is_zero(unavailable):
        merged["maxSurge"] = ZERO_UNAVAILABLE_SURGE
    merged.update(user)
    strategy["type"] = "RollingUpdate"
    strategy["rollingUpdate"] = merged
    return strategy


def _check_restart_policy(template: Any) -> None:
    pod = template.get("spec") if known(template) and isinstance(template, Mapping) else None
    policy = pod.get("restartPolicy") if known(pod) and isinstance(pod, Mapping) else None
    if known(policy) and policy not in (None, "Always"):
        raise PodSpecError(
            f"spec.template.spec.restartPolicy {policy!r}: a Deployment's pods must restart Always "
            "(the API refuses anything else); remove it, or use GpuJob for run-to-completion work"
        )


def _check_selector(selector: Any) -> None:
    if known(selector) and isinstance(selector, Mapping):
        match, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
        if known(match) and known(expressions) and not match and not expressions:
            raise PodSpecError(
                "spec.selector is empty, which the API refuses for a Deployment (it would select every "
                "pod): set matchLabels to the template's labels"
            )


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
    check_counts(spec, DEPLOYMENT_COUNTS)
    if "selector" not in spec:
        raise PodSpecError("spec.selector is required: a Deployment selects its pods by label")
    result = copy.deepcopy(dict(spec))
    _check_selector(spec["selector"])
    template = place_template(
        result, "Deployment", placement, gpus, pool=pool, profile=profile, placement_known=placement_known
    )
    if not known(template):
        return result
    check_selector_matches(spec["selector"], template.get("metadata"), "Deployment")
    _check_restart_policy(template)
    result["template"] = template
    strategy = rolling_update(result.get("strategy"), rolling_update_defaults)
    if strategy is not None:
        result["strategy"] = strategy
    _progress_deadline(result, progress_deadline)
    return result


def _progress_deadline(spec: dict[str, Any], default: int) -> None:
    """Default ``progressDeadlineSeconds`` to the rollout budget; refuse one the API refuses.

    The API requires it to be greater than ``minReadySeconds`` (``ValidateDeploymentSpec``)
    and defaults it to 600 when absent, so with a long ``minReadySeconds`` the default
    here grows beyond it rather than leaving the API's 600 to be refused.
    """
    deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds")
    if not known(deadline) or not known(min_ready):
        return
    min_ready = min_ready or 0
    if deadline is None:
        spec["progressDeadlineSeconds"] = max(default, min_ready + MIN_READY_MARGIN_SECONDS)
    elif deadline <= min_ready:
        raise PodSpecError(
            f"spec.progressDeadlineSeconds ({deadline}) must be greater than spec.minReadySeconds "
            f"({min_ready}): the API refuses it otherwise"
        )


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

    if gpus is not None:
        gpus = check_gpus(gpus)
    profile = security.check_profile(security_profile)
    wire = to_kubernetes_form(spec, DeploymentSpecArgs, "spec", "place_deployment_spec")
    return place_deployment_checked(
        wire,
        as_placement(placement),
        gpus,
        pool=pool,
        profile=profile,
        rolling_update_defaults=rolling_update_defaults,
    )
