"""The configuration reference in docs/configuration.md, generated from the config's JSON schema."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from infra.platform.config import json_schema, words
from infra.platform.config_words import literal

CONFIGURATION_DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"
# Defaults the stack supplies, and checks the placement contract makes (infra/workloads/placement.py).
DOC_DEFAULTS = {"clusterName": "`<project>-<stack>`"}
DOC_ALLOWED = {"placement.key": "label key syntax", "placement.value": "label value syntax, a string"}


def _code(value: Any) -> str:
    """A value as the stack file writes it, in backticks (a list in brackets; nothing for none)."""
    if value is None or isinstance(value, dict):
        return ""
    if isinstance(value, list):
        return f"`[{', '.join(value)}]`"
    return f"`{literal(value)}`"


def _rows(schema: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    for name, field in schema["properties"].items():
        key, node = f"{prefix}{name}", words().resolve(field)
        what = node["description"]
        if "patternProperties" in node:  # a map of named sections: gpuPools.<pool>, teams.<team>
            names, name_of = node["propertyNames"]["x-allowed"], node.get("x-key", "pool")
            yield key, "", f"map of {name_of} name ({names}) to the fields below", what
            value = words().resolve(next(iter(node["patternProperties"].values())))
            yield from _rows(value, f"{key}.<{name_of}>.")
        elif "properties" in node:
            yield key, "", "object", what
            yield from _rows(node, f"{key}.")
        else:
            default = DOC_DEFAULTS.get(key) or ("(required)" if name in schema.get("required", ()) else "")
            yield (
                key,
                default or _code(node.get("default")),
                DOC_ALLOWED.get(key) or words().allowed(node, _code),
                what,
            )


def reference() -> str:
    """The configuration reference as a Markdown table."""
    lines = ["| key | default | allowed | what |", "|---|---|---|---|"]
    lines.append(
        "| `aws:region` | (required) | an AWS region with g5g capacity | where everything is built |"
    )
    lines += [f"| `{key}` | {default} | {ok} | {what} |" for key, default, ok, what in _rows(json_schema())]
    return "\n".join(lines)


def generated_block(text: str) -> str:
    """The generated block of docs/configuration.md."""
    return text.partition(START)[2].partition(END)[0].strip("\n")


def write(path: Path = CONFIGURATION_DOC) -> None:
    """Replace the generated block of ``path`` with :func:`reference`."""
    before, _, rest = path.read_text().partition(START)
    path.write_text(f"{before}{START}\n{reference()}\n{END}{rest.partition(END)[2]}")


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
    else:
        print(reference())
