"""What becomes of each resource option given to a GPU component: handed to its children, or refused.

Every field of ``pulumi.ResourceOptions`` is in exactly one table below; why each is where it is:
docs/components.md, "Resource options".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from infra.workloads.values import PodSpecError

EVERY_CHILD = ("depends_on", "retain_on_delete", "deleted_with")
MAIN_CHILD = (
    "ignore_changes",
    "replace_on_changes",
    "delete_before_replace",
    "replace_with",
    "replacement_trigger",
    "hooks",
    "hide_diffs",
    "additional_secret_outputs",
)
"""The Deployment or the Job gets them; the PodDisruptionBudget follows the Deployment's selector anyway."""
CUSTOM_TIMEOUTS = ("custom_timeouts",)
"""Read with the timeout inputs and the ``pulumi.com/timeoutSeconds`` annotation (``component.user_timeouts``)."""
KEPT_BY_PULUMI = (
    "parent",
    "protect",
    "provider",
    "providers",
    "transformations",
    "transforms",
    "aliases",
    "state_migrations",
)
REFUSED: Mapping[str, str] = {
    "id": "a component cannot be read from the cloud; the Deployment or Job can (k8s.apps.v1.Deployment.get)",
    "urn": "a component cannot be looked up by URN; declare it, or read its child by its own URN",
    "import_": "a component has nothing to import; run pulumi import for the Deployment or Job, then declare "
    "the component with the same inputs",
    "version": "it picks the component's own plugin, which a Python component has none of; give the version "
    "to the kubernetes Provider you pass in providers",
    "plugin_download_url": "it picks the component's own plugin, which a Python component has none of; give "
    "it to the kubernetes Provider you pass in providers",
    "env_var_mappings": "it is for provider resources; give it to the kubernetes Provider you pass in providers",
}


def _given(opts: pulumi.ResourceOptions | None, name: str) -> Any:
    """The option's value, None when unset: the component provider passes ``False``, ``[]`` and empty
    hook bindings for unset (pulumi ``provider/server.py`` ``_construct_options``)."""
    value = getattr(opts, name, None) if opts else None
    if isinstance(value, pulumi.ResourceHookBinding) and not any(vars(value).values()):
        return None
    return None if value is False or (isinstance(value, (list, tuple)) and not value) else value


def refuse_unsupported(opts: pulumi.ResourceOptions | None) -> None:
    """Refuse each option in :data:`REFUSED` that was given, naming it."""
    for name, why in REFUSED.items():
        if _given(opts, name) is not None:
            raise PodSpecError(f"opts.{name} is not supported on this component: {why}")


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
    """What the Deployment or Job gets: every child's options and :data:`MAIN_CHILD`'s, with ours added
    (``ignore_changes``, ``replace_on_changes``) or as a default (``delete_before_replace``)."""
    ours = {"ignore_changes": ignore_changes, "replace_on_changes": replace_on_changes}
    result = for_every_child(opts)
    for name in MAIN_CHILD:
        value = _given(opts, name)
        if name in ours:
            mine = list(value or [])
            value = mine + [path for path in ours[name] if path not in mine] or None
        if value is not None:
            result[name] = value
    theirs = opts.delete_before_replace if opts else None
    if theirs is not None or delete_before_replace is not None:
        result["delete_before_replace"] = theirs if theirs is not None else delete_before_replace
    return result


def for_component(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions | None:
    """The component's own options: ``hooks`` go to the main child only, since the engine runs a
    component's hooks too (pkg/v3 v3.276.0 ``step.go``: RunHooks before the Custom check) and they
    would fire twice."""
    if opts is None or not getattr(opts, "hooks", None):
        return opts
    own = copy.copy(opts)
    own.hooks = None
    return own
