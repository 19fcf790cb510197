"""The configuration reference (docs/configuration.md), generated from the config models so docs and code cannot disagree.

    python -m infra.platform.config_docs          # print the table
    python -m infra.platform.config_docs --write  # replace it in docs/configuration.md

``tests/platform/test_config_docs.py`` fails when the docs' copy drifts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from infra.platform.config import GpuPoolConfig, PlatformConfig, Section

CONFIGURATION_DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"
# Defaults the stack supplies, and checks made by the contract rather than a field validator.
DOC_DEFAULTS = {"clusterName": "`<project>-<stack>`"}
DOC_ALLOWED = {"placement.key": "label key syntax", "placement.value": "label value syntax, a string"}


def _allowed(field: FieldInfo) -> str:
    for meta in field.metadata:
        check = getattr(meta, "func", None)
        if check is not None and hasattr(check, "allowed"):
            return check.allowed
    return ""


def _section(annotation: Any) -> type[Section] | None:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, Section):
            return candidate
    return None


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "(required)"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel) or value in ({}, None) or isinstance(value, dict):
        return ""
    if isinstance(value, tuple):
        return f"`[{', '.join(value)}]`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f'`"{value}"`' if isinstance(value, str) and value[:1].isdigit() else f"`{value}`"


def _rows(model: type[Section], prefix: str) -> list[tuple[str, str, str, str]]:
    rows = []
    for name, field in model.model_fields.items():
        if name in model._internal:
            continue
        key = f"{prefix}{field.alias or name}"
        annotation = field.annotation
        if get_origin(annotation) is dict:  # a map of named sections: gpuPools.<name>
            rows.append((key, "", "map of pool name to the fields below", field.description or ""))
            rows += _rows(GpuPoolConfig, f"{key}.<pool>.")
            continue
        section = _section(annotation)
        if section is not None:
            rows.append((key, "", "object", field.description or section.__doc__.splitlines()[0]))
            rows += _rows(section, f"{key}.")
            continue
        default = DOC_DEFAULTS.get(key) or _default(field)
        allowed = DOC_ALLOWED.get(key) or _allowed(field)
        rows.append((key, default, allowed, (field.description or "").replace("\n", " ")))
    return rows


def reference() -> str:
    """The configuration reference as a Markdown table."""
    lines = ["| key | default | allowed | what |", "|---|---|---|---|"]
    lines.append(
        "| `aws:region` | (required) | an AWS region with g5g capacity | where everything is built |"
    )
    for key, default, allowed, what in _rows(PlatformConfig, ""):
        lines.append(f"| `{key}` | {default} | {allowed} | {what} |")
    return "\n".join(lines)


def readme_block(text: str) -> str:
    return text[text.index(START) + len(START) : text.index(END)].strip("\n")


def write(path: Path = CONFIGURATION_DOC) -> None:
    text = path.read_text()
    before, after = text[: text.index(START) + len(START)], text[text.index(END) :]
    path.write_text(f"{before}\n{reference()}\n{after}")


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
    else:
        print(reference())
