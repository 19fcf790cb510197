"""``GpuJob``: a Kubernetes Job (training, batch inference) whose pods land on GPU nodes and only there.

``GpuDeployment``'s guarantees over :mod:`infra.workloads.job`; Pulumi waits for a Job to *complete*
(docs/components.md, "Jobs: GpuJob" and "Long waits").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.workloads import child_options, component, images
from infra.workloads.durations import duration_seconds
from infra.workloads.job import place_job_checked, replace_unready_wait
from infra.workloads.placement import Placement
from infra.workloads.podspec import as_placement
from infra.workloads.queues import MIN_PARALLELISM, PRIORITY_LABEL, QUEUE_LABEL, QueueSettings
from infra.workloads.values import UNKNOWN, PodSpecError, known
from infra.workloads.wire import has_outputs, to_wire

TYPE_TOKEN = "eks-gpu:index:GpuJob"
SPEC_ARGS = k8s.batch.v1.JobSpecArgs
SKIP_AWAIT = "pulumi.com/skipAwait"
"""pulumi-kubernetes' annotation: declare the Job and return without waiting for it to complete."""
REPLACE_UNREADY = "pulumi.com/replaceUnready"
"""pulumi-kubernetes' annotation: a later ``pulumi up`` replaces the Job if it is not Complete, running or not."""
WAIT_FOR = "pulumi.com/waitFor"
"""pulumi-kubernetes' annotation: wait for this condition instead of completion (``metadata/overrides.go``)."""
REPLACE_ON_CHANGES = (
    "spec.completionMode",
    "spec.podFailurePolicy",
    "spec.backoffLimitPerIndex",
    "spec.managedBy",
    "spec.successPolicy",
)
"""Job fields the API refuses to patch (``ValidateJobSpecUpdate``) that pulumi-kubernetes would patch in place:
changing one replaces the Job instead of leaving ``pulumi up`` stuck on the API's refusal."""
QUEUE_WAIT_MINUTES = 180
"""What a queued Job's wait adds to JOB_TIMEOUT for its time in the queue (why: decision 0099, "Waits")."""
PARALLELISM = "spec.parallelism"
"""Kueue's to set with partial admission, so ignored after create (why: docs/teams.md, "Partial admission")."""
QUEUED_JOB_TIMEOUT = f"{int(component.JOB_TIMEOUT.removesuffix('m')) + QUEUE_WAIT_MINUTES}m"


@dataclass(kw_only=True)
class GpuJobArgs(component.GpuWorkloadArgs[k8s.batch.v1.JobSpecArgs]):
    """What a ``kubernetes.batch.v1.Job`` takes, plus the GPU settings (:class:`GpuWorkloadArgs`)."""

    wait_for_completion: bool = True
    """Wait in ``pulumi up`` until the Job completes; ``False`` adds ``pulumi.com/skipAwait: "true"``."""
    queue: str | None = None
    """Submit the Job to Kueue through this LocalQueue of its namespace (each team's is ``default``): Kueue
    admits it when the team's GPU quota allows (label ``kueue.x-k8s.io/queue-name``; docs/teams.md)."""
    priority: str | None = None
    """With ``queue``: its Kueue priority class (``low``, ``normal``, ``high``); default the team's."""
    min_parallelism: int | None = None
    """With ``queue``: let Kueue start it with this many pods or more (partial admission; the team's opt-in)."""
    replace_unready: bool = False
    """Run a failed Job again: the next ``pulumi up`` replaces it (``pulumi.com/replaceUnready: "true"``).

    Needs ``spec.activeDeadlineSeconds`` (a plain number), no ``spec.suspend`` and
    ``wait_for_completion``, and waits at least deadline + grace period + 2 minutes, so a
    running Job is never replaced (docs/components.md, "Jobs: GpuJob").
    """


class GpuJob(pulumi.ComponentResource):
    """A Job pinned to the GPU node group: nodeSelector, toleration and GPU limits always set."""

    job: k8s.batch.v1.Job
    name: pulumi.Output[str]
    namespace: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        args: GpuJobArgs | Mapping[str, Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
        **kwargs: Any,
    ) -> None:
        owner = f"GpuJob({resource_name!r})"
        args = component.read_args(GpuJobArgs, owner, args, kwargs)
        with component.refusals(owner):
            child_options.refuse_unsupported(opts)
            timeouts_given = component.user_timeouts(args, opts)
            gpus, profile = component.gpu_settings(args)
            _check_job_settings(args)
            queued = QueueSettings(args.queue, args.priority, args.min_parallelism).check(
                replace_unready=args.replace_unready
            )

        place = functools.partial(_place_queued, queued, gpus=gpus, pool=args.pool, profile=profile)
        eager = component.place_now(owner, args, SPEC_ARGS, place)
        with component.refusals(owner):
            timeouts = _job_timeouts(args, timeouts_given)
        metadata = _job_metadata(owner, args, component.late_timeout_check(timeouts_given.annotated))
        metadata = _queued_metadata(owner, queued, metadata, args)
        args = images.check_workload_images(owner, args, SPEC_ARGS)

        super().__init__(TYPE_TOKEN, resource_name, None, child_options.for_component(opts))
        child = pulumi.ResourceOptions(
            parent=self,
            custom_timeouts=timeouts,
            # A replaced auto-named Job is created under a new name before the old one
            # is deleted: both would run, each holding its GPUs. Yours wins if you set it.
            **child_options.for_main_child(
                opts,
                replace_on_changes=REPLACE_ON_CHANGES,
                delete_before_replace=True,
                ignore_changes=[PARALLELISM] if args.min_parallelism is not None else [],
            ),
        )
        self.job = k8s.batch.v1.Job(
            resource_name,
            metadata=metadata,
            spec=component.place_final(owner, args, SPEC_ARGS, place, eager),
            opts=child,
        )
        self.name, self.namespace = component.name_and_namespace(self.job, resource_name)
        self.register_outputs({"name": self.name, "namespace": self.namespace})


def _check_job_settings(args: GpuJobArgs) -> None:
    """The Job's own settings, and what they need of each other (``metadata``: :func:`_check_job_annotations`)."""
    component.check_flag(args.wait_for_completion, "wait_for_completion")
    component.check_flag(args.replace_unready, "replace_unready")
    if args.replace_unready and not args.wait_for_completion:
        raise PodSpecError(
            "replace_unready=True needs wait_for_completion=True: pulumi-kubernetes only learns "
            "that a Job failed by waiting for it"
        )


def _job_timeouts(args: GpuJobArgs, user: component.UserTimeouts) -> pulumi.CustomTimeouts:
    """JOB_TIMEOUT, or with ``replace_unready`` long enough for the Job to finish or fail first."""
    given = user.timeouts
    if not args.replace_unready:
        default = QUEUED_JOB_TIMEOUT if args.queue is not None else component.JOB_TIMEOUT
        return component.child_timeouts(default, given)
    wait = replace_unready_wait(to_wire(args.spec, SPEC_ARGS, unknown=UNKNOWN))
    for operation in ("create", "update"):
        mine = getattr(given, operation, None) if given else None
        if mine and duration_seconds(mine) < wait:
            setting = user.given_by[operation]
            raise PodSpecError(
                f"{setting} {mine!r} is shorter than replace_unready=True needs: at least {wait}s "
                "(spec.activeDeadlineSeconds + the pods' grace period + 120 s), or a later pulumi up "
                "could replace the Job while it still runs; drop it or make it longer"
            )
    longest = max(component.JOB_TIMEOUT, f"{math.ceil(wait / 60)}m", key=duration_seconds)
    return component.child_timeouts(longest, given)


def _job_metadata(owner: str, args: GpuJobArgs, timeout_check: component.Check) -> Any:
    """The Job's metadata with the annotation its settings mean (replaceUnready or skipAwait), checked."""
    checks = [timeout_check, functools.partial(_check_job_annotations, args)]
    annotate = None if args.wait_for_completion else (SKIP_AWAIT, "wait_for_completion=False")
    if args.replace_unready:  # which needs wait_for_completion (_check_job_settings)
        annotate = (REPLACE_UNREADY, "replace_unready=True")
    return component.checked_metadata(owner, args.metadata, checks, annotate)


def _check_job_annotations(args: GpuJobArgs, metadata: Mapping[str, Any]) -> None:
    """The user's own ``replaceUnready``, ``skipAwait`` and ``waitFor`` annotations, beside what the settings
    need: which are refused where, and why, docs/components.md "Jobs: GpuJob"."""
    if not args.wait_for_completion:
        _refuse_fixed_name(metadata)
    annotations = metadata.get("annotations")
    if not known(annotations) or not isinstance(annotations, Mapping):
        return  # checked again once known
    if not args.replace_unready and annotations.get(REPLACE_UNREADY) == "true":
        raise PodSpecError(
            f"metadata.annotations[{REPLACE_UNREADY!r}] 'true': use replace_unready=True instead, which "
            "also makes sure pulumi-kubernetes can never replace the Job while it still runs; allowed here: "
            "'false' or unset"
        )
    skip = annotations.get(SKIP_AWAIT)
    skips = skip == "true" or not known(skip)
    if args.replace_unready and skips and SKIP_AWAIT in annotations:
        raise PodSpecError(
            f"metadata.annotations[{SKIP_AWAIT!r}] {skip!r} beside replace_unready=True: pulumi up would return "
            "before the Job ends, and a later pulumi up would replace it while it still runs "
            "(pulumi-kubernetes replaces any Job that is not Complete); drop the annotation, or replace_unready"
        )
    if WAIT_FOR in annotations and (args.replace_unready or not args.wait_for_completion):
        setting = "replace_unready=True" if args.replace_unready else "wait_for_completion=False"
        why = (
            "it replaces the wait for completion, so pulumi up could return while the Job still runs and a "
            "later pulumi up would replace the running Job"
            if args.replace_unready
            else "pulumi-kubernetes ignores it under pulumi.com/skipAwait"
        )
        raise PodSpecError(
            f"metadata.annotations[{WAIT_FOR!r}] beside {setting}: {why}; drop the annotation, or {setting}"
        )
    if skips and SKIP_AWAIT in annotations:
        _refuse_fixed_name(metadata)


def _refuse_fixed_name(metadata: Mapping[str, Any]) -> None:
    """Refuse ``metadata.name`` beside ``pulumi.com/skipAwait: "true"``, whoever set it: a replacement under
    the same name would fail with ``AlreadyExists`` (docs/components.md, "Long waits")."""
    if metadata.get("name") is not None:
        raise PodSpecError(
            "wait_for_completion=False (pulumi.com/skipAwait: 'true') with a fixed metadata.name cannot be "
            "replaced: without waiting, the old Job is still being deleted when the new one is created "
            "(AlreadyExists). Drop metadata.name (Pulumi auto-names the Job from the resource name) or keep "
            "waiting"
        )


def _place_queued(queued: QueueSettings, spec: Any, placement: Any, **kwargs: Any) -> dict[str, Any]:
    """The Job's placement, after what Kueue asks of a queued Job's spec."""
    if known(spec) and isinstance(spec, Mapping):
        queued.check_spec(spec)
    return place_job_checked(spec, placement, **kwargs)


def _queued_metadata(owner: str, queued: QueueSettings, metadata: Any, args: GpuJobArgs) -> Any:
    """``metadata`` with Kueue's labels and annotation, once the team is found in the contract's queues.

    Checked now on what is known; where the metadata or the contract is an Output, again once both
    resolve (the namespace decides the team), before the Job is registered.
    """

    def merge(meta: Any, placement: Any, final: bool) -> Any:
        with component.refusals(owner):
            wire = component.wire_metadata(meta)
            if not isinstance(wire, Mapping):
                return meta
            _refuse_hand_written(wire, queued)
            queues = as_placement(placement).queues if final or not has_outputs(placement) else None
            namespace = wire.get("namespace")
            if queued.queue is None:
                queued.check_unqueued(queues or (), namespace)
                return meta
            team = queued.team(queues, namespace, args.pool) if queues is not None else None
            labels, annotations = wire.get("labels"), wire.get("annotations")
            if not known(labels) or not known(annotations):
                return meta
            merged = {**wire, "labels": {**(labels or {}), **queued.labels(team)}}
            if queued.annotations():
                merged["annotations"] = {**(annotations or {}), **queued.annotations()}
            return merged

    eager = merge(metadata, args.placement, final=False)  # refuse before anything is declared
    if not has_outputs(metadata) and not has_outputs(args.placement):
        return eager
    placement = args.placement.to_dict() if isinstance(args.placement, Placement) else args.placement
    return pulumi.Output.all(pulumi.Output.from_input(metadata), pulumi.Output.from_input(placement)).apply(
        lambda both: merge(both[0], both[1], final=True)
    )


def _refuse_hand_written(wire: Mapping[str, Any], queued: QueueSettings) -> None:
    """Kueue's labels and annotation written by hand: ``queue``, ``priority`` and ``min_parallelism`` say them
    and bring their checks (a hand-written queue label would also slip past replace_unready's refusal)."""
    labels, annotations = wire.get("labels"), wire.get("annotations")
    given = {
        QUEUE_LABEL: ("queue", queued.queue, labels),
        PRIORITY_LABEL: ("priority", queued.priority, labels),
        MIN_PARALLELISM: ("min_parallelism", queued.min_parallelism, annotations),
    }
    for key, (setting, value, where) in given.items():
        if not known(where) or not isinstance(where, Mapping) or key not in where:
            continue
        if value is None or str(value) != where[key]:
            raise PodSpecError(
                f"metadata {key!r} {where[key]!r} written by hand: use {setting}= instead, which brings the "
                "checks that keep the Job admissible (and replace_unready off); remove it from metadata"
            )
