"""Shared test helpers: the offline engine, the cluster's Kubernetes version, sample specs."""

from __future__ import annotations

from typing import Any

import pytest

from infra.platform.config import DEFAULT_KUBERNETES_VERSION
from infra.tooling.offline import Run, run_program
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.scheduling import Node

KUBERNETES_VERSION = DEFAULT_KUBERNETES_VERSION


def deployment_spec(**pod: Any) -> dict[str, Any]:
    """A minimal Deployment spec (Kubernetes form) whose pod spec is ``pod``."""
    pod.setdefault("containers", [{"name": "model", "image": "nvcr.io/nvidia/tritonserver:24.08-py3"}])
    return {
        "selector": {"matchLabels": {"app": "inference"}},
        "template": {"metadata": {"labels": {"app": "inference"}}, "spec": pod},
    }


def gpu_node(name: str = "gpu", placement: Placement = DEFAULT_PLACEMENT, **labels: str) -> Node:
    """A node of the GPU group: the contract's label and taint, one T4G."""
    return Node.from_node_group(
        name,
        labels={**placement.node_labels(), **labels},
        eks_taints=[placement.eks_taint()],
        instance_type="g5g.xlarge",
        arch="arm64",
        gpus=1,
    )


def system_node(name: str = "system", **labels: str) -> Node:
    """A node of the untainted system group."""
    return Node.from_node_group(name, labels=labels, instance_type="t4g.large", arch="arm64")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests under tests/cluster/ are marked ``cluster``: bin/test runs them in one process, after the
    others (which it spreads over workers), since they share one local control plane."""
    for item in items:
        if item.nodeid.startswith("tests/cluster/"):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture
def run():
    """Run a program function on the offline engine and return what it declared."""

    def _run(program, **kwargs: Any) -> Run:
        return run_program(program, **kwargs)

    return _run


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under bin/test (EKS_GPU_NO_SKIPS=1) a skipped test fails the run: the suite runs whole."""
    import os

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if os.environ.get("EKS_GPU_NO_SKIPS") == "1" and skipped:
        reporter.write_line(f"{skipped} test(s) skipped: bin/test runs everything (pytest -rs says why)")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
