"""Test helpers around ``localcluster.autoscaling``: the dev stack's GPU pools at zero, pods the
platform's way (``place_pod_spec``), and waits that fail naming the autoscaler if it died."""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from infra.tooling.offline import PLATFORM_ROOT, Run, load_project, platform_contract, run_project
from infra.workloads.placement import Placement
from infra.workloads.podspec import place_pod_spec
from localcluster import autoscaling
from localcluster.autoscaling import Autoscaling
from localcluster.kube import Kube, wait_for
from localcluster.nodes import node_manifests
from localcluster.registrar import PROVIDER_ID

INFERENCE, TRAINING = "gpu-platform-gpu-inference", "gpu-platform-gpu-training"
SCALE_UP_SECONDS = 90  # an upper bound: the autoscaler's loops, moto and kwok on a busy 2-core machine
HOLD_SECONDS = 5 * autoscaling.SCAN_INTERVAL_SECONDS  # five of the test run's loops
CONTAINER = {"name": "model", "image": "registry.invalid/model:1", "securityContext": {"runAsUser": 1000}}


def contract() -> Placement:
    return Placement.from_dict(platform_contract("dev"))


def region(project_dir: Any, stack: str = "dev") -> str:
    return load_project(project_dir, stack)[1]["aws:region"]


@contextlib.contextmanager
def pools_at_zero(kube: Kube, dev: Run) -> Iterator[None]:
    """The local cluster's mirrored GPU nodes removed (the pools start at zero), put back after."""
    gpu = [m for m in node_manifests(dev) if "nvidia.com/gpu" in m["status"]["capacity"]]
    for manifest in gpu:
        with contextlib.suppress(Exception):
            kube.core.delete_node(manifest["metadata"]["name"])
    try:
        yield
    finally:
        kube.register_nodes(gpu, "the mirrored GPU nodes back")


SCENARIOS = "autoscaling"
_scenarios = itertools.count(1)


def scenario_namespace() -> str:
    """A namespace name no earlier scenario of this worker used (``autoscaling-<n>``): the last
    scenario's may still be terminating (the namespace controller starts on it 5 s after the delete),
    and its name again would wait for that."""
    return f"{SCENARIOS}-{next(_scenarios)}"


def clear_left_behind(kube: Kube) -> None:
    """What a killed session's scenarios left on a control plane kept running, which every autoscaler
    after would see: their namespaces (pending pods) and the nodes the registrar made for moto's
    instances (``aws:///`` provider IDs; the mirrored nodes have none); and the mirrored GPU nodes
    ``pools_at_zero`` took away, put back as ``bin/local-cluster start`` made them."""
    left = re.compile(rf"{SCENARIOS}-\d+")
    for found in kube.core.list_namespace().items:
        if left.fullmatch(found.metadata.name) and found.status.phase == "Active":
            kube.delete_namespace(found.metadata.name, wait=False)
    for node in kube.nodes():
        if (node.spec.provider_id or "").startswith(PROVIDER_ID):
            kube.core.delete_node(node.metadata.name)
    kube.register_nodes(node_manifests(run_project(PLATFORM_ROOT, "dev")), "the mirrored nodes")


def pod(name: str, gpus: int, pool: str | None = None, **resources: str) -> dict[str, Any]:
    spec = place_pod_spec(
        {"containers": [{**CONTAINER, **_requests(resources)}]}, contract(), gpus=gpus, pool=pool
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def replica_set(manifest: dict[str, Any]) -> dict[str, Any]:
    """One replica of ``manifest`` (a :func:`pod`) owned by a ReplicaSet of its name, as a Deployment's pods are."""
    name, labels = manifest["metadata"]["name"], {"app": manifest["metadata"]["name"]}
    template = {"metadata": {"labels": labels}, "spec": manifest["spec"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
    }


def _requests(resources: dict[str, str]) -> dict[str, Any]:
    return {"resources": {"requests": dict(resources)}} if resources else {}


def wait_desired(run: Autoscaling, group: str, size: int, timeout: float = SCALE_UP_SECONDS) -> float:
    """Wait until ``group``'s desired capacity is ``size``; seconds waited. Fails naming a dead autoscaler."""
    start = time.monotonic()

    def reached() -> bool:
        run.check()
        return run.desired(group) == size

    # Looked at once a loop: the autoscaler changes a size at most that often, and each look is a moto call.
    every = autoscaling.SCAN_INTERVAL_SECONDS
    wait_for(f"{group} desired capacity {size} (now {run.desired(group)})", reached, timeout, every)
    return time.monotonic() - start


def hold(run: Autoscaling, seconds: float = HOLD_SECONDS) -> dict[str, int]:
    """Desired capacities after ``seconds`` of autoscaler loops (by default five of them)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run.check()
        time.sleep(1)
    return {group: run.desired(group) for group in run.groups}


def running_pods(
    kube: Kube, namespace: str, count: int, check: Callable[[], None] | None = None
) -> dict[str, str]:
    """Pod -> node once ``count`` pods are Running; ``check`` (a run's) fails the wait early."""

    def bound() -> dict[str, str] | None:
        if check is not None:
            check()
        pods = {
            p.metadata.name: p.spec.node_name for p in kube.pods(namespace) if p.status.phase == "Running"
        }
        return pods if len(pods) >= count else None

    return wait_for(f"{count} pods running in {namespace}", bound, timeout=SCALE_UP_SECONDS)


def events(kube: Kube, namespace: str, pod_name: str, reason: str) -> list[str]:
    found = kube.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod_name}").items
    return [e.message for e in found if e.reason == reason]


def start(
    dev: Run, kube: Kube, project_dir: Any, stack: str = "dev", **world: Any
) -> contextlib.AbstractContextManager[Autoscaling]:
    return autoscaling.running(dev, region(project_dir, stack), kube, **world)


@contextlib.contextmanager
def scenario(
    kube: Kube,
    run: Run,
    project_dir: Any,
    namespace: str,
    already_running: Sequence[dict[str, Any]] = (),
    pending: Sequence[dict[str, Any]] = (),
    **world: Any,
) -> Iterator[Autoscaling]:
    """The autoscaler on ``run``'s registrations, and a namespace for the test's pods, deleted while
    their nodes still exist (the pods go with it, none left on a node about to go).
    ``pending``: pods made once moto is seeded, waiting when the autoscaler comes up, as pods wait
    through a restart of it: a GPU pod's 30 s scale-up buffer (``unschedulablePodWithGpuTimeBuffer``,
    counted from its creation) then runs beside the autoscaler's start instead of after it.
    ``already_running``: objects whose pods (one each) run on the nodes ``sizes`` brings up before the
    autoscaler starts.
    ``world``: what :func:`localcluster.autoscaling.running` takes away (DescribeNodegroup, priorities)
    or starts with (``sizes``)."""
    made = False

    def delete() -> None:
        nonlocal made
        if made:  # once: a second delete of a Terminating namespace is refused
            made = False
            kube.delete_namespace(namespace, wait=False)

    def place(scaling: Autoscaling) -> None:
        for manifest in pending:
            kube.apply(manifest, namespace)
        for manifest in already_running:
            kube.apply(manifest, namespace)
        if already_running:
            running_pods(kube, namespace, len(already_running), scaling.registrar.check)

    with contextlib.ExitStack() as stack:
        stack.callback(delete)  # if the pods or the start fail after the namespace was made
        kube.namespace(namespace, pod_security="baseline")
        made = True
        autoscaler = stack.enter_context(start(run, kube, project_dir, before_start=place, **world))
        stack.callback(delete)  # before the nodes go
        yield autoscaler
