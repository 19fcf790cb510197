"""The Job spec around a placed pod template: pure, what ``GpuJob`` declares.

Training and batch inference run to completion. Besides placing the template it
refuses what the batch/v1 API refuses, so a bad Job fails before ``pulumi up``
rather than after a GPU node was scaled up for it.
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
from infra.workloads.values import PodSpecError, known

JOB_SPEC_FIELDS = frozenset(
    {
        "activeDeadlineSeconds",
        "backoffLimit",
        "backoffLimitPerIndex",
        "completionMode",
        "completions",
        "managedBy",
        "manualSelector",
        "maxFailedIndexes",
        "parallelism",
        "podFailurePolicy",
        "podReplacementPolicy",
        "selector",
        "successPolicy",
        "suspend",
        "template",
        "ttlSecondsAfterFinished",
    }
)
JOB_RESTART_POLICIES = ("Never", "OnFailure")
DEFAULT_JOB_RESTART_POLICY = "Never"
"""A failed pod is replaced by a new one (counted against backoffLimit) rather than restarted in place."""
COMPLETION_MODES = ("NonIndexed", "Indexed")
_COUNTS = ("activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "completions", "maxFailedIndexes")
_COUNTS += ("parallelism", "ttlSecondsAfterFinished")


def _check_counts(spec: Mapping[str, Any]) -> None:
    for field in _COUNTS:
        value = spec.get(field)
        if value is None or not known(value):
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        minimum = 1 if field == "activeDeadlineSeconds" else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise PodSpecError(f"spec.{field} must be a whole number >= {minimum}, got {spec[field]!r}")


def _check_indexed(spec: Mapping[str, Any]) -> None:
    mode = spec.get("completionMode")
    if not known(mode):
        return
    if mode is not None and mode not in COMPLETION_MODES:
        raise PodSpecError(f"spec.completionMode must be one of {', '.join(COMPLETION_MODES)}, got {mode!r}")
    if mode == "Indexed":
        if spec.get("completions") is None:
            raise PodSpecError(
                "spec.completions is required when spec.completionMode is Indexed: it is the number of indexes"
            )
        return
    for field in ("backoffLimitPerIndex", "maxFailedIndexes", "successPolicy"):
        if spec.get(field) is not None:
            raise PodSpecError(
                f"spec.{field} needs spec.completionMode: Indexed (the API refuses it otherwise)"
            )


def _restart_policy(template: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Jobs run pods to completion: Never (the default here) or OnFailure; Always is refused."""
    pod = template.get("spec")
    if not known(pod) or not isinstance(pod, Mapping):
        return
    policy = pod.get("restartPolicy")
    if not known(policy):
        return
    if policy is None:
        template["spec"] = {**pod, "restartPolicy": DEFAULT_JOB_RESTART_POLICY}
        policy = DEFAULT_JOB_RESTART_POLICY
    if policy not in JOB_RESTART_POLICIES:
        raise PodSpecError(
            f"spec.template.spec.restartPolicy {policy!r}: a Job's pods must use one of "
            f"{', '.join(JOB_RESTART_POLICIES)} (the API refuses Always for Jobs); remove it to get Never"
        )
    failure_policy = spec.get("podFailurePolicy")
    if known(failure_policy) and failure_policy is not None and policy != "Never":
        raise PodSpecError(
            f"spec.podFailurePolicy needs spec.template.spec.restartPolicy Never, not {policy!r} "
            "(the API refuses it otherwise)"
        )


def _check_selector(spec: Mapping[str, Any], template: Mapping[str, Any]) -> None:
    manual, selector = spec.get("manualSelector"), spec.get("selector")
    if known(manual) and manual is True and selector is None:
        raise PodSpecError(
            "spec.selector is required with spec.manualSelector: true; set it to the template's labels, "
            "or drop manualSelector and let Kubernetes generate a unique one"
        )
    if selector is not None:
        # Whether given or generated, the API requires the selector to match the template.
        check_selector_matches(selector, template.get("metadata"), "Job")


def place_job_checked(
    spec: Any,
    placement: Placement,
    gpus: int | None,
    *,
    pool: str | None,
    profile: str | None,
    placement_known: bool = True,
) -> dict[str, Any]:
    """The merge on Kubernetes' form with UNKNOWN allowed (what ``GpuJob`` calls)."""
    if not isinstance(spec, Mapping):
        raise PodSpecError(f"spec must be a Job spec (a mapping), got {type(spec).__name__}")
    unknown_fields = sorted(set(spec) - JOB_SPEC_FIELDS)
    if unknown_fields:
        raise PodSpecError(
            f"spec is not a Job spec: unknown field(s) {unknown_fields}; allowed: {sorted(JOB_SPEC_FIELDS)}"
        )
    _check_counts(spec)
    _check_indexed(spec)
    result = copy.deepcopy(dict(spec))
    template = place_template(
        result, "Job", placement, gpus, pool=pool, profile=profile, placement_known=placement_known
    )
    if not known(template):
        return result
    template = dict(template)
    _restart_policy(template, spec)
    _check_selector(spec, template)
    result["template"] = template
    return result


def place_job_spec(
    spec: Any,
    placement: Placement | Mapping[str, Any] = DEFAULT_PLACEMENT,
    gpus: int | None = None,
    *,
    pool: str | None = None,
    security_profile: str | None = None,
    security_defaults: bool | None = None,
) -> dict[str, Any]:
    """Check that ``spec`` is a Job spec and place its pod template on GPU nodes.

    Takes camelCase or snake_case dicts or ``k8s.batch.v1.JobSpecArgs``; returns
    Kubernetes' camelCase form. ``restartPolicy`` defaults to Never.
    """
    from pulumi_kubernetes.batch.v1 import JobSpecArgs

    if gpus is not None:
        gpus = check_gpus(gpus)
    profile = security.check_profile(security_profile, security_defaults)
    wire = to_kubernetes_form(spec, JobSpecArgs, "spec", "place_job_spec")
    return place_job_checked(wire, as_placement(placement), gpus, pool=pool, profile=profile)
