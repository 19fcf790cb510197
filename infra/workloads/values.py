"""What every pure workload module shares: the error types and the marker for values not known yet."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any


class _Unknown:
    """Stands for a value that is not known until the Pulumi engine resolves it."""

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"  # copy.deepcopy and pickle give back the one module-level object


UNKNOWN: Any = _Unknown()
"""A Pulumi Output's value during the eager check: checks that need it are skipped, not guessed."""


class PodSpecError(ValueError):
    """A workload that cannot honour the placement contract; the message says what to change."""


class PlacementError(ValueError):
    """A placement (key, value, pools, queues) that Kubernetes or EKS would refuse, or no placement at all."""


def known(value: Any) -> bool:
    """False for :data:`UNKNOWN`: the value comes from an Output not resolved yet."""
    return value is not UNKNOWN


def as_whole(value: Any) -> int | None:
    """``value`` as an int if it is one; integral floats (JSON numbers, e.g. ``1.0``) count, booleans do not."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_list(value: Any) -> bool:
    """A JSON array as the engine sends it: a sequence, not a string."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def check_spec_fields(spec: Any, kind: str, allowed: Set[str]) -> Mapping[str, Any]:
    """``spec`` if it is a mapping with only ``kind``'s spec fields; a refusal naming the strays otherwise."""
    if not isinstance(spec, Mapping):
        raise PodSpecError(f"spec must be a {kind} spec (a mapping), got {type(spec).__name__}")
    strays = sorted(set(spec) - allowed)
    if strays:
        raise PodSpecError(
            f"spec is not a {kind} spec: unknown field(s) {strays}; allowed: {sorted(allowed)}"
        )
    return spec


def check_counts(spec: Mapping[str, Any], fields: Iterable[str]) -> None:
    """Refuse a count that is not a whole number >= 0 (``2.0`` is one, ``"2"`` and booleans are not)."""
    for field in fields:
        value = spec.get(field)
        if value is None or not known(value):
            continue
        whole = as_whole(value)
        if whole is None or whole < 0:
            raise PodSpecError(f"spec.{field} must be a whole number >= 0, got {spec[field]!r}")
