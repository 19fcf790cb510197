"""The real charts at their pinned versions, rendered by the helm built from its Go module.

The NVIDIA device plugin's chart ships inside its Go module
(``deployments/helm/nvidia-device-plugin``); ``localcluster/charts/go.mod`` pins
the module and go.sum its checksum, so the chart comes from the Go module cache,
verified, with no Helm repository reached.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from localcluster.gomod import BIN, module_dir, pinned_version

DEVICE_PLUGIN_MODULE = "github.com/NVIDIA/k8s-device-plugin"
DEVICE_PLUGIN_CHART = "deployments/helm/nvidia-device-plugin"
RENDER_TIMEOUT = 120  # seconds: a render runs inside `pulumi preview`, which must not hang


def device_plugin_chart() -> Path:
    return module_dir("charts", DEVICE_PLUGIN_MODULE) / DEVICE_PLUGIN_CHART


def device_plugin_chart_version() -> str:
    """The chart version: the module's tag without its ``v``."""
    return pinned_version("charts", DEVICE_PLUGIN_MODULE).removeprefix("v")


def render(chart: Path, values: Mapping[str, Any], *, release: str, namespace: str) -> list[dict[str, Any]]:
    """``helm template`` with ``values``: every object the release would install, in order."""
    out = subprocess.run(
        [str(BIN / "helm"), "template", release, str(chart), "-n", namespace, "-f", "-"],
        input=yaml.safe_dump(dict(values)),
        check=True,
        capture_output=True,
        text=True,
        timeout=RENDER_TIMEOUT,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]
