"""``GpuJob``: a Kubernetes Job (training, batch inference) whose pods land on GPU nodes and only there.

The same contract, refusals and security profiles as ``GpuDeployment``, over
:mod:`infra.workloads.job`. Pulumi waits for a Job to *complete*; the default
timeout covers a scale-up from zero, a large image pull and half an hour of
running (see :mod:`infra.workloads.component`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from infra.workloads import component, images
from infra.workloads.durations import duration_seconds
from infra.workloads.job import place_job_checked, replace_unready_wait
from infra.workloads.placement import Placement, PlacementError
from infra.workloads.podspec import check_gpus
from infra.workloads.security import check_profile
from infra.workloads.values import UNKNOWN, PodSpecError, known
from infra.workloads.wire import WireError, has_outputs, to_wire

TYPE_TOKEN = "eks-gpu:index:GpuJob"
SKIP_AWAIT = "pulumi.com/skipAwait"
"""pulumi-kubernetes' annotation: declare the Job and return without waiting for it to complete."""
REPLACE_UNREADY = "pulumi.com/replaceUnready"
"""pulumi-kubernetes' annotation: at every later ``pulumi up`` its Diff reads the live Job and replaces it
if it is not Complete (``provider/pkg/provider/provider.go``), failed or still running alike."""
REPLACE_ON_CHANGES = (
    "spec.completionMode",
    "spec.podFailurePolicy",
    "spec.backoffLimitPerIndex",
    "spec.managedBy",
    "spec.successPolicy",
)
"""Job fields the API makes immutable (``ValidateJobSpecUpdate``) that pulumi-kubernetes would patch in place.

pulumi-kubernetes replaces a Job only when ``completions``, ``parallelism``,
``selector`` or ``template`` change (``provider/pkg/provider/diff.go``); a change of
one of these would be sent as a patch and refused by the API server, leaving
``pulumi up`` stuck. ``replace_on_changes`` makes Pulumi replace the Job instead.
"""


@dataclass
class GpuJobArgs:
    """What a ``kubernetes.batch.v1.Job`` takes, plus the GPU settings.

    ``spec`` and ``metadata`` take typed Args or plain dicts (camelCase or
    snake_case), and any value inside may be an Output. The component also takes
    these args as a plain dict with camelCase or snake_case keys.
    """

    spec: pulumi.Input[k8s.batch.v1.JobSpecArgs | Mapping[str, Any]]
    metadata: pulumi.Input[k8s.meta.v1.ObjectMetaArgs | Mapping[str, Any]] | None = None
    gpus: int | None = None
    """GPUs per pod, given to the first container unless a container declares nvidia.com/gpu (default 1)."""
    placement: Placement | Mapping[str, Any] | pulumi.Output[Any] | None = None
    """The contract; default ``GPU=true``. A dict or Output from a StackReference is fine."""
    pool: str | None = None
    """Run only on this GPU pool (nodeSelector ``eks-gpu/pool``); it must be one the placement exports."""
    security_profile: str | None = None
    """``baseline`` (default; ``restricted`` when the spec already runs as non-root), ``restricted`` or ``none``."""
    wait_for_completion: bool = True
    """Wait in ``pulumi up`` until the Job completes; ``False`` adds ``pulumi.com/skipAwait: "true"``."""
    replace_unready: bool = False
    """Run a failed Job again: the next ``pulumi up`` replaces it (``pulumi.com/replaceUnready: "true"``).

    pulumi-kubernetes replaces any Job that is not Complete when a later ``pulumi up``
    diffs it, a running one too. So this needs ``spec.activeDeadlineSeconds`` (a plain
    number), no ``spec.suspend``, and ``wait_for_completion``; ``pulumi up`` then waits
    at least deadline + the pods' grace period + 2 minutes (the create and update
    timeouts default to that when longer than 60m; shorter ones of yours are refused),
    so when it stops waiting the Job has completed or failed and never runs on at the
    next ``pulumi up``. Still replaced while running: a Job whose ``pulumi up`` was
    interrupted, or one a queue (e.g. Kueue) held suspended. Without it a failed Job
    stays until its spec changes; each ``pulumi up`` waits on it again and reports the failure.
    """
    check_image_architecture: bool = True
    """Refuse images without a linux/arm64 build before anything is declared (``infra.workloads.images``)."""
    create_timeout: str | None = None
    """How long ``pulumi up`` waits for the create (a duration: "90m", "3h"); default 60m (JOB_TIMEOUT)."""
    update_timeout: str | None = None
    """How long ``pulumi up`` waits for an update; default 60m (JOB_TIMEOUT)."""
    delete_timeout: str | None = None
    """How long ``pulumi destroy`` waits for the deletion; default pulumi-kubernetes' own."""


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
        args = component.read_args(GpuJobArgs, "GpuJob", resource_name, args, kwargs)
        try:
            timeouts_given = component.user_timeouts(args, opts)
        except PodSpecError as error:
            raise PodSpecError(f"GpuJob({resource_name!r}): {error}") from None
        eager_spec = self._eager_check(resource_name, args)
        timeouts = _job_timeouts(resource_name, args, timeouts_given)
        args = images.check_workload_images(f"GpuJob({resource_name!r})", args, k8s.batch.v1.JobSpecArgs)
        metadata_in = args.metadata
        if not args.wait_for_completion and has_outputs(metadata_in):

            def _late_name_check(meta: Any) -> Any:
                try:
                    _refuse_fixed_name(meta)
                except PodSpecError as error:
                    raise PodSpecError(f"GpuJob({resource_name!r}): {error}") from None
                return meta

            metadata_in = pulumi.Output.from_input(metadata_in).apply(_late_name_check)
        try:
            metadata = component.with_annotations(
                metadata_in,
                {} if args.wait_for_completion else {SKIP_AWAIT: "true"},
                "wait_for_completion=False",
            )
            metadata = component.with_annotations(
                metadata,
                {REPLACE_UNREADY: "true"} if args.replace_unready else {},
                "replace_unready=True",
            )
        except PodSpecError as error:
            raise PodSpecError(f"GpuJob({resource_name!r}): {error}") from None

        super().__init__(TYPE_TOKEN, resource_name, None, opts)
        child = pulumi.ResourceOptions(
            parent=self,
            custom_timeouts=timeouts,
            replace_on_changes=_replace_on_changes(opts),
            # A replaced auto-named Job is created under a new name before the old one
            # is deleted: both would run, each holding its GPUs. Yours wins if you set it.
            delete_before_replace=(
                opts.delete_before_replace if opts and opts.delete_before_replace is not None else True
            ),
        )
        gpus = check_gpus(args.gpus) if args.gpus is not None else None
        profile = check_profile(args.security_profile)

        spec: pulumi.Input[dict[str, Any]]
        if known(eager_spec) and not has_outputs(args.placement) and not has_outputs(args.spec):
            spec = eager_spec
        else:
            spec = component.final_inputs(args.spec, args.placement, k8s.batch.v1.JobSpecArgs).apply(
                lambda both: _placed(resource_name, both[0], both[1], gpus, args.pool, profile)
            )
        self.job = k8s.batch.v1.Job(
            resource_name, metadata=component.child_metadata(metadata), spec=spec, opts=child
        )
        self.name = component.name_output(self.job, resource_name)
        self.namespace = component.namespace_output(self.job)
        self.register_outputs({"name": self.name, "namespace": self.namespace})

    @staticmethod
    def _eager_check(resource_name: str, args: GpuJobArgs) -> dict[str, Any] | Any:
        """Run every check that known values allow, before anything is declared.

        Returns the placed spec, or UNKNOWN when the whole spec is an Output.
        """
        try:
            gpus = check_gpus(args.gpus) if args.gpus is not None else None
            profile = check_profile(args.security_profile)
            component.check_flag(args.wait_for_completion, "wait_for_completion")
            component.check_flag(args.replace_unready, "replace_unready")
            _refuse_raw_replace_unready(args.metadata, args.replace_unready)
            if not args.wait_for_completion:
                _refuse_fixed_name(args.metadata)
                if args.replace_unready:
                    raise PodSpecError(
                        "replace_unready=True needs wait_for_completion=True: pulumi-kubernetes only learns "
                        "that a Job failed by waiting for it"
                    )
            placement, placement_known = component.eager_placement(args.placement)
            spec = component.wire_or_unknown(args.spec, k8s.batch.v1.JobSpecArgs)
            if not known(spec):
                return UNKNOWN
            return place_job_checked(
                spec, placement, gpus, pool=args.pool, profile=profile, placement_known=placement_known
            )
        except (PodSpecError, PlacementError, WireError) as error:
            raise type(error)(f"GpuJob({resource_name!r}): {error}") from None


def _job_timeouts(
    resource_name: str, args: GpuJobArgs, given: pulumi.CustomTimeouts | None
) -> pulumi.CustomTimeouts:
    """JOB_TIMEOUT, or with ``replace_unready`` long enough for the Job to finish or fail first."""
    if not args.replace_unready:
        return component.child_timeouts(component.JOB_TIMEOUT, given)
    try:
        wait = replace_unready_wait(component.wire_or_unknown(args.spec, k8s.batch.v1.JobSpecArgs))
        for operation in ("create", "update"):
            mine = getattr(given, operation, None) if given else None
            if mine and duration_seconds(mine) < wait:
                raise PodSpecError(
                    f"{operation}_timeout {mine!r} is shorter than replace_unready=True needs: at least {wait}s "
                    "(spec.activeDeadlineSeconds + the pods' grace period + 120 s), or a later pulumi up "
                    "could replace the Job while it still runs; drop it or make it longer"
                )
    except PodSpecError as error:
        raise PodSpecError(f"GpuJob({resource_name!r}): {error}") from None
    default = component.JOB_TIMEOUT
    if wait > duration_seconds(default):
        default = f"{math.ceil(wait / 60)}m"
    return component.child_timeouts(default, given)


def _refuse_raw_replace_unready(metadata: Any, replace_unready: bool) -> None:
    """The annotation written by hand would skip :func:`replace_unready_wait`'s guard: refused."""
    from pulumi_kubernetes.meta.v1 import ObjectMetaArgs

    wire = to_wire(metadata, ObjectMetaArgs, unknown=UNKNOWN) if metadata is not None else {}
    annotations = wire.get("annotations") if known(wire) and isinstance(wire, Mapping) else None
    value = (
        annotations.get(REPLACE_UNREADY) if known(annotations) and isinstance(annotations, Mapping) else None
    )
    if value == "true" and not replace_unready:
        raise PodSpecError(
            f"metadata.annotations[{REPLACE_UNREADY!r}] 'true': use replace_unready=True instead, which "
            "also makes sure pulumi-kubernetes can never replace the Job while it still runs; allowed here: "
            "'false' or unset"
        )


def _placed(
    resource_name: str,
    spec: Any,
    placement: Placement,
    gpus: int | None,
    pool: str | None,
    profile: str | None,
) -> dict[str, Any]:
    """The placed Job spec once its Outputs resolved, with the checks that needed them."""
    try:
        return place_job_checked(spec, placement, gpus, pool=pool, profile=profile)
    except PodSpecError as error:
        raise PodSpecError(f"GpuJob({resource_name!r}): {error}") from None


def _replace_on_changes(opts: pulumi.ResourceOptions | None) -> list[str]:
    """The user's ``replace_on_changes`` (given on the component) followed by the Job's immutable fields."""
    mine = list(opts.replace_on_changes or []) if opts else []
    return mine + [path for path in REPLACE_ON_CHANGES if path not in mine]


def _refuse_fixed_name(metadata: Any) -> None:
    """Refuse ``metadata.name`` beside ``wait_for_completion=False``.

    With ``pulumi.com/skipAwait`` pulumi-kubernetes does not wait for a delete
    either: when a change replaces the Job (delete first, as a fixed name
    requires), the create arrives while the old Job and its pods are still being
    deleted and fails with ``AlreadyExists``. An auto-named Job gets a new name.
    """
    from pulumi_kubernetes.meta.v1 import ObjectMetaArgs

    wire = to_wire(metadata, ObjectMetaArgs, unknown=UNKNOWN) if metadata is not None else {}
    if not known(wire) or not isinstance(wire, Mapping):
        return  # an Output as a whole: checked again when known (see GpuJob.__init__)
    if wire.get("name") is not None:
        raise PodSpecError(
            "wait_for_completion=False with a fixed metadata.name cannot be replaced: without waiting, "
            "the old Job is still being deleted when the new one is created (AlreadyExists). Drop "
            "metadata.name (Pulumi auto-names the Job from the resource name) or keep waiting"
        )


__all__ = ["REPLACE_ON_CHANGES", "REPLACE_UNREADY", "SKIP_AWAIT", "TYPE_TOKEN", "GpuJob", "GpuJobArgs"]
