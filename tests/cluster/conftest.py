"""The local control plane for the tests that need real Kubernetes (``-m cluster``).

One cluster per test session: started here unless already running (then left
running), stopped at the end if this session started it. Each test works in
namespaces of its own and removes any node it adds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from infra.tooling.offline import PLATFORM_ROOT, run_project
from localcluster import cluster as local
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack
from tests.cluster.autoscaler_run import clear_left_behind

ROOT = local.ROOT
STAND_IN = ROOT / "localcluster" / "platform-stack"
PLATFORM_STACK = "local"


@pytest.fixture(scope="session")
def kube() -> Iterator[Kube]:
    running = local.status()
    started = not (running and all(running.values()))
    if started:
        result = subprocess.run(
            [sys.executable, "-m", "localcluster", "start"], cwd=ROOT, capture_output=True, text=True
        )
        if result.returncode != 0:
            local.stop(lambda _: None)  # whatever did start
            pytest.fail(f"bin/local-cluster start failed:\n{result.stdout}\n{result.stderr}")
    kube = Kube(local.KUBECONFIG)
    if not started:  # one kept running: clear what a killed session's scenarios may have left on it
        clear_left_behind(kube)
    yield kube
    if started:
        local.stop(lambda _: None)


@pytest.fixture(scope="session")
def platform(kube: Kube) -> Iterator[Stack]:
    """The stand-in platform stack the consumer stacks reference (``organization/eks-gpu-platform/local``).

    Its outputs are written from the dev platform program's exports and the local cluster's
    kubeconfig, never hand-copied (localcluster/platform-stack/Pulumi.yaml).
    Each control plane gets its own copy of the project (in its run folder), so that workers
    beside each other never read one another's kubeconfig.
    """
    exports = run_project(PLATFORM_ROOT, "dev").stack_outputs
    config = {
        "eks-gpu-platform:placement": exports["placement"],
        "eks-gpu-platform:kubeconfig": local.KUBECONFIG.read_text(),
    }
    project = local.RUN / "platform-stack"
    project.mkdir(exist_ok=True)
    shutil.copy(STAND_IN / "Pulumi.yaml", project)
    (project / f"Pulumi.{PLATFORM_STACK}.yaml").write_text(yaml.safe_dump({"config": config}))
    stack = Stack(project, PLATFORM_STACK)
    stack.init()
    stack.up()
    yield stack
    stack.destroy()
    stack.remove()


@pytest.fixture(scope="module")
def controller(kube: Kube) -> Iterator[Any]:
    """Kueue's real controller as the platform configures it for the dev stack's teams, one per module that
    asks (the Kueue modules run on workers of their own side by side: their webhook ports differ)."""
    from localcluster import kueue_world as world
    from localcluster.kueue import running

    _, run = world.platform({})
    with running(kube, world.chart_values(run), local.KUBECONFIG) as started:
        yield started
