"""The Job spec around a placed pod template: pure, what ``GpuJob`` declares."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from pulumi_kubernetes.batch.v1 import JobSpecArgs

from infra.workloads import sdk
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.podspec import check_selector_matches, place_template, prepare
from infra.workloads.values import UNKNOWN, PodSpecError, as_whole, check_spec_fields, known

NOT_IN_SUPPORTED_KUBERNETES = frozenset({"scheduling"})
"""JobSpec fields pulumi-kubernetes' SDK has but no supported cluster (1.35, 1.36) knows: ``scheduling``
is alpha in Kubernetes 1.37 (WorkloadWithJob gate); sent to 1.35, server-side apply refuses the patch."""


@functools.cache
def job_spec_fields() -> frozenset[str]:
    """The fields of ``kubernetes.batch.v1.Job``'s spec, as pulumi-kubernetes and the supported clusters know them.

    Read from the SDK's tables on first use, not at import (:mod:`infra.workloads.sdk`).
    """
    return frozenset(sdk.input_type_py_to_pulumi_names(JobSpecArgs).values()) - NOT_IN_SUPPORTED_KUBERNETES


JOB_RESTART_POLICIES = ("Never", "OnFailure")
DEFAULT_JOB_RESTART_POLICY = "Never"
"""A failed pod is replaced by a new one (counted against backoffLimit) rather than restarted in place."""
REPLACE_UNREADY_MARGIN_SECONDS = 120
"""Beyond the deadline and the pods' grace period: the Job controller's reaction and the await's watch."""
DEFAULT_GRACE_SECONDS = 30
"""A pod's ``terminationGracePeriodSeconds`` when the template sets none (the API's default)."""


def replace_unready_wait(spec: Any) -> int:
    """Seconds ``pulumi up`` must wait on a Job so that, when it stops, the Job has completed or failed."""
    where = "replace_unready=True"
    if not known(spec) or not isinstance(spec, Mapping):
        raise PodSpecError(f"{where} needs the Job spec known when the program runs (not an Output)")
    deadline = as_whole(spec.get("activeDeadlineSeconds"))
    if deadline is None:
        raise PodSpecError(
            f"{where} needs spec.activeDeadlineSeconds, a plain number of seconds (not an Output): "
            "pulumi-kubernetes replaces any Job that is not Complete at a later pulumi up, a still "
            "running one too; with a deadline, pulumi up waits until the Job has completed or failed, "
            "so only a failed Job is ever replaced. Set it to the longest the Job may run (e.g. 7200)"
        )
    suspend = spec.get("suspend")
    if suspend is True or not known(suspend):
        raise PodSpecError(
            f"{where} with spec.suspend {suspend!r}: a suspended Job is not Complete and its deadline does not "
            "run, so every pulumi up would replace it; allowed: false or unset"
        )
    return deadline + _grace_seconds(spec) + REPLACE_UNREADY_MARGIN_SECONDS


def _grace_seconds(spec: Mapping[str, Any]) -> int:
    template = spec.get("template")
    pod = template.get("spec") if known(template) and isinstance(template, Mapping) else UNKNOWN
    grace = pod.get("terminationGracePeriodSeconds") if known(pod) and isinstance(pod, Mapping) else UNKNOWN
    if grace is None:
        return DEFAULT_GRACE_SECONDS
    if as_whole(grace) is None:
        raise PodSpecError(
            "replace_unready=True needs spec.template.spec.terminationGracePeriodSeconds unset or a plain "
            f"whole number of seconds (not an Output), got {grace!r}: it is part of how long pulumi up waits"
        )
    return as_whole(grace)


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
    check_spec_fields(spec, "Job", job_spec_fields())
    result = copy.deepcopy(dict(spec))
    template = place_template(
        result, placement, gpus, pool=pool, profile=profile, placement_known=placement_known
    )
    if known(template):
        pod = template.get("spec")  # without restartPolicy the API's default, Always, which no Job takes
        if isinstance(pod, Mapping) and pod.get("restartPolicy") is None:
            template = {**template, "spec": {**pod, "restartPolicy": DEFAULT_JOB_RESTART_POLICY}}
        _check_restart_and_selector(spec, template)
        result["template"] = template
    return result


def _check_restart_and_selector(spec: Mapping[str, Any], template: Mapping[str, Any]) -> None:
    """What the API refuses in these fields, refused before a replacement deletes the running Job."""
    pod = template.get("spec")
    policy = pod.get("restartPolicy") if known(pod) and isinstance(pod, Mapping) else UNKNOWN
    if known(policy) and policy not in JOB_RESTART_POLICIES:
        raise PodSpecError(
            f"spec.template.spec.restartPolicy {policy!r}: a Job's pods must use one of "
            f"{', '.join(JOB_RESTART_POLICIES)} (the API refuses Always for Jobs); remove it to get Never"
        )
    failure_policy = spec.get("podFailurePolicy")
    if known(failure_policy) and failure_policy is not None and known(policy) and policy != "Never":
        raise PodSpecError(
            f"spec.podFailurePolicy needs spec.template.spec.restartPolicy Never, not {policy!r} "
            "(the API refuses it otherwise)"
        )
    manual, selector = spec.get("manualSelector"), spec.get("selector")
    if manual is True and selector is None:
        raise PodSpecError(
            "spec.selector is required with spec.manualSelector: true; set it to the template's labels, "
            "or drop manualSelector and let Kubernetes generate a unique one"
        )
    if manual is True:  # without it the API adds its generated labels first (batch strategy.go), so it judges
        check_selector_matches(selector, template, "Job")


def place_job_spec(
    spec: Any,
    placement: Placement | Mapping[str, Any] = DEFAULT_PLACEMENT,
    gpus: int | None = None,
    *,
    pool: str | None = None,
    security_profile: str | None = None,
) -> dict[str, Any]:
    """Check that ``spec`` is a Job spec and place its pod template on GPU nodes."""
    wire, placed_on, gpus, profile = prepare(
        spec, JobSpecArgs, "place_job_spec", placement, gpus, security_profile
    )
    return place_job_checked(wire, placed_on, gpus, pool=pool, profile=profile)
