"""Where the checkout's Go builds go, and files shipped inside modules pinned under localcluster/.

No heavy imports here: the cluster scripts read kwok's stages through ``module_dir``.
"""

from __future__ import annotations

from pathlib import Path

from infra.tooling import gomod
from infra.tooling.pinned_chart import CHECKOUT_CACHE

HERE = Path(__file__).resolve().parent
CACHE = CHECKOUT_CACHE  # .cache/localcluster, or $LOCALCLUSTER_CACHE (localcluster/build writes there)
BIN = CACHE / "bin"


def module_dir(pins: str, module: str) -> Path:
    """Where the module cache holds ``module`` at the version ``localcluster/<pins>/go.mod`` pins."""
    return gomod.module_dir(HERE / pins, module)


def pinned_version(pins: str, module: str) -> str:
    """The version ``localcluster/<pins>/go.mod`` requires ``module`` at, as written there."""
    return gomod.pinned_version(HERE / pins, module)
