"""Scale from zero and back, decided by the real Cluster Autoscaler (1.33.0, built from its module).

moto's AWS is seeded from the dev stack's own registrations; the autoscaler runs with the
arguments the platform's Helm values render to; instances it asks for become kwok nodes the way
EKS and the device plugin make them (``localcluster/autoscaling.py``). Each test starts from the
GPU pools at zero and fails if the autoscaler decides otherwise than stated.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.tooling.offline import PLATFORM_ROOT, Run, run_project
from localcluster import autoscaling
from localcluster.kube import Kube, wait_for
from tests.cluster.autoscaler_run import (
    INFERENCE,
    TRAINING,
    events,
    hold,
    pod,
    pools_at_zero,
    replica_set,
    running_pods,
    scenario,
    scenario_namespace,
    wait_desired,
)
from tests.platform.conftest import dev_variant


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(PLATFORM_ROOT, "dev")


@pytest.fixture
def namespace(kube: Kube, dev: Run) -> Iterator[str]:
    """The GPU pools at zero; the namespace itself comes and goes with each run (``scenario``)."""
    with pools_at_zero(kube, dev):
        yield scenario_namespace()


def test_four_shared_gpu_pods_start_one_inference_node_and_a_fifth_a_second(
    kube: Kube, dev: Run, namespace: str
) -> None:
    slices = [pod(f"slice-{i}", gpus=1, pool="inference") for i in range(4)]
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=slices) as run:
        wait_desired(run, INFERENCE, 1)
        assert len(set(running_pods(kube, namespace, 4).values())) == 1  # all four on the one new node
        assert hold(run) == {INFERENCE: 1, TRAINING: 0, "gpu-platform-system": 2}
        kube.apply(pod("slice-4", gpus=1, pool="inference"), namespace)
        wait_desired(run, INFERENCE, 2)
        assert len(set(running_pods(kube, namespace, 5).values())) == 2


def test_a_two_gpu_pod_gets_a_two_gpu_node_never_a_time_sliced_one(
    kube: Kube, dev: Run, namespace: str
) -> None:
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[pod("two-gpus", gpus=2)]) as run:
        wait_desired(run, TRAINING, 1)
        assert hold(run)[INFERENCE] == 0
        (node,) = running_pods(kube, namespace, 1).values()
        assert kube.core.read_node(node).metadata.labels["eks-gpu/pool"] == "training"


def test_a_gpu_pod_without_the_toleration_scales_nothing_and_the_autoscaler_says_why(
    kube: Kube, dev: Run, namespace: str
) -> None:
    plain = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "untolerated"},
        "spec": {
            "containers": [{"name": "m", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
        },
    }
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[plain]) as run:
        said = wait_for(
            "the autoscaler's NotTriggerScaleUp event",
            lambda: events(kube, namespace, "untolerated", "NotTriggerScaleUp"),
            timeout=90,
        )
        assert "untolerated taint {GPU: true}" in said[0], said
        assert hold(run) == {INFERENCE: 0, TRAINING: 0, "gpu-platform-system": 2}


def test_a_pod_asking_ephemeral_storage_scales_an_idle_pool(kube: Kube, dev: Run, namespace: str) -> None:
    """Issue 26 item 6: the template has ephemeral-storage only from the pool's tag; without it the pod waits forever."""
    scratch = pod("scratch", gpus=1, pool="inference", **{"ephemeral-storage": "20Gi"})
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[scratch]) as run:
        wait_desired(run, INFERENCE, 1)
        running_pods(kube, namespace, 1)


def test_a_pool_at_its_max_size_grows_no_further(kube: Kube, dev: Run, namespace: str) -> None:
    """inference: maxSize 2, four slices a node: nine pods get two nodes and the ninth waits."""
    slices = [pod(f"slice-{i}", gpus=1, pool="inference") for i in range(9)]
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=slices) as run:
        wait_desired(run, INFERENCE, 2)
        running_pods(kube, namespace, 8)
        assert hold(run)[INFERENCE] == 2
        assert run.asg(INFERENCE)["MaxSize"] == 2


def test_an_idle_node_goes_after_scale_down_unneeded_time_and_a_busy_one_stays(
    kube: Kube, dev: Run, namespace: str, tmp_path: Path
) -> None:
    """scaleDownUnneededTime shortened through the stack's config, not code. The GPU pod is a ReplicaSet's,
    as a GpuDeployment's are, so the autoscaler may move it (a bare pod would pin its node): the busy
    node stays because once the idle one is gone its pod has nowhere else to go."""
    quick = dev_variant(tmp_path, {"scaleDownUnneededTime: 10m": "scaleDownUnneededTime: 10s"})
    busy_set = replica_set(pod("busy", gpus=1, pool="inference"))
    # Two nodes up at its start, one of them running the GPU pod.
    with scenario(kube, quick, tmp_path, namespace, [busy_set], sizes={INFERENCE: 2}) as run:
        running = running_pods(kube, namespace, 1)
        (busy,) = running.values()
        wait_desired(run, INFERENCE, 1, timeout=120)
        assert kube.core.read_node(busy).spec.unschedulable is not True
        assert running_pods(kube, namespace, 1) == running  # the same pod, never moved
        assert hold(run, 15)[INFERENCE] == 1  # the node with the GPU pod stays past the 10 s unneeded time


EQUAL_POOLS = {
    "    expander: least-waste": "    expander: priority",
    "instanceTypes: [g5g.16xlarge]": "instanceTypes: [g5g.xlarge, g5g.2xlarge]",
    "      capacityType: SPOT\n": "      capacityType: ON_DEMAND\n      sharing:\n        timeSlicing:\n          replicas: 4\n",
}


def test_the_priority_expander_with_equally_ranked_pools_has_its_config(
    kube: Kube, dev: Run, namespace: str, tmp_path: Path
) -> None:
    """Issue 26 item 8: without the ConfigMap the priority filter silently passes every option."""
    equal = dev_variant(tmp_path, EQUAL_POOLS)
    with scenario(kube, equal, tmp_path, namespace, pending=[pod("either", gpus=1)]) as run:
        wait_for(
            "a scale-up",
            lambda: run.check() or run.desired(INFERENCE) + run.desired(TRAINING) == 1,
            timeout=90,
        )
        assert "chosen as the highest available" in autoscaling.log()
