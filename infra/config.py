"""Typed, validated settings shared by the platform and its consumers."""

from __future__ import annotations

SUPPORTED_KUBERNETES_VERSIONS = ("1.32", "1.33", "1.34", "1.35")
DEFAULT_KUBERNETES_VERSION = "1.34"


class ConfigError(ValueError):
    """A setting with a value the platform refuses; the message names the key and what is allowed."""


def check_kubernetes_version(version: object, setting: str = "kubernetesVersion") -> str:
    if not isinstance(version, str) or version not in SUPPORTED_KUBERNETES_VERSIONS:
        raise ConfigError(
            f"{setting} must be one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)} (a quoted string), got {version!r}"
        )
    return version
