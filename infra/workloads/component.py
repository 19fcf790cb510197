"""What ``GpuDeployment`` and ``GpuJob`` share: their common args, reading them, the placement, timeouts, outputs.

One copy for both, so they behave alike for Python and for other languages served through the component
provider (args as a plain dict, camelCase keys, numbers as floats): decision 0015.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import pulumi
from pulumi_kubernetes.meta.v1 import ObjectMetaArgs

from infra.workloads.durations import go_duration_seconds
from infra.workloads.placement import Placement, PlacementError
from infra.workloads.podspec import as_placement, check_gpus
from infra.workloads.security import check_profile
from infra.workloads.values import UNKNOWN, PodSpecError, known
from infra.workloads.wire import WireError, has_outputs, to_wire

A = TypeVar("A")
SpecT = TypeVar("SpecT")


@dataclasses.dataclass
class GpuWorkloadArgs(Generic[SpecT]):
    """What every GPU component takes: its Kubernetes object's ``spec`` and ``metadata``, plus the GPU settings.

    The forms they and the args take (typed Args, camelCase or snake_case dicts, Outputs inside):
    docs/components.md. After ``spec`` all is keyword-only: each component adds its settings after these.
    """

    spec: pulumi.Input[SpecT | Mapping[str, Any]]
    _: dataclasses.KW_ONLY
    metadata: pulumi.Input[ObjectMetaArgs | Mapping[str, Any]] | None = None
    gpus: int | None = None
    """GPUs per pod, given to the first container unless a container declares nvidia.com/gpu (default 1)."""
    placement: Placement | Mapping[str, Any] | pulumi.Output[Any] | None = None
    """The contract; default ``GPU=true``. A dict or Output from a StackReference is fine."""
    pool: str | None = None
    """Run only on this GPU pool (nodeSelector ``eks-gpu/pool``); it must be one the placement exports."""
    security_profile: str | None = None
    """``baseline`` (default; ``restricted`` when the spec already runs as non-root), ``restricted`` or ``none``."""
    check_image_architecture: bool = True
    """Refuse images without a linux/arm64 build before anything is declared (``infra.workloads.images``)."""
    create_timeout: str | None = None
    """How long ``pulumi up`` waits for the create (a duration: "90m", "3h"); default 30m, for a GpuJob 60m."""
    update_timeout: str | None = None
    """How long ``pulumi up`` waits for an update; default 30m, for a GpuJob 60m (DEPLOYMENT/JOB_TIMEOUT)."""
    delete_timeout: str | None = None
    """How long ``pulumi destroy`` waits for the deletion; default pulumi-kubernetes' own."""


UNRESOLVED_PLACEMENT = Placement(key="placement.unresolved/contract", value="unresolved")
"""The contract the eager check uses while the real one is still an Output (see :func:`place_now`)."""

# How long Pulumi waits for one GPU pod from nothing (pulumi-kubernetes' default is 10
# minutes); each budget is explained in docs/components.md, "Long waits".
SCALE_UP_MINUTES = 10  # GPU pool at zero: autoscaler, boot and join, driver and device plugin
IMAGE_PULL_MINUTES = 15  # CUDA, PyTorch and vLLM images are 5-20 GB
STARTUP_MINUTES = 5  # model load until the readiness probe passes
JOB_RUN_MINUTES = 30  # a Job is awaited until it completes
DEPLOYMENT_TIMEOUT = f"{SCALE_UP_MINUTES + IMAGE_PULL_MINUTES + STARTUP_MINUTES}m"
"""Create and update of a GpuDeployment: 30m."""
JOB_TIMEOUT = f"{SCALE_UP_MINUTES + IMAGE_PULL_MINUTES + STARTUP_MINUTES + JOB_RUN_MINUTES}m"
"""Create and update of a GpuJob: 60m."""


def check_duration(value: object, setting: str) -> str | None:
    """A positive Go duration (``"45m"``, ``"1h30m"``), as the engine parses ``customTimeouts``; a negative
    or zero one, a bare number or ``"1d"`` would only fail at ``pulumi up``: refused here instead."""
    if value is None:
        return None
    seconds = go_duration_seconds(value) if isinstance(value, str) else None
    if not seconds or seconds <= 0:
        raise PodSpecError(
            f'{setting} must be a positive duration such as "45m", "2h" or "1h30m" '
            f"(units h, m, s, ms, us, ns), got {value!r}"
        )
    return value


TIMEOUT_SECONDS = "pulumi.com/timeoutSeconds"
"""pulumi-kubernetes' annotation: how long to wait, in whole seconds, on create, update and delete alike; the
components read it as one of the user's timeouts (docs/components.md, "Long waits")."""
_TIMEOUT_ANNOTATION = f"metadata.annotations[{TIMEOUT_SECONDS!r}]"


def annotation_timeout(metadata: Any) -> str | None:
    """The ``pulumi.com/timeoutSeconds`` annotation as a duration (``"600"`` -> ``"600s"``), None if absent,
    read as pulumi-kubernetes reads it (Go's ``strconv.Atoi``); what is refused and why: docs/components.md,
    "Long waits"."""
    wire = wire_metadata(metadata)
    annotations = wire.get("annotations") if isinstance(wire, Mapping) else UNKNOWN
    if not known(annotations) or not isinstance(annotations, Mapping) or TIMEOUT_SECONDS not in annotations:
        return None
    value = annotations[TIMEOUT_SECONDS]
    if not known(value):
        raise PodSpecError(
            f"{_TIMEOUT_ANNOTATION} must be a plain value, not an Output: the waits are set when the program "
            "runs; give it as a string, or use create_timeout, update_timeout and delete_timeout"
        )
    if not isinstance(value, str) or not re.fullmatch(r"\+?[0-9]+", value) or int(value) == 0:
        raise PodSpecError(
            f'{_TIMEOUT_ANNOTATION} must be a whole number of seconds above 0, as a string such as "3600", '
            f"got {value!r}"
        )
    return f"{int(value)}s"


@dataclasses.dataclass(frozen=True)
class UserTimeouts:
    """The timeouts the user gave, and for each operation the setting that gave it (for messages)."""

    timeouts: pulumi.CustomTimeouts | None
    given_by: Mapping[str, str]
    annotated: str | None = None
    """The ``pulumi.com/timeoutSeconds`` annotation as a duration, where the program saw one."""


def user_timeouts(args: Any, opts: pulumi.ResourceOptions | None) -> UserTimeouts:
    """The timeouts the user asked for: ``create_timeout``/... args, ``opts.custom_timeouts`` and the
    ``pulumi.com/timeoutSeconds`` annotation in ``args.metadata``; one given two ways must agree
    (docs/components.md, "Long waits")."""
    given = opts.custom_timeouts if opts else None
    annotated = annotation_timeout(getattr(args, "metadata", None))
    values: dict[str, str | None] = {}
    given_by: dict[str, str] = {}
    for operation in ("create", "update", "delete"):
        (first, value, shown), *others = _sources(args, given, annotated, operation) or [("", None, "")]
        for name, other, other_shown in others:
            if go_duration_seconds(value) != go_duration_seconds(other):
                raise PodSpecError(f"{first} is {shown!r} but {name} is {other_shown!r}: drop one of them")
        values[operation] = value
        if value:
            given_by[operation] = first
    timeouts = pulumi.CustomTimeouts(**values) if any(values.values()) else None
    return UserTimeouts(timeouts, given_by, annotated)


def _sources(
    args: Any, given: pulumi.CustomTimeouts | None, annotated: str | None, operation: str
) -> list[tuple[str, str, str]]:
    """(setting, duration, as written) for each way the user gave ``operation``'s timeout, each checked."""
    setting, option = f"{operation}_timeout", f"opts.custom_timeouts.{operation}"
    found = [
        (setting, check_duration(getattr(args, setting, None), setting)),
        (option, check_duration(getattr(given, operation, None) if given else None, option)),
    ]
    sources = [(name, value, value) for name, value in found if value]
    if annotated:
        sources.append((_TIMEOUT_ANNOTATION, annotated, annotated.removesuffix("s")))
    return sources


def late_timeout_check(honoured: str | None) -> Callable[[Mapping[str, Any]], None]:
    """A metadata check for once Outputs resolve: a ``pulumi.com/timeoutSeconds`` not seen when the program
    ran cannot be honoured any more, so it is refused, naming the timeout inputs (docs/components.md,
    "Long waits": through Construct the usual case)."""

    def check(metadata: Mapping[str, Any]) -> None:
        late = annotation_timeout(metadata)
        if late != honoured:
            raise PodSpecError(
                f"{_TIMEOUT_ANNOTATION} is known only once Outputs resolve, after the waits were set: "
                "metadata arrived as an Output (from YAML, TypeScript or Go it does whenever one of its fields "
                "comes from another resource, such as namespace: ${ns.metadata.name}); drop the annotation "
                "and give the inputs createTimeout, updateTimeout and deleteTimeout (create_timeout, "
                "update_timeout and delete_timeout in Python), or in Python give metadata.annotations as "
                "plain values"
            )

    return check


def child_timeouts(default: str, user: pulumi.CustomTimeouts | None) -> pulumi.CustomTimeouts:
    """Our create/update budget, with every timeout the user gave (:func:`user_timeouts`) winning."""
    return pulumi.CustomTimeouts(
        create=(user.create if user and user.create else default),
        update=(user.update if user and user.update else default),
        delete=(user.delete if user else None),
    )


def read_args(cls: type[A], owner: str, args: Any, kwargs: Mapping[str, Any]) -> A:
    """The args dataclass from itself, keyword arguments, or a dict with camelCase or snake_case keys."""
    if args is not None and kwargs:
        raise TypeError(f"{owner}: pass either args or keyword arguments, not both")
    if isinstance(args, cls):
        return args
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"{owner}: args must be {cls.__name__} or a dict, got {type(args).__name__}")
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    data: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in dict(args if args is not None else kwargs).items():
        name = key if key in fields else re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()  # camelCase
        if name not in fields:
            raise TypeError(
                f"{owner}: unexpected keyword argument {key!r}; allowed: {', '.join(sorted(fields))}"
            )
        if name in spelled:
            raise TypeError(f"{owner}: {name!r} is given twice, as {spelled[name]!r} and {key!r}")
        spelled[name] = key
        data[name] = value
    if "spec" not in data:
        raise TypeError(f"{owner}: spec is required")
    return cls(**data)


@contextlib.contextmanager
def refusals(owner: str) -> Iterator[None]:
    """Name the component in a refusal raised inside: ``GpuJob('train'): gpus must be ...``."""
    try:
        yield
    except (PodSpecError, PlacementError, WireError) as error:
        raise type(error)(f"{owner}: {error}") from None


def check_flag(value: object, setting: str) -> bool:
    """A boolean setting; anything else (e.g. the string "false") is refused, not guessed."""
    if not isinstance(value, bool):
        raise PodSpecError(f"{setting} must be true or false, got {value!r}")
    return value


def gpu_settings(args: GpuWorkloadArgs[Any]) -> tuple[int | None, str | None]:
    """The shared settings checked; ``gpus`` and ``security_profile`` returned, None where the default applies."""
    check_flag(args.check_image_architecture, "check_image_architecture")
    return (check_gpus(args.gpus) if args.gpus is not None else None), check_profile(args.security_profile)


Place = Callable[..., dict[str, Any]]
"""A component's merge: ``place(spec in Kubernetes' form, contract, placement_known=...)`` -> placed spec."""


def place_now(owner: str, args: GpuWorkloadArgs[Any], spec_type: Any, place: Place) -> Any:
    """Run every check that known values allow, before anything is declared: the placed spec, or UNKNOWN when
    the whole spec is an Output. A contract still an Output stands in as ``UNRESOLVED_PLACEMENT``, which no
    user spec mentions: only checks that need no contract (shape, containers, GPU counts) can fail on it."""
    with refusals(owner):
        spec = to_wire(args.spec, spec_type, unknown=UNKNOWN)
        resolved = not has_outputs(args.placement)
        placement = as_placement(args.placement) if resolved else UNRESOLVED_PLACEMENT
        return place(spec, placement, placement_known=resolved) if known(spec) else UNKNOWN


def place_final(owner: str, args: GpuWorkloadArgs[Any], spec_type: Any, place: Place, eager: Any) -> Any:
    """The spec to declare: the eager result when nothing was an Output, else placed once every Output resolved."""
    if known(eager) and not has_outputs(args.placement) and not has_outputs(args.spec):
        return eager  # all known: the eager result is the final spec (and costs no Outputs)
    placement = args.placement.to_dict() if isinstance(args.placement, Placement) else args.placement

    def late(both: list[Any]) -> dict[str, Any]:
        with refusals(owner):
            return place(to_wire(both[0], spec_type), as_placement(both[1]), placement_known=True)

    return pulumi.Output.all(pulumi.Output.from_input(args.spec), pulumi.Output.from_input(placement)).apply(
        late
    )


def name_and_namespace(child: Any, resource_name: str) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    """The child's ``metadata.name`` and namespace, the components' outputs; under mocks that echo inputs
    (no auto-name, no default namespace) the resource name and ``default`` (docs/components.md)."""
    return (
        child.metadata.apply(lambda m: (m or {}).get("name") or resource_name),
        child.metadata.apply(lambda m: (m or {}).get("namespace") or "default"),
    )


def wire_metadata(metadata: Any) -> Any:
    """``metadata`` in Kubernetes' form (``{}`` for none), Outputs inside as UNKNOWN."""
    return to_wire(metadata, ObjectMetaArgs, unknown=UNKNOWN) if metadata is not None else {}


Check = Callable[[Mapping[str, Any]], None]
"""A check of ``metadata`` in Kubernetes' form; raises PodSpecError. Parts may be UNKNOWN (skipped, checked
again once they resolve)."""


def checked_metadata(
    owner: str, metadata: Any, checks: list[Check], annotate: tuple[str, str] | None = None
) -> Any:
    """``metadata`` (``{}`` for none) with every check passed; with ``annotate=(key, setting)``, plus the
    annotation ``key: "true"`` that ``setting`` means (one of the user's that disagrees is refused). Checked
    now, and again once Outputs resolve (docs/components.md, "Refusals and Outputs")."""

    def merge(meta: Any) -> Any:
        with refusals(owner):
            wire = wire_metadata(meta)
            if not isinstance(wire, Mapping):
                return {}  # an Output as a whole: checked once it resolves
            for check in checks:
                check(wire)
            return _annotated(wire, *annotate) if annotate else meta

    # The child is auto-named either way; under the documented unit-test mocks (outputs = inputs) {}
    # keeps a consumer's deployment.metadata.name readable (None) instead of an AttributeError on None.
    metadata = {} if metadata is None else metadata
    merged = merge(metadata)  # eager: refuse before anything is declared
    return pulumi.Output.from_input(metadata).apply(merge) if has_outputs(metadata) else merged


def _annotated(wire: Mapping[str, Any], key: str, setting: str) -> Any:
    """``wire`` (metadata in Kubernetes' form) with ``key: "true"``; the user's own other value refused."""
    annotations = wire.get("annotations")
    if not known(annotations):
        return wire
    mine = (annotations or {}).get(key, "true")
    if known(mine) and mine != "true":
        raise PodSpecError(
            f"metadata.annotations[{key!r}] is {mine!r} but {setting} means 'true': drop one of them"
        )
    return {**wire, "annotations": {**(annotations or {}), key: "true"}}
