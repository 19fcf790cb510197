"""The one formatter of the config's words: what a setting allows, read from the JSON schema."""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

from infra.platform.config_types import json_text
from infra.platform.node_pools import WHOLE_GPUS

FORMATS = {
    "ipv4network": ("an IPv4 CIDR block", ("10.0.0.0/16",)),
    "go-duration": ("a Go duration", ("90s", "10m", "1h30m")),
}
BOUNDS = (("exclusiveMinimum", "above"), ("maximum", "up to"))
# Known mistakes, and what to write instead: (key, value) patterns -> the hint added to the refusal.
HINTS = {
    ("kubernetesVersion", r"1\.34"): "1.34 left EKS standard support on 2026-12-02: set 1.35 first",
    (r"clusterAdmins\[\d+\]", ".*:assumed-role/.*"): "an assumed-role session: give the role's ARN",
    ("gpuPools key .*", WHOLE_GPUS): f"{WHOLE_GPUS!r} is reserved: the device plugin's default config",
    ("gpuNodes", ".*"): "gpuNodes was replaced by gpuPools: {<name>: {the same fields, plus sharing}}",
    ("devicePlugin.namespace", "default|kube-system"): "the plugin needs its own namespace (the chart "
    "refuses 'default' unless allowDefaultNamespace; kube-system holds EKS's own agents)",
    (r"gpuPools\..*\.instanceTypes\[\d+\]", ".*"): "GPU pools run the Arm NVIDIA AMI "
    "(AL2023_ARM_64_NVIDIA), so only Arm NVIDIA (g5g) types; x86 GPU types cannot boot it",
}


def literal(value: Any) -> str:
    """A value as the stack file writes it: booleans in lower case, text YAML would read as a number in quotes."""
    if isinstance(value, bool):
        return str(value).lower()
    return f'"{value}"' if isinstance(value, str) and value[:1].isdigit() else str(value)


@dataclass(frozen=True)
class Words:
    """The words of one JSON schema (the stack config's, :func:`infra.platform.config.json_schema`)."""

    schema: Mapping[str, Any]

    def resolve(self, node: Mapping[str, Any]) -> dict[str, Any]:
        """``node`` with its ``$ref`` and optional (``anyOf`` with null) unwrapped; the field's own keys win."""
        node = dict(node)
        while "$ref" in node or "anyOf" in node:
            if "$ref" in node:
                inner = self.schema["$defs"][node.pop("$ref").rsplit("/", 1)[-1]]
            else:
                inner = next(n for n in node.pop("anyOf") if n.get("type") != "null")
            node = {**inner, **node}
        return node

    def at(self, loc: tuple[Any, ...]) -> dict[str, Any]:
        """The schema node of the setting at pydantic's error location ``loc``."""
        node = self.resolve(self.schema)
        for part in loc:
            if part == "[key]":  # a map's key: what propertyNames says of it
                node = node.get("propertyNames", {})
            elif isinstance(part, int):
                node = self.resolve(node.get("items", {}))
            elif part in node.get("properties", {}):
                node = self.resolve(node["properties"][part])
            else:  # a map's value (gpuPools.<pool>)
                node = self.resolve(next(iter(node.get("patternProperties", {}).values()), {}))
        return node

    def allowed(self, node: Mapping[str, Any], code: Any = literal) -> str:
        """What a schema node accepts, in words; ``code`` renders a value (the docs put it in backticks)."""
        if "enum" in node:
            return "one of " + ", ".join(code(v) for v in node["enum"])
        if node.get("type") == "array":
            repeats = ", no repeats" if node.get("uniqueItems") else ""
            each = self.allowed(self.resolve(node["items"]), code)
            return f"a list ({node.get('minItems', 0)} or more{repeats}), each {each}"
        if node.get("type") == "integer":
            return f"a whole number from {node['minimum']} to {node['maximum']}"
        if node.get("type") == "boolean":
            return f"{code(True)} or {code(False)}"
        if "format" in node:
            words, examples = FORMATS[node["format"]]
            bounds = (f"{word} {code(node[k])}" for k, word in BOUNDS if k in node)
            return ", ".join((f"{words} (e.g. {', '.join(code(e) for e in examples)})", *bounds))
        if "x-allowed" in node:
            return node["x-allowed"] + "".join(f", e.g. {code(e)}" for e in node.get("examples", [])[:1])
        if "patternProperties" in node:  # gpuPools, teams, teams.<team>.quotas: x-key names the map's keys
            names, key = node["propertyNames"]["x-allowed"], node.get("x-key", "pool")
            least = f", at least {node['minProperties']}" if "minProperties" in node else ""
            return f"a map of {key} name to {key} settings{least} (a {key} name: {names})"
        if "properties" in node:
            return "an object of settings (key: value)"
        return ""

    def refusal(self, error: Mapping[str, Any]) -> str:
        """One pydantic error as a refusal: the key, what it allows in words, the value given, a hint if known."""
        loc = tuple(error["loc"])
        setting, kind = _setting(loc), error["type"]
        if loc[-1:] == ("[key]",):  # a map's key: the words are the map's, not its value's
            loc = (*loc[:-2], "[key]")
        if kind == "extra_forbidden":
            known = list(self.at(loc[:-1]).get("properties", {}))
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            hint = f" (did you mean {_setting((*loc[:-1], close[0]))}?)" if close else ""
            message = f"unknown setting {setting}{hint}; allowed: {', '.join(known)}"
        elif kind == "missing":
            message = f"{setting} is required"
        elif kind == "value_error":  # a model's own check: the message continues the key
            text = str(error["ctx"]["error"])
            message = (setting + (text if text[:1] in ".:" else f" {text}")).lstrip(".: ")
        else:  # a wrong type or a value outside a declared constraint
            message = f"{setting} must be {self.allowed(self.at(loc)) or 'text'}, got {error['input']!r}"
        for (key, value), hint in HINTS.items():
            if re.fullmatch(key, setting) and re.fullmatch(value, str(error.get("input")), re.S):
                return f"{message}; {hint}"
        return message

    def refusals(self, errors: list[Any], secrets: list[Any]) -> str:
        """Every error not explained by one deeper down (a list too short only because its items were
        refused), each as :meth:`refusal`, with the text of every secret setting masked."""
        locs = [tuple(e["loc"]) for e in errors]
        specific = [
            e for e, loc in zip(errors, locs, strict=True) if not any(o[: len(loc)] == loc != o for o in locs)
        ]
        return _masked("; ".join(self.refusal(e) for e in specific), secrets)


def _setting(loc: tuple[Any, ...]) -> str:
    if loc[-1:] == ("[key]",):  # a map's key: the pool's name itself
        return f"{_setting(loc[:-2])} key {loc[-2]!r}"
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _leaves(value: Any) -> Iterator[str]:
    value = json_text(value)
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str) and value:
        yield value
        with contextlib.suppress(ValueError):  # the block a host-bits refusal names
            yield str(IPv4Network(value, strict=False))


def _masked(message: str, secrets: list[Any]) -> str:
    """``message`` with every text inside a secret setting as [secret]: the CLI masks a secret only where
    its whole text appears (pulumi engine/events.go, logging.FilterString), never a part of it."""
    for leaf in sorted({leaf for value in secrets for leaf in _leaves(value)}, key=len, reverse=True):
        message = message.replace(leaf, "[secret]")
    return message
