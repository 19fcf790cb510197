"""Shared test helpers: the offline engine, the cluster's Kubernetes version, sample specs."""

from __future__ import annotations

import faulthandler
import os
import sys
from collections.abc import Generator
from typing import Any, TextIO

import pytest

from infra.platform.config import DEFAULT_KUBERNETES_VERSION
from infra.tooling.offline import Run, run_program
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.scheduling import Node

KUBERNETES_VERSION = DEFAULT_KUBERNETES_VERSION

# Each pytest-xdist worker that runs cluster tests starts a control plane of its own (and its services
# and Pulumi state) in folders named for it. Set here, when pytest loads this first conftest, before
# tests/cluster/conftest.py or any test imports localcluster (whose folders are fixed at import).
# localcluster.processes.INSTANCE_VARIABLE, spelled out: importing it here would fix them too early.
if os.environ.get("PYTEST_XDIST_WORKER"):  # the controller's environment (inherited) names none
    os.environ["LOCALCLUSTER_INSTANCE"] = os.environ["PYTEST_XDIST_WORKER"]


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
    """Tests under tests/cluster/ are marked ``cluster``: they need a local control plane, which each
    worker that runs one starts for itself."""
    for item in items:
        if item.nodeid.startswith("tests/cluster/"):
            item.add_marker(pytest.mark.cluster)
    # stable: cluster tests first, the longest of them first of all
    items.sort(key=lambda item: (item.get_closest_marker("cluster") is None, _rank(item.nodeid)))


LONGEST_FIRST = (
    "tests/cluster/test_autoscaler.py::test_an_idle_node_goes_after_scale_down_unneeded_time_and_a_busy_one_stays",
    "tests/cluster/test_pulumi_consumers.py",
    "tests/cluster/test_mixed_pools.py",
    "tests/cluster/test_kueue_scale.py",
    "tests/cluster/test_kueue_lifecycle.py",
    "tests/cluster/test_policy_pack.py",
    "tests/cluster/test_kueue.py",
    "tests/cluster/test_package_environment.py",
    "tests/cluster/test_autoscaler.py::test_four_shared_gpu_pods_start_one_inference_node_and_a_fifth_a_second",
)
"""The cluster modules and autoscaler scenarios that take longest, longest first (1.5-4.5 min of one
worker each in the runs of docs/benchmarks.md, "the fast loop"): the run ends with its longest chain, so
these start at once and the shorter ones fill in beside them."""


def _rank(nodeid: str) -> int:
    """Where ``nodeid`` stands in LONGEST_FIRST: a module's test, or a scenario (parametrized or not)."""
    found = (i for i, p in enumerate(LONGEST_FIRST) if nodeid == p or nodeid.startswith((f"{p}::", f"{p}[")))
    return next(found, len(LONGEST_FIRST))


# Modules whose tests share nothing but their worker's moto, not even a module fixture worth keeping
# (each scenario empties moto and starts its own autoscaler): under ``--dist loadfile`` any worker
# takes any of their tests.
SPREAD_OVER_WORKERS = frozenset(
    {"tests/cluster/test_autoscaler.py", "tests/cluster/test_autoscaler_world.py"}
)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: a run with -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (bin/test): each module whole on one worker, so its module fixtures run once,
    except the modules above. (pytest-xdist 3.8's ``xdist_group`` marks do not reach pytest 9.2's
    node ids, so ``--dist loadgroup`` would not group at all.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    # In collection order, not by number of tests (xdist's default, which would leave the long
    # one-test scenarios for last): the cluster tests first (pytest_collection_modifyitems), their
    # waits beside each other, then the short CPU-bound modules filling in.
    config.option.loadscopereorder = False

    class ModulesAndScenarios(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module in SPREAD_OVER_WORKERS else module

    return ModulesAndScenarios(config, log)


@pytest.fixture
def run():
    """Run a program function on the offline engine and return what it declared."""

    def _run(program, **kwargs: Any) -> Run:
        return run_program(program, **kwargs)

    return _run


STDERR = pytest.StashKey[TextIO]()
"""A copy of the process's stderr from before pytest captures it: where the teardown guard's stacks go
(pytest points fd 2 at its capture file during a teardown, and that file dies with the worker)."""


def pytest_configure(config: pytest.Config) -> None:
    config.stash[STDERR] = os.fdopen(os.dup(sys.stderr.fileno()), "w")


def pytest_unconfigure(config: pytest.Config) -> None:
    config.stash[STDERR].close()


def _hang_seconds(config: pytest.Config) -> float:
    """pytest-timeout's limit (``--timeout``, else ``timeout`` in pyproject.toml); 0 without the plugin."""
    if not config.pluginmanager.has_plugin("timeout"):
        return 0.0
    return float(config.getoption("timeout") or config.getini("timeout") or 0)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    """The hang guard (pytest-timeout) for the teardown after a failure too: pytest-timeout stops its
    timer when a test fails (its ``pytest_exception_interact``, there for pdb), so a control plane that
    never stops after a failed test would run out CI's 90 minutes. Past the same time faulthandler
    prints every thread's stack and ends the worker, which pytest-xdist reports as crashed on this test."""
    seconds = _hang_seconds(item.config)
    if seconds > 0:
        faulthandler.dump_traceback_later(seconds, exit=True, file=item.config.stash[STDERR])
    try:
        return (yield)
    finally:
        faulthandler.cancel_dump_traceback_later()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under bin/test (EKS_GPU_NO_SKIPS=1) a skipped test fails the run: the suite runs whole."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if os.environ.get("EKS_GPU_NO_SKIPS") == "1" and skipped:
        reporter.write_line(f"{skipped} test(s) skipped: bin/test runs everything (pytest -rs says why)")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
