"""Files shipped inside Go modules pinned by a folder's go.mod + go.sum, from the Go module cache."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

# A download from an unreachable proxy must not hang a `pulumi preview` that renders a chart.
DOWNLOAD_TIMEOUT = 300


class GoModuleUnavailable(RuntimeError):
    """The pinned module cannot be had here; the message says why and what to do."""


@functools.cache
def module_dir(pins: Path, module: str) -> Path:
    """Where the module cache holds ``module`` at the version ``pins/go.mod`` requires."""
    if shutil.which("go") is None:
        raise GoModuleUnavailable(
            f"Go is needed to fetch {module}@{pinned_version(pins, module)} (pinned in {pins / 'go.mod'}, "
            "checked against go.sum) from the Go module proxy: install Go 1.26 or newer"
        )
    try:
        out = subprocess.run(
            ["go", "mod", "download", "-json", module],
            cwd=pins,
            # A pins folder whose go line is newer than the installed Go (localcluster/karpenter: 1.26.9)
            # gets that toolchain from the module proxy, as localcluster/karpenter/build.sh builds with it.
            env={**os.environ, "GOTOOLCHAIN": "auto"},
            check=True,
            capture_output=True,
            text=True,
            timeout=DOWNLOAD_TIMEOUT,
        ).stdout
    except subprocess.CalledProcessError as error:
        detail = (error.stdout or error.stderr).strip()
        raise GoModuleUnavailable(f"`go mod download {module}` in {pins} failed: {detail}") from None
    except subprocess.TimeoutExpired:
        raise GoModuleUnavailable(
            f"`go mod download {module}` in {pins} did not finish in {DOWNLOAD_TIMEOUT} s"
        ) from None
    return Path(json.loads(out)["Dir"])


def pinned_version(pins: Path, module: str) -> str:
    """The version ``pins/go.mod`` requires ``module`` at, as written there."""
    for line in (pins / "go.mod").read_text().splitlines():
        parts = line.replace("require", "").split()
        if len(parts) >= 2 and parts[0] == module:
            return parts[1]
    raise LookupError(f"{module} is not pinned in {pins / 'go.mod'}")
