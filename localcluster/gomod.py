"""Files shipped inside pinned Go modules (charts, kwok's stages), from the Go module cache.

``go mod download -json`` in the folder whose go.mod pins the module returns its
directory, downloading it first (checked against go.sum) when the cache lacks it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Where localcluster/build puts the Go builds (helm, kube-apiserver, ...): no heavy imports here,
# so infra.tooling (and the policy pack) can find helm.
CACHE = Path(os.environ.get("LOCALCLUSTER_CACHE", HERE.parent / ".cache" / "localcluster"))
BIN = CACHE / "bin"
# A download from an unreachable proxy must not hang a `pulumi preview` that renders a chart.
DOWNLOAD_TIMEOUT = 300


@functools.cache
def module_dir(pins: str, module: str) -> Path:
    """Where the module cache holds ``module`` at the version ``localcluster/<pins>/go.mod`` pins."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", module],
        cwd=HERE / pins,
        check=True,
        capture_output=True,
        text=True,
        timeout=DOWNLOAD_TIMEOUT,
    ).stdout
    return Path(json.loads(out)["Dir"])


def pinned_version(pins: str, module: str) -> str:
    """The version ``localcluster/<pins>/go.mod`` requires ``module`` at, as written there."""
    for line in (HERE / pins / "go.mod").read_text().splitlines():
        parts = line.replace("require", "").split()
        if len(parts) >= 2 and parts[0] == module:
            return parts[1]
    raise LookupError(f"{module} is not pinned in localcluster/{pins}/go.mod")
