"""What this package reads from the Pulumi SDK beyond ``pulumi.Config``, in one place.

Config goes through ``pulumi.runtime``'s public functions where they reach. Three needs
have no public API, so they read SDK internals, and ``tests/workloads/test_sdk.py`` names
whatever a new SDK moves: the whole config map of an Automation API inline program (it
reaches the SDK only through ``set_all_config``, never the environment), the input-type
naming tables (``pulumi._types``, the serializer's own) and whether the monitor is the
real engine's gRPC stub. See docs/decisions/0030.
"""

from __future__ import annotations

from typing import Any

import pulumi.runtime
from pulumi import _types  # no public API: the Args -> camelCase tables the serializer uses
from pulumi.runtime import config as _config  # no public API: the map set_all_config fills

REQUIRED: dict[Any, tuple[str, ...]] = {
    _types: (
        "unwrap_type",
        "is_input_type",
        "input_type_to_dict",
        "input_type_py_to_pulumi_names",
        "input_type_types",
    ),
    _config: ("CONFIG",),
}

unwrap_type = _types.unwrap_type
is_input_type = _types.is_input_type
input_type_to_dict = _types.input_type_to_dict
input_type_py_to_pulumi_names = _types.input_type_py_to_pulumi_names
input_type_types = _types.input_type_types


def missing() -> list[str]:
    """Internal names this module needs that the installed SDK lacks (empty when all is well)."""
    absent = [f"{m.__name__}.{n}" for m, names in REQUIRED.items() for n in names if not hasattr(m, n)]
    try:
        from pulumi.runtime.proto.resource_pb2_grpc import ResourceMonitorStub  # noqa: F401
        from pulumi.runtime.settings import get_monitor  # noqa: F401
    except ImportError as error:
        absent.append(str(error))
    return absent


def all_config() -> dict[str, Any]:
    """Every ``namespace:key`` the engine passed, including ones no program reads.

    The CLI's language host passes ``PULUMI_CONFIG`` and loads it into the SDK; an
    Automation API inline program gets its config only through ``set_all_config``.
    """
    return {**pulumi.runtime.get_config_env(), **_config.CONFIG.get()}


def secret_config_keys() -> frozenset[str]:
    """The ``namespace:key`` names set with ``--secret`` (``PULUMI_CONFIG_SECRET_KEYS``)."""
    env = pulumi.runtime.get_config_secret_keys_env()
    return frozenset(env).union(k for k in all_config() if pulumi.runtime.is_config_secret(k))


def real_engine() -> bool:
    """True only under ``pulumi preview``/``up``, where the SDK holds a gRPC stub to the engine's monitor.

    No public API says so: under ``set_mocks`` the monitor is a ``MockMonitor``, with
    no engine None. Anything but the real stub (or an SDK that moved it) is offline.
    """
    try:
        from pulumi.runtime.proto.resource_pb2_grpc import ResourceMonitorStub
        from pulumi.runtime.settings import get_monitor

        return isinstance(get_monitor(), ResourceMonitorStub)
    except Exception:
        return False
