"""Which of a component's resource options its children get, since Pulumi hands on only a few."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

EVERY_CHILD = ("depends_on", "retain_on_delete", "deleted_with")
"""Options about the objects' lifecycle: each child is created after, kept or deleted with, as the component."""


def _given(opts: pulumi.ResourceOptions | None, name: str) -> Any:
    """The option's value, None when unset: the component provider passes ``False`` and ``[]`` for unset."""
    value = getattr(opts, name, None) if opts else None
    return value if value not in (False, [], ()) else None


def for_every_child(opts: pulumi.ResourceOptions | None) -> dict[str, Any]:
    """The component's ``depends_on``, ``retain_on_delete`` and ``deleted_with``, for each child."""
    return {name: value for name in EVERY_CHILD if (value := _given(opts, name)) is not None}


def for_main_child(
    opts: pulumi.ResourceOptions | None,
    *,
    ignore_changes: Sequence[str] = (),
    replace_on_changes: Sequence[str] = (),
    delete_before_replace: bool | None = None,
) -> dict[str, Any]:
    """What the Deployment or Job gets: every child's options, plus the component's field options
    with ours added (``ignore_changes``, ``replace_on_changes``) or as defaults (``delete_before_replace``)."""

    def merged(name: str, ours: Sequence[str]) -> list[str] | None:
        mine = list(_given(opts, name) or [])
        return mine + [path for path in ours if path not in mine] or None

    result = for_every_child(opts)
    for name, ours in (("ignore_changes", ignore_changes), ("replace_on_changes", replace_on_changes)):
        paths = merged(name, ours)
        if paths:
            result[name] = paths
    theirs = opts.delete_before_replace if opts else None
    if theirs is not None or delete_before_replace is not None:
        result["delete_before_replace"] = theirs if theirs is not None else delete_before_replace
    return result
