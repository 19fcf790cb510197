"""The Deployment spec around a placed pod template: pure, what ``GpuDeployment`` declares."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from pulumi_kubernetes.apps.v1 import DeploymentSpecArgs

from infra.workloads import sdk
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.podspec import check_selector_matches, place_template, prepare
from infra.workloads.values import PodSpecError, check_counts, check_spec_fields, known


@functools.cache
def deployment_spec_fields() -> frozenset[str]:
    """The fields of ``kubernetes.apps.v1.Deployment``'s spec, as pulumi-kubernetes knows them.

    Read from the SDK's tables on first use, not at import (:mod:`infra.workloads.sdk`).
    """
    return frozenset(sdk.input_type_py_to_pulumi_names(DeploymentSpecArgs).values())


COUNTS_READ = ("minReadySeconds", "replicas")
"""The counts this package computes with (the progress deadline, the PodDisruptionBudget): whole numbers."""

# A rolling update that never needs a spare GPU node: take one pod down, then start one.
ROLLING_UPDATE_DEFAULTS: Mapping[str, Any] = {"maxSurge": 0, "maxUnavailable": 1}
# When the user forbids unavailability (maxUnavailable 0), the only way forward is one extra pod.
ZERO_UNAVAILABLE_SURGE = 1
PROGRESS_DEADLINE_SECONDS = 1800
"""``progressDeadlineSeconds`` unless you set one: as long as Pulumi waits (``component.DEPLOYMENT_TIMEOUT``);
why: docs/components.md, the ``waits`` row (rollout status and health checks agree with Pulumi)."""
MIN_READY_MARGIN_SECONDS = 60
"""Beyond ``minReadySeconds``, which the API requires the deadline to exceed."""


def _is_zero(value: Any) -> bool:
    """An int-or-percent that the API reads as 0 (``0`` or ``"0%"``)."""
    return (value == 0 and not isinstance(value, bool)) or (isinstance(value, str) and value.strip() == "0%")


def rolling_update(strategy: Any, defaults: bool = True) -> Any:
    """The rollout strategy with our defaults where the user left gaps (``defaults=False``: as given)."""
    if not defaults or not known(strategy) or not isinstance(strategy or {}, Mapping):
        return strategy
    user = (strategy or {}).get("rollingUpdate")
    if (strategy or {}).get("type", "RollingUpdate") != "RollingUpdate" or not known(user):
        return strategy  # Recreate (the user chose it), or not known yet
    merged = dict(ROLLING_UPDATE_DEFAULTS)
    if _is_zero((user or {}).get("maxUnavailable")):
        merged["maxSurge"] = ZERO_UNAVAILABLE_SURGE
    return {**(strategy or {}), "type": "RollingUpdate", "rollingUpdate": {**merged, **(user or {})}}


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
    check_spec_fields(spec, "Deployment", deployment_spec_fields())
    check_counts(spec, COUNTS_READ)
    if "selector" not in spec:  # GpuDeployment's PodDisruptionBudget copies it
        raise PodSpecError("spec.selector is required: a Deployment selects its pods by label")
    result = copy.deepcopy(dict(spec))
    template = place_template(
        result, placement, gpus, pool=pool, profile=profile, placement_known=placement_known
    )
    if not known(template):
        return result
    _check_selector(spec["selector"], template)
    result["template"] = template
    strategy = rolling_update(result.get("strategy"), rolling_update_defaults)
    if strategy is not None:
        result["strategy"] = strategy
    _progress_deadline(result, progress_deadline)
    return result


def _check_selector(selector: Any, template: Any) -> None:
    """An empty selector, or one that misses the pods: refused before a replacement deletes anything."""
    if known(selector) and isinstance(selector, Mapping):
        match, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
        if known(match) and known(expressions) and not match and not expressions:
            raise PodSpecError(
                "spec.selector is empty, which the API refuses for a Deployment (it would select every "
                "pod): set matchLabels to the template's labels"
            )
    check_selector_matches(selector, template, "Deployment")


def _progress_deadline(spec: dict[str, Any], default: int) -> None:
    """Default ``progressDeadlineSeconds`` to the rollout budget, and beyond ``minReadySeconds``."""
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
    """Check that ``spec`` is a Deployment spec and place its pod template on GPU nodes."""
    wire, placed_on, gpus, profile = prepare(
        spec, DeploymentSpecArgs, "place_deployment_spec", placement, gpus, security_profile
    )
    return place_deployment_checked(
        wire, placed_on, gpus, pool=pool, profile=profile, rolling_update_defaults=rolling_update_defaults
    )
