"""Turn Pulumi inputs (typed Args, snake_case or camelCase dicts) into Kubernetes' own form."""

from __future__ import annotations

import inspect
import typing
from collections import abc
from typing import Any

import pulumi

from infra.workloads import sdk as _types  # the SDK internals, checked in one place


def _type_arg(typ: Any, index: int) -> Any:
    """The ``index``-th type argument of ``typ`` (a list's item, a map's value), unwrapped; None if none."""
    args = typing.get_args(_types.unwrap_type(typ)) if typ is not None else ()
    return _types.unwrap_type(args[index]) if len(args) > index else None


class WireError(ValueError):
    """Input that has no single Kubernetes form, e.g. one field spelled two ways."""


def output_path(value: Any, path: str = "") -> str | None:
    """Where the first Pulumi Output or awaitable inside ``value`` is (``""`` for ``value`` itself)."""
    if isinstance(value, pulumi.Output) or inspect.isawaitable(value):
        return path
    if _types.is_input_type(type(value)):
        value = _types.input_type_to_dict(value)
    parts: list[tuple[str, Any]] = []
    if isinstance(value, abc.Mapping):
        parts = [(f"{path}.{key}", item) for key, item in value.items()]
    elif isinstance(value, (list, tuple)):
        parts = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
    return next((found for where, item in parts if (found := output_path(item, where)) is not None), None)


def has_outputs(value: Any) -> bool:
    """True if any part of ``value`` is a Pulumi Output or awaitable."""
    return output_path(value) is not None


def to_wire(value: Any, typ: Any = None, *, unknown: Any = None) -> Any:
    """``value`` in Kubernetes' camelCase form, typed by the Args class ``typ``."""
    if isinstance(value, pulumi.Output) or inspect.isawaitable(value):
        if unknown is None:
            raise TypeError("to_wire: unresolved Output; resolve it first (Output.from_input(...).apply)")
        return unknown
    typ = _types.unwrap_type(typ) if typ is not None else None
    if _types.is_input_type(type(value)):
        typ = type(value)
        value = _types.input_type_to_dict(value)
    if isinstance(value, abc.Mapping):  # an Args' fields by their Kubernetes names; a map's keys as they are
        typed = typ is not None and _types.is_input_type(typ)
        names = _types.input_type_py_to_pulumi_names(typ) if typed else {}
        types = _types.input_type_types(typ) if typed else {}
        result: dict[str, Any] = {}
        spelled: dict[str, str] = {}
        for key, item in value.items():
            name = names.get(key) or key
            if item is None:
                continue
            if name in spelled:
                raise WireError(
                    f"{name!r} is given twice, as {spelled[name]!r} and {key!r}: keep one spelling"
                )
            spelled[name] = key
            result[name] = to_wire(item, types.get(name) if typed else _type_arg(typ, 1), unknown=unknown)
        return result
    if isinstance(value, (list, tuple)):
        item_type = _type_arg(typ, 0)
        return [to_wire(v, item_type, unknown=unknown) for v in value]
    return value


def whole_numbers(value: Any) -> Any:
    """``value`` with integral floats as ints, inside Outputs, maps and lists too."""
    if isinstance(value, pulumi.Output):
        return value.apply(whole_numbers)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, abc.Mapping):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value
