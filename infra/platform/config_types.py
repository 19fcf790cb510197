"""The value types of the stack config: each checks one setting and says what is allowed.

Pydantic runs them (``infra.platform.config`` builds the models from them); the
checks stay plain functions so every message names the setting's value and the
allowed values in the project's own words. Numbers and booleans may arrive as
text: ``pulumi config set`` stores scalars as strings unless told ``--type``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator

from infra.workloads.durations import go_duration_seconds
from infra.workloads.values import as_whole


def whole(low: int, high: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        number = int(value) if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()) else value
        count = as_whole(number)  # JSON numbers from the engine arrive as floats
        if count is None or not low <= count <= high:
            raise ValueError(
                f"must be a whole number from {low} to {high}, got {number if count is None else count!r}"
            )
        return count

    check.allowed = f"whole number {low}-{high}"  # type: ignore[attr-defined]
    return check


def flag(value: Any) -> bool:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, got {value!r}")
    return value


flag.allowed = "true / false"  # type: ignore[attr-defined]


def text(pattern: str, hint: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or not re.fullmatch(pattern, value):
            raise ValueError(f"must be {hint}, got {value!r}")
        return value

    check.allowed = hint  # type: ignore[attr-defined]
    return check


def one_of(choices: Sequence[str] | Mapping[str, Any], what: str | None = None) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            allowed = ", ".join(choices)
            if what:
                raise ValueError(f": {value!r} is not {what}; allowed: {allowed}")
            raise ValueError(f"must be one of {allowed}, got {value!r}")
        return value

    check.allowed = ", ".join(f"`{c}`" for c in choices)  # type: ignore[attr-defined]
    return check


def ipv4_cidr(value: Any) -> str:
    try:
        network = ipaddress.ip_network(value, strict=True)
    except (TypeError, ValueError):
        raise ValueError(f"must be an IPv4 CIDR such as 203.0.113.0/24, got {value!r}") from None
    if network.version != 4:
        raise ValueError(
            f"must be an IPv4 CIDR (this platform builds an IPv4 cluster), got the IPv6 {value!r}"
        )
    return str(network)


ipv4_cidr.allowed = "IPv4 CIDR"  # type: ignore[attr-defined]


def items(item: Callable[[Any], Any], *, min_items: int = 0) -> Callable[[Any], tuple[Any, ...]]:
    """A list of checked items, no duplicates; item errors name their index."""

    def check(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)) or len(value) < min_items:
            raise ValueError(f"must be a list of at least {min_items} item(s), got {value!r}")
        checked = []
        for index, element in enumerate(value):
            try:
                checked.append(item(element))
            except ValueError as error:
                raise ValueError(f"[{index}] {error}") from None
        if len(set(checked)) != len(checked):
            raise ValueError(f"lists an item twice: {list(value)}")
        return tuple(checked)

    inner = getattr(item, "allowed", "")
    check.allowed = f"list ({min_items}+, no repeats) of {inner}" if inner else "list"  # type: ignore[attr-defined]
    return check


def duration(*, positive: bool = False) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        seconds = go_duration_seconds(value) if isinstance(value, str) else None
        if seconds is None or (positive and seconds <= 0):
            kind = "a positive duration" if positive else "a duration"
            raise ValueError(
                f"must be {kind} as Go writes it (e.g. 90s, 10m, 1h30m; units ns, us, ms, s, m, h), got {value!r}"
            )
        return value

    check.allowed = ("positive " if positive else "") + "Go duration (`90s`, `10m`, `1h30m`)"  # type: ignore[attr-defined]
    return check


def json_object(value: Any) -> Any:
    """The CLI hands objects and lists over as JSON text."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


Count = Annotated[int, BeforeValidator(whole(0, 450))]
Flag = Annotated[bool, BeforeValidator(flag)]
