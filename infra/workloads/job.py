"""The Job spec around a placed pod template: pure, what ``GpuJob`` declares.

Training and batch inference run to completion. Besides placing the template it
refuses what the batch/v1 API refuses, so a bad Job fails before ``pulumi up``
rather than after a GPU node was scaled up for it.
"""

from __future__ import annotations

import copy
import re
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
from infra.workloads.values import UNKNOWN, PodSpecError, check_counts, check_spec_fields, known

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
POD_REPLACEMENT_POLICIES = ("TerminatingOrFailed", "Failed")
DNS_LABEL_MAX = 63
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_COUNTS = ("activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "completions", "maxFailedIndexes")
_COUNTS += ("parallelism", "ttlSecondsAfterFinished")


REPLACE_UNREADY_MARGIN_SECONDS = 120
"""Beyond the deadline and the pods' grace period: the Job controller's reaction and the await's watch."""
DEFAULT_GRACE_SECONDS = 30
"""A pod's ``terminationGracePeriodSeconds`` when the template sets none (the API's default)."""


def replace_unready_wait(spec: Any) -> int:
    """Seconds ``pulumi up`` must wait on a Job so that, when it stops, the Job has completed or failed.

    pulumi-kubernetes' ``replaceUnready`` replaces a Job at a later ``pulumi up`` whenever
    the live Job is not Complete (``provider/pkg/provider/provider.go``, Diff: the
    JobChecker's ``Ready``), a running one too. A Job cannot outlive
    ``activeDeadlineSeconds`` (counted from its start; the controller then fails it,
    reason DeadlineExceeded, and marks it Failed once its pods have terminated), so a
    wait longer than deadline + grace period + margin only ever leaves a failed Job behind.
    """
    where = "replace_unready=True"
    if not known(spec) or not isinstance(spec, Mapping):
        raise PodSpecError(f"{where} needs the Job spec known when the program runs (not an Output)")
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is None or not known(deadline):
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
    return int(deadline) + _grace_seconds(spec) + REPLACE_UNREADY_MARGIN_SECONDS


def _grace_seconds(spec: Mapping[str, Any]) -> int:
    template = spec.get("template")
    pod = template.get("spec") if known(template) and isinstance(template, Mapping) else UNKNOWN
    grace = pod.get("terminationGracePeriodSeconds") if known(pod) and isinstance(pod, Mapping) else UNKNOWN
    if grace is None:
        return DEFAULT_GRACE_SECONDS
    if not known(grace) or not _whole(grace):
        raise PodSpecError(
            "replace_unready=True needs spec.template.spec.terminationGracePeriodSeconds unset or a plain "
            f"whole number of seconds (not an Output), got {grace!r}: it is part of how long pulumi up waits"
        )
    return grace


def _check_indexed(spec: Mapping[str, Any]) -> None:
    mode = spec.get("completionMode")
    if not known(mode):
        return
    if mode is not None and mode not in COMPLETION_MODES:
        raise PodSpecError(f"spec.completionMode must be one of {', '.join(COMPLETION_MODES)}, got {mode!r}")
    if mode == "Indexed":
        # No completions is fine: the API defaults completions and parallelism to 1
        # (pkg/apis/batch/v1/defaults.go SetDefaults_Job), as tests/cluster/test_api_refusals shows.
        if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
            raise PodSpecError(
                "spec.maxFailedIndexes needs spec.backoffLimitPerIndex (the API refuses it otherwise): "
                "failed indexes are only counted per index"
            )
        completions, most = spec.get("completions"), spec.get("maxFailedIndexes")
        if _whole(completions) and _whole(most) and most > completions:
            raise PodSpecError(
                f"spec.maxFailedIndexes ({most}) must be at most spec.completions ({completions}): "
                "the API refuses more"
            )
        return
    for field in ("backoffLimitPerIndex", "maxFailedIndexes", "successPolicy"):
        if spec.get(field) is not None:
            raise PodSpecError(
                f"spec.{field} needs spec.completionMode: Indexed (the API refuses it otherwise)"
            )


def _whole(value: Any) -> bool:
    return known(value) and isinstance(value, int) and not isinstance(value, bool)


def _check_replacement_policy(spec: Mapping[str, Any]) -> None:
    """``podReplacementPolicy``: one of two values, and only ``Failed`` beside a ``podFailurePolicy``."""
    policy = spec.get("podReplacementPolicy")
    if not known(policy) or policy is None:
        return
    if policy not in POD_REPLACEMENT_POLICIES:
        raise PodSpecError(
            f"spec.podReplacementPolicy must be one of {', '.join(POD_REPLACEMENT_POLICIES)}, got {policy!r}"
        )
    failure_policy = spec.get("podFailurePolicy")
    if failure_policy is not None and policy != "Failed":
        raise PodSpecError(
            f"spec.podReplacementPolicy {policy!r} beside spec.podFailurePolicy: the API accepts only "
            "'Failed' there; set it to Failed or remove it (it then defaults to Failed)"
        )


def check_indexed_job_name(name: Any, spec: Any) -> None:
    """An Indexed Job's last pod hostname, ``<name>-<completions - 1>``, must be a DNS label.

    The API checks it at create (``ValidateJob``): otherwise the controller could
    never create the last pods. Skipped when the name is not known (auto-named: the
    name gets a random 8-character suffix the check cannot see; or an Output).
    """
    if not isinstance(name, str) or not isinstance(spec, Mapping) or spec.get("completionMode") != "Indexed":
        return
    completions = spec.get("completions")
    completions = 1 if completions is None else completions  # the API's default
    if not _whole(completions) or completions <= 0:
        return
    hostname = f"{name}-{completions - 1}"
    if len(hostname) > DNS_LABEL_MAX or not _DNS_LABEL.match(hostname):
        raise PodSpecError(
            f"metadata.name {name!r}: an Indexed Job names its pods' hostnames <name>-<index>, and "
            f"{hostname!r} is not a valid DNS label (lowercase alphanumerics and '-', at most "
            f"{DNS_LABEL_MAX} characters); the API refuses the Job. Use a shorter name"
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
    if selector is not None and known(manual) and manual is not True:
        # Without manualSelector the API adds its generated controller-uid label to the
        # selector and refuses one that selects anything but the generated labels.
        raise PodSpecError(
            "spec.selector is only accepted with spec.manualSelector: true (the API generates a unique "
            "selector and refuses one of yours otherwise); remove spec.selector, or set manualSelector: true "
            "if you really manage the labels yourself"
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
    check_spec_fields(spec, "Job", JOB_SPEC_FIELDS)
    # All of them, activeDeadlineSeconds included, are ValidateNonnegativeField in
    # pkg/apis/batch/validation (its doc says "positive", the API accepts 0: a Job
    # that is past its deadline at once).
    check_counts(spec, _COUNTS)
    _check_indexed(spec)
    _check_replacement_policy(spec)
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
) -> dict[str, Any]:
    """Check that ``spec`` is a Job spec and place its pod template on GPU nodes.

    Takes camelCase or snake_case dicts or ``k8s.batch.v1.JobSpecArgs``; returns
    Kubernetes' camelCase form. ``restartPolicy`` defaults to Never.
    """
    from pulumi_kubernetes.batch.v1 import JobSpecArgs

    if gpus is not None:
        gpus = check_gpus(gpus)
    profile = security.check_profile(security_profile)
    wire = to_kubernetes_form(spec, JobSpecArgs, "spec", "place_job_spec")
    return place_job_checked(wire, as_placement(placement), gpus, pool=pool, profile=profile)
