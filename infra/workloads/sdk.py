"""What this package reads from the Pulumi SDK beyond ``pulumi.Config``, in one place."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Callable
from typing import Any

import pulumi.runtime

TESTED_UP_TO = "3.272.0"
"""The newest pulumi on which ``tests/workloads/test_sdk.py`` and the suite passed."""

REQUIRED: dict[str, tuple[str, ...]] = {
    "pulumi._types": (
        "unwrap_type",
        "is_input_type",
        "input_type_to_dict",
        "input_type_py_to_pulumi_names",
        "input_type_types",
    ),
    "pulumi.runtime.config": ("CONFIG",),
}
"""Every SDK internal this package reads, by module (no public API exists for any of them)."""


class SdkError(RuntimeError):
    """The installed pulumi lacks an internal this package reads; the message says which and what to do."""


@functools.cache  # what is found, once; what is not is looked up (and refused) again
def _internal(module: str, name: str) -> Any:
    """``module.name`` from the installed SDK, or an :class:`SdkError` naming it and the way out."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        version = importlib.metadata.version("pulumi")
        raise SdkError(
            f"eks-gpu-infra reads {module}.{name}, which the installed pulumi {version} does not have "
            f"(no public API does the same; checked up to pulumi {TESTED_UP_TO}). Install "
            f"'pulumi<={TESTED_UP_TO}', or an eks-gpu-infra release that supports pulumi {version}"
        ) from None


def __getattr__(name: str) -> Callable[..., Any]:
    """``pulumi._types``' naming functions (``sdk.unwrap_type`` ...), looked up when used, not at import."""
    if name not in REQUIRED["pulumi._types"]:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _internal("pulumi._types", name)


def missing() -> list[str]:
    """Internal names this module needs that the installed SDK lacks (empty when all is well)."""
    absent = []
    for module, names in REQUIRED.items():
        for name in names:
            try:
                _internal(module, name)
            except SdkError:
                absent.append(f"{module}.{name}")
    try:
        from pulumi.runtime.proto.resource_pb2_grpc import ResourceMonitorStub  # noqa: F401
        from pulumi.runtime.settings import get_monitor  # noqa: F401
    except ImportError as error:
        absent.append(str(error))
    return absent


def all_config() -> dict[str, Any]:
    """Every ``namespace:key`` the engine passed, including ones no program reads."""
    return {**pulumi.runtime.get_config_env(), **_internal("pulumi.runtime.config", "CONFIG").get()}


def secret_config_keys() -> frozenset[str]:
    """The ``namespace:key`` names set with ``--secret`` (``PULUMI_CONFIG_SECRET_KEYS``)."""
    env = pulumi.runtime.get_config_secret_keys_env()
    return frozenset(env).union(k for k in all_config() if pulumi.runtime.is_config_secret(k))


def real_engine() -> bool:
    """True only under ``pulumi preview``/``up``, where the SDK holds a gRPC stub to the engine's monitor."""
    try:
        from pulumi.runtime.proto.resource_pb2_grpc import ResourceMonitorStub
        from pulumi.runtime.settings import get_monitor

        return isinstance(get_monitor(), ResourceMonitorStub)
    except Exception:
        return False
