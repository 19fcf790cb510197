"""Shared test helpers: the offline engine, the cluster's Kubernetes version, sample specs."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import DEFAULT_KUBERNETES_VERSION
from infra.offline import Run, run_program

KUBERNETES_VERSION = DEFAULT_KUBERNETES_VERSION


def deployment_spec(**pod: Any) -> dict[str, Any]:
    """A minimal Deployment spec (Kubernetes form) whose pod spec is ``pod``."""
    pod.setdefault("containers", [{"name": "model", "image": "nvcr.io/nvidia/tritonserver:24.08-py3"}])
    return {
        "selector": {"matchLabels": {"app": "inference"}},
        "template": {"metadata": {"labels": {"app": "inference"}}, "spec": pod},
    }


@pytest.fixture
def run():
    """Run a program function on the offline engine and return what it declared."""

    def _run(program, **kwargs: Any) -> Run:
        return run_program(program, **kwargs)

    return _run
