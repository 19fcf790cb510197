"""What ``GpuDeployment`` and ``GpuJob`` share: reading their args, the placement, timeouts, outputs.

Kept apart from the pure merge: this is the Pulumi plumbing around it, and the same
for every GPU component, so both behave alike for Python users and for other
languages served through the component provider (which hands args over as a plain
dict with camelCase keys and numbers as floats).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, TypeVar

import pulumi

from infra.workloads.durations import go_duration_seconds
from infra.workloads.placement import Placement
from infra.workloads.podspec import as_placement
from infra.workloads.values import UNKNOWN, PodSpecError
from infra.workloads.wire import has_outputs, to_wire

A = TypeVar("A")

# Stand-in contract for the eager check when the real one is still an Output
# (read from a StackReference): no user spec mentions this key, so only the
# contract-independent checks (shape, containers, GPU counts) can fail on it.
UNRESOLVED_PLACEMENT = Placement(key="placement.unresolved/contract", value="unresolved")

# How long Pulumi waits for a GPU workload to become ready (pulumi-kubernetes'
# default is 10 minutes). The budget for one GPU pod, from nothing:
SCALE_UP_MINUTES = 10
"""GPU group at zero: the autoscaler notices (~1 min), the instance boots and joins (1-2 min),
the NVIDIA driver and device plugin advertise nvidia.com/gpu (~1.5-3 min); margin for a
slow or second attempt (the autoscaler waits up to 15 min for the GPU to appear)."""
IMAGE_PULL_MINUTES = 15
"""CUDA, PyTorch and vLLM images are 5-20 GB; a fresh node pulls and unpacks them at tens of MB/s."""
STARTUP_MINUTES = 5
"""Model load until the readiness probe passes."""
DEPLOYMENT_TIMEOUT = f"{SCALE_UP_MINUTES + IMAGE_PULL_MINUTES + STARTUP_MINUTES}m"
"""Create and update of a GpuDeployment: 30m."""
JOB_RUN_MINUTES = 30
"""A Job is awaited until it completes: the startup budget plus this much running time."""
JOB_TIMEOUT = f"{SCALE_UP_MINUTES + IMAGE_PULL_MINUTES + STARTUP_MINUTES + JOB_RUN_MINUTES}m"
"""Create and update of a GpuJob: 60m. Longer jobs: set custom_timeouts, or wait_for_completion=False."""


TIMEOUT_OPERATIONS = ("create", "update", "delete")


def check_duration(value: object, setting: str) -> str | None:
    """A positive duration as the engine parses ``customTimeouts`` (Go's ``time.ParseDuration``).

    ``"45m"``, ``"2h"``, ``"1h30m"``, ``"90s"``; units ns, us, ms, s, m, h. A sign,
    a bare number or a unit Go does not know (``"1d"``) would only fail at
    ``pulumi up``, after the preview passed: refused here instead.
    """
    if value is None:
        return None
    seconds = go_duration_seconds(value) if isinstance(value, str) and value[:1] != "+" else None
    if not seconds or seconds <= 0:
        raise PodSpecError(
            f'{setting} must be a positive duration such as "45m", "2h" or "1h30m" '
            f"(units h, m, s, ms, us, ns), got {value!r}"
        )
    return value


def user_timeouts(args: Any, opts: pulumi.ResourceOptions | None) -> pulumi.CustomTimeouts | None:
    """The timeouts the user asked for: ``create_timeout``/... args and ``opts.custom_timeouts``.

    The args exist because other languages cannot pass ``customTimeouts`` through the
    component provider: pulumi 3.272.0's ``ProviderServicer._construct_options``
    builds a ``CustomTimeouts`` from the request and never assigns it, so
    ``customTimeouts`` on a GpuJob in TypeScript or YAML is silently dropped. The
    same timeout given both ways with different values is refused rather than one
    silently winning.
    """
    given = opts.custom_timeouts if opts else None
    values: dict[str, str | None] = {}
    for operation in TIMEOUT_OPERATIONS:
        setting = f"{operation}_timeout"
        mine = check_duration(getattr(args, setting, None), setting)
        theirs = getattr(given, operation, None) if given else None
        if mine and theirs and mine != theirs:
            raise PodSpecError(
                f"{setting} is {mine!r} but opts.custom_timeouts.{operation} is {theirs!r}: drop one of them"
            )
        values[operation] = mine or theirs
    return pulumi.CustomTimeouts(**values) if any(values.values()) else None


def child_timeouts(default: str, user: pulumi.CustomTimeouts | None) -> pulumi.CustomTimeouts:
    """Our create/update budget, with every timeout the user gave in ``opts.custom_timeouts`` winning."""
    return pulumi.CustomTimeouts(
        create=(user.create if user and user.create else default),
        update=(user.update if user and user.update else default),
        delete=(user.delete if user else None),
    )


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def read_args(cls: type[A], component: str, resource_name: str, args: Any, kwargs: Mapping[str, Any]) -> A:
    """The args dataclass from itself, keyword arguments, or a dict with camelCase or snake_case keys."""
    where = f"{component}({resource_name!r})"
    if args is not None and kwargs:
        raise TypeError(f"{where}: pass either args or keyword arguments, not both")
    if isinstance(args, cls):
        return args
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"{where}: args must be {cls.__name__} or a dict, got {type(args).__name__}")
    given = dict(args if args is not None else kwargs)
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    data: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in given.items():
        name = key if key in fields else _snake(key)
        if name not in fields:
            raise TypeError(
                f"{where}: unexpected keyword argument {key!r}; allowed: {', '.join(sorted(fields))}"
            )
        if name in spelled:
            raise TypeError(f"{where}: {name!r} is given twice, as {spelled[name]!r} and {key!r}")
        spelled[name] = key
        data[name] = value
    if "spec" not in data:
        raise TypeError(f"{where}: spec is required")
    return cls(**data)


def check_flag(value: object, setting: str) -> bool:
    """A boolean setting; anything else (e.g. the string "false") is refused, not guessed."""
    if not isinstance(value, bool):
        raise PodSpecError(f"{setting} must be true or false, got {value!r}")
    return value


def eager_placement(value: Any) -> tuple[Placement, bool]:
    """The contract to check against now, and whether it is the real one (not yet, if an Output)."""
    if has_outputs(value):
        return UNRESOLVED_PLACEMENT, False
    return as_placement(value), True


def final_inputs(spec: Any, placement: Any, typ: Any) -> pulumi.Output[tuple[Any, Placement]]:
    """Spec (Kubernetes form) and contract once every Output inside them is resolved."""
    placement_input = placement.to_dict() if isinstance(placement, Placement) else placement
    return pulumi.Output.all(pulumi.Output.from_input(spec), pulumi.Output.from_input(placement_input)).apply(
        lambda both: (to_wire(both[0], typ), as_placement(both[1]))
    )


def wire_or_unknown(value: Any, typ: Any) -> Any:
    """``value`` in Kubernetes' form with Outputs as UNKNOWN, for the eager check."""
    return to_wire(value, typ, unknown=UNKNOWN)


def _meta_field(metadata: Any, key: str) -> Any:
    if metadata is None:
        return None
    if isinstance(metadata, Mapping):
        return metadata.get(key)
    return getattr(metadata, key, None)


def child_metadata(metadata: Any) -> Any:
    """The child's ``metadata``: the user's, or ``{}`` when none was given.

    The provider auto-names an object either way (``metadata: {}`` or none). Under
    Pulumi's documented unit-test mocks (outputs = inputs) a child without metadata
    has ``metadata`` None, and a consumer's test reading ``deployment.metadata.name``
    fails with AttributeError; with ``{}`` it reads None.
    """
    return {} if metadata is None else metadata


def name_output(child: Any, resource_name: str) -> pulumi.Output[str]:
    """The child's ``metadata.name``.

    A real engine always returns it (the given name or the auto-name Pulumi
    generated). Unit-test mocks that echo inputs return no name for an
    auto-named object; there the resource name stands in for the auto-name.
    """
    return child.metadata.apply(lambda m: _meta_field(m, "name") or resource_name)


def namespace_output(child: Any) -> pulumi.Output[str]:
    """The child's namespace; ``default`` when none was given (and mocks echo none back)."""
    return child.metadata.apply(lambda m: _meta_field(m, "namespace") or "default")


def with_annotations(metadata: Any, extra: Mapping[str, str], setting: str) -> Any:
    """``metadata`` plus ``extra`` annotations; an annotation of the user's that disagrees is refused."""
    if not extra:
        return metadata
    from pulumi_kubernetes.meta.v1 import ObjectMetaArgs

    def merge(meta: Any) -> dict[str, Any]:
        wire = to_wire(meta, ObjectMetaArgs, unknown=UNKNOWN) if meta is not None else {}
        if wire is UNKNOWN:
            return {}
        wire = dict(wire)
        annotations = wire.get("annotations")
        if annotations is UNKNOWN:
            return wire
        annotations = dict(annotations or {})
        for key, value in extra.items():
            mine = annotations.get(key, value)
            if mine is not UNKNOWN and mine != value:
                raise PodSpecError(
                    f"metadata.annotations[{key!r}] is {mine!r} but {setting} means {value!r}: drop one of them"
                )
            annotations[key] = value
        wire["annotations"] = annotations
        return wire

    merge(metadata)  # eager: refuse a contradiction before anything is declared
    if has_outputs(metadata):
        return pulumi.Output.from_input(metadata).apply(merge)
    return merge(metadata)
