"""Pods of the pinned charts as the tests look at them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.tooling.chart_models import DEVICE_PLUGIN_CHART, device_plugin_daemonsets, is_device_plugin


def device_plugin_pod(
    values: Mapping[str, Any], release: str = DEVICE_PLUGIN_CHART, namespace: str = DEVICE_PLUGIN_CHART
) -> dict[str, Any]:
    """The device plugin's pod spec as the pinned chart renders it with ``values``."""
    return next(
        p for p in device_plugin_daemonsets(values, release, namespace).values() if is_device_plugin(p)
    )
