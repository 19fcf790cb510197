"""Faults around the autoscaler runs: each fails naming the component and leaves no autoscaler and no
node behind (moto, shared by a control plane's runs, ends with it)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

from infra.tooling.offline import PLATFORM_ROOT, Run, run_project
from infra.workloads.placement import GPU_RESOURCE
from localcluster import autoscaling, services
from localcluster.cluster import HOST, ClusterError, free_port
from localcluster.kube import Kube
from localcluster.nodes import node_manifests, node_object
from localcluster.registrar import PROVIDER_ID, provider_id
from tests.cluster.autoscaler_run import (
    INFERENCE,
    SCENARIOS,
    clear_left_behind,
    pod,
    pools_at_zero,
    region,
    scenario_namespace,
    start,
    wait_desired,
)

NAMESPACE = "autoscaling-faults"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(PLATFORM_ROOT, "dev")


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind((HOST, 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture(autouse=True)
def no_moto_yet() -> None:
    """Each fault starts with no moto: the one earlier runs on this control plane share is stopped."""
    services.stop(autoscaling.MOTO)


def _nothing_left() -> None:
    assert not services.alive(autoscaling.MOTO)
    assert not services.alive(autoscaling.AUTOSCALER)


def test_moto_on_a_taken_port_fails_naming_it(taken_port: int) -> None:
    with pytest.raises(ClusterError, match=r"^moto exited during start-up") as caught:
        autoscaling.start_moto(taken_port)
    assert "Address already in use" in str(caught.value)
    _nothing_left()


def test_the_autoscaler_is_not_started_when_moto_does_not_answer(kube: Kube, dev: Run) -> None:
    silent = f"http://{HOST}:{free_port()}"
    with pytest.raises(ClusterError, match=rf"^moto \(the AWS emulator\) does not answer at {silent}"):
        autoscaling.start_autoscaler(autoscaling.autoscaler_values(dev), silent, region(PLATFORM_ROOT))
    _nothing_left()


def test_the_autoscaler_on_a_taken_port_fails_naming_it(kube: Kube, dev: Run, taken_port: int) -> None:
    endpoint = autoscaling.start_moto()
    try:
        with pytest.raises(ClusterError, match=r"^cluster-autoscaler exited during start-up") as caught:
            autoscaling.start_autoscaler(
                autoscaling.autoscaler_values(dev), endpoint, region(PLATFORM_ROOT), taken_port
            )
        assert "address already in use" in str(caught.value)
    finally:
        services.stop(autoscaling.MOTO)
    _nothing_left()


def test_a_crashed_autoscaler_is_reported_by_name_and_its_log(kube: Kube, dev: Run, tmp_path: Path) -> None:
    with pools_at_zero(kube, dev):
        kube.namespace(NAMESPACE, pod_security="baseline")
        try:
            with start(dev, kube, PLATFORM_ROOT) as run:
                os.kill(services._read()[autoscaling.AUTOSCALER]["pid"], signal.SIGKILL)
                kube.apply(pod("waits", gpus=1, pool="inference"), NAMESPACE)
                with pytest.raises(
                    ClusterError,
                    match=r"^cluster-autoscaler is not running; its log .*cluster-autoscaler\.log",
                ):
                    wait_desired(run, INFERENCE, 1)
        finally:
            kube.delete_namespace(NAMESPACE, wait=False)
    assert not services.alive(autoscaling.AUTOSCALER)
    assert not [n for n in kube.nodes() if (n.spec.provider_id or "").startswith(PROVIDER_ID)]


def test_what_a_killed_session_left_on_a_kept_control_plane_is_cleared_before_the_next(kube: Kube) -> None:
    """A scenario's namespace with its pending GPU pod and a node the registrar made, as a session killed
    mid-scenario leaves them: the next session (``kube`` finding the control plane running) clears both,
    and leaves a namespace that only looks like a scenario's."""
    left, kept = scenario_namespace(), f"{SCENARIOS}-kept"
    for name in (left, kept):
        kube.namespace(name, pod_security="baseline")
    kube.apply(pod("left-pending", gpus=1, pool="inference"), left)
    capacity = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    kube.create_node(node_object("left-node", {}, [], capacity, provider_id("z", "i-1")))
    manifests = node_manifests(run_project(PLATFORM_ROOT, "dev"))
    mirrored = {m["metadata"]["name"] for m in manifests}
    # A mirrored GPU node, as pools_at_zero takes them away for a scenario.
    taken = next(m["metadata"]["name"] for m in manifests if GPU_RESOURCE in m["status"]["capacity"])
    kube.core.delete_node(taken)
    try:
        clear_left_behind(kube)
        assert kube.pods(left) == []
        assert kube.core.read_namespace(left).status.phase == "Terminating"
        assert kube.core.read_namespace(kept).status.phase == "Active"
        names = {n.metadata.name for n in kube.nodes()}
        assert "left-node" not in names
        assert mirrored <= names, sorted(mirrored - names)
    finally:
        kube.delete_namespace(kept, wait=False)
        with contextlib.suppress(ApiException):
            kube.core.delete_node("left-node")
        kube.create_node(next(m for m in manifests if m["metadata"]["name"] == taken))
