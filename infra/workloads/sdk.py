"""The Pulumi SDK internals this package relies on, in one place, each checked at import.

The SDK exposes no public API for two things we need: its own input-type naming
tables (``pulumi._types``, to read typed Args exactly as the serializer does) and
the whole config map with its secret keys (``pulumi.runtime.config``, to refuse
misspelled keys and keep secrets secret). ``pulumi`` is capped in pyproject.toml at
the newest version tested; ``tests/workloads/test_sdk.py`` fails loudly, naming the
missing name, if a new SDK moves any of them.
"""

from __future__ import annotations

from typing import Any

from pulumi import _types
from pulumi.runtime import config as _config

REQUIRED: dict[Any, tuple[str, ...]] = {
    _types: (
        "unwrap_type",
        "is_input_type",
        "input_type_to_dict",
        "input_type_py_to_pulumi_names",
        "input_type_types",
    ),
    _config: ("CONFIG", "_SECRET_KEYS", "get_config_env", "get_config_secret_keys_env"),
}


def missing() -> list[str]:
    """Names this module needs that the installed SDK lacks (empty when all is well)."""
    return [
        f"{module.__name__}.{name}"
        for module, names in REQUIRED.items()
        for name in names
        if not hasattr(module, name)
    ]


unwrap_type = _types.unwrap_type
is_input_type = _types.is_input_type
input_type_to_dict = _types.input_type_to_dict
input_type_py_to_pulumi_names = _types.input_type_py_to_pulumi_names
input_type_types = _types.input_type_types


def all_config() -> dict[str, Any]:
    """Every ``namespace:key`` the engine passed, including ones no program reads."""
    return {**_config.get_config_env(), **_config.CONFIG.get()}


def secret_config_keys() -> frozenset[str]:
    """The ``namespace:key`` names set with ``--secret``."""
    return frozenset(_config._SECRET_KEYS.get()) | frozenset(_config.get_config_secret_keys_env())
