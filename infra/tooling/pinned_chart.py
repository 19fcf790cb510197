"""The NVIDIA device plugin's chart (and Kueue's) at the version the tooling pins, rendered by helm."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from infra.tooling.gomod import module_dir, pinned_version
from infra.tooling.manifests import KUEUE, KUEUE_PINS, yaml_documents

PINS = Path(__file__).resolve().parent / "chart-pins"
MODULE = "github.com/NVIDIA/k8s-device-plugin"
CHART = "deployments/helm/nvidia-device-plugin"
# Where a checkout of this repository builds its Go binaries (git-ignored; localcluster/build).
CHECKOUT_CACHE = Path(
    os.environ.get("LOCALCLUSTER_CACHE", Path(__file__).resolve().parents[2] / ".cache" / "localcluster")
)
HELM_ENV = "EKS_GPU_HELM"
RENDER_TIMEOUT = 120  # seconds: a render runs inside `pulumi preview`, which must not hang


class HelmNotFound(FileNotFoundError):
    """No helm to render with; the message lists where it looked."""


def version() -> str:
    """The chart version: the module's tag without its ``v``."""
    return pinned_version(PINS, MODULE).removeprefix("v")


def chart_dir() -> Path:
    return module_dir(PINS, MODULE) / CHART


def helm() -> Path:
    """The helm binary to render with: $EKS_GPU_HELM, else the checkout's build, else helm on PATH."""
    candidates = [os.environ.get(HELM_ENV), CHECKOUT_CACHE / "bin" / "helm", shutil.which("helm")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise HelmNotFound(
        f"no helm: looked at ${HELM_ENV} ({os.environ.get(HELM_ENV) or 'unset'}), "
        f"{CHECKOUT_CACHE / 'bin' / 'helm'} and PATH; in a checkout run `localcluster/build helm charts` "
        "(bin/preview and bin/setup do), elsewhere install helm or set $EKS_GPU_HELM"
    )


def render(
    values: Mapping[str, Any], *, release: str, namespace: str, chart: Path | None = None
) -> list[dict[str, Any]]:
    """``helm template`` of the pinned chart (or another local ``chart``) with ``values``: every object the
    release would install."""
    out = subprocess.run(
        [str(helm()), "template", release, str(chart or chart_dir()), "-n", namespace, "-f", "-"],
        input=yaml.safe_dump(dict(values)),
        check=True,
        capture_output=True,
        text=True,
        timeout=RENDER_TIMEOUT,
    ).stdout
    return yaml_documents(out)


def kueue_chart_dir() -> Path:
    """Kueue's chart (``charts/kueue``) at the version ``kueue-pins`` pins (infra/platform/kueue.py installs it)."""
    return module_dir(KUEUE_PINS, KUEUE) / "charts" / "kueue"


def kueue_version() -> str:
    """Kueue's pinned release, without its ``v``."""
    return pinned_version(KUEUE_PINS, KUEUE).removeprefix("v")
