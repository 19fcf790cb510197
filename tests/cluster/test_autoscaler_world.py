"""The real Cluster Autoscaler in a world no kinder than AWS (issue 33).

Nodes offer what a real AL2023 node offers (nodeadm's reserves), GPUs come only once the device
plugin runs, DescribeNodegroup may fail, and the expander is judged by the autoscaler's own
decision line, with pods whose CPU and memory rule out least-waste ties.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from infra.tooling.offline import PLATFORM_ROOT, Run, run_project
from localcluster import autoscaling
from localcluster.autoscaling import Autoscaling
from localcluster.kube import Kube, wait_for
from tests.cluster.autoscaler_run import (
    INFERENCE,
    TRAINING,
    contract,
    events,
    hold,
    pod,
    pools_at_zero,
    running_pods,
    scenario,
    scenario_namespace,
    wait_desired,
)

# Fits both pools, and least-waste would also pick inference: only the decision line tells priority decided.
SIZED = {"cpu": "2", "memory": "4Gi"}


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(PLATFORM_ROOT, "dev")


@pytest.fixture
def namespace(kube: Kube, dev: Run) -> Iterator[str]:
    with pools_at_zero(kube, dev):
        yield scenario_namespace()


def chosen(run: Autoscaling) -> set[str]:
    """The groups the priority expander said it chose ("priority expander: <asg> chosen ...")."""
    found = set(re.findall(r"priority expander: (\S+) chosen as the highest available", autoscaling.log()))
    names = {seeded.asg: name for name, seeded in run.groups.items()}
    return {names.get(asg, asg) for asg in found}


def test_a_pod_that_fits_the_instance_but_not_a_real_node_scales_nothing_and_the_autoscaler_says_why(
    kube: Kube, dev: Run, namespace: str
) -> None:
    """A g5g.xlarge has 8 GiB; a real node offers pods 6584Mi. With the template at the instance's size
    the autoscaler started a node the pod could then not run on, paid for until scale-down."""
    too_big = pod("too-big", gpus=1, pool="inference", memory="7000Mi")
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[too_big]) as run:
        said = wait_for(
            "the autoscaler's NotTriggerScaleUp event",
            lambda: events(kube, namespace, "too-big", "NotTriggerScaleUp"),
            timeout=90,
        )
        assert "Insufficient memory" in said[0], said
        assert hold(run, 10)[INFERENCE] == 0


def test_with_describe_nodegroup_failing_the_asg_tags_alone_carry_labels_and_taints(
    kube: Kube, dev: Run, namespace: str
) -> None:
    """The documented fallback: the autoscaler cannot read the node group, the ASG's template tags still
    tell it the pool's label and taint, so the pod naming the pool scales it from zero."""
    tags_only = pod("tags-only", gpus=1, pool="inference")
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[tags_only], describe_nodegroup=False) as run:
        wait_desired(run, INFERENCE, 1)
        running_pods(kube, namespace, 1)
        assert "Failed to get labels from EKS DescribeNodegroup API" in autoscaling.log()
        assert hold(run, 10)[TRAINING] == 0


def test_a_one_gpu_pod_naming_no_pool_gets_the_cheapest_pool_by_the_priority_expanders_decision(
    kube: Kube, dev: Run, namespace: str
) -> None:
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[pod("any-pool", gpus=1, **SIZED)]) as run:
        wait_desired(run, INFERENCE, 1)
        assert chosen(run) == {INFERENCE}


def test_without_the_priority_configmap_the_expander_decides_nothing(
    kube: Kube, dev: Run, namespace: str
) -> None:
    """What makes the test above fail without the platform's ConfigMap: no decision line at all
    (priority.go BestOptions passes every option on when it cannot load its config)."""
    any_pool = pod("any-pool", gpus=1, **SIZED)
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[any_pool], priorities=False) as run:
        wait_for(
            "a scale-up",
            lambda: run.check() or run.desired(INFERENCE) + run.desired(TRAINING) == 1,
            timeout=90,
        )
        assert chosen(run) == set()


def _raw_two_gpu_pod() -> dict[str, Any]:
    """What a hand-written manifest may hold: the toleration, two GPUs, no pool, no GpuDeployment."""
    container = {
        "name": "m",
        "image": "registry.invalid/m:1",
        "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": SIZED},
    }
    spec = {"containers": [container], "tolerations": [contract().toleration()]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "raw-two"}, "spec": spec}


def test_without_the_guard_a_raw_two_gpu_pod_starts_a_time_sliced_node(
    kube: Kube, dev: Run, namespace: str
) -> None:
    """docs/platform.md: the template's 4 slots admit a 2-GPU pod, and inference ranks first, so the real
    autoscaler starts an inference node. On EKS its device plugin then refuses the container
    (failRequestsGreaterThanOne) again and again; the pack's gpus-beyond-a-sliced-pool rule flags the
    manifest before it is deployed, and GpuDeployment's affinity keeps its own pods off the pool."""
    with scenario(kube, dev, PLATFORM_ROOT, namespace, pending=[_raw_two_gpu_pod()]) as run:
        wait_desired(run, INFERENCE, 1)
        assert chosen(run) == {INFERENCE}
        assert hold(run, 10)[TRAINING] == 0
