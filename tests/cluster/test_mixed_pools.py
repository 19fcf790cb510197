"""Node groups and Karpenter pools in one cluster, decided by both real provisioners at once.

The dev stack's node-group pools (``inference``, ``training``) plus the two Karpenter pools of
``localcluster.karpenter.POOLS`` (``burst``, ``batch``): one platform run, whose node groups the
real Cluster Autoscaler scales (moto as AWS, ``localcluster/autoscaling.py``) and whose NodePools
the real Karpenter core provisions (kwok provider, ``localcluster/karpenter.py``), both watching the
same local cluster and the same pending pods. Pods are placed as ``GpuDeployment`` places them
(``place_pod_spec`` with the run's contract). Every pod is one provisioner's (decision 0098).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from infra.tooling import pinned_chart
from infra.tooling.offline import PLATFORM_ROOT
from infra.workloads.placement import POOL_LABEL, Placement
from infra.workloads.podspec import place_pod_spec
from localcluster import karpenter
from localcluster.autoscaling import Autoscaling
from localcluster.kube import Kube
from tests.cluster.autoscaler_run import (
    CONTAINER,
    INFERENCE,
    TRAINING,
    hold,
    pools_at_zero,
    scenario,
    scenario_namespace,
)
from tests.cluster.test_karpenter import core, platform  # noqa: F401  (fixtures: the run, Karpenter's core)

GPU_GROUPS = (INFERENCE, TRAINING)
NODE_GROUP_LABEL = "eks.amazonaws.com/nodegroup"
PLACED_SECONDS = 180  # ten pods over several autoscaler loops, nodes registering, on a busy 2-core machine


@pytest.fixture
def namespace(kube: Kube, platform: tuple[Any, Any], core: karpenter.Controller) -> Iterator[str]:  # noqa: F811
    """The GPU pools at zero and no Karpenter node; the scenario's namespace comes and goes with it
    (``scenario``: the autoscaler, moto seeded from the same run, beside Karpenter's running core)."""
    with pools_at_zero(kube, platform[1]):
        yield scenario_namespace()
    karpenter.delete_nodeclaims(kube, core)


def _pod(contract: Placement, name: str, pool: str | None = None, *, tolerations: Any = ()) -> dict[str, Any]:
    pod = {"containers": [dict(CONTAINER)], **({"tolerations": list(tolerations)} if tolerations else {})}
    spec = place_pod_spec(pod, contract, gpus=1, pool=pool)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _placed(
    kube: Kube,
    namespace: str,
    names: list[str],
    run: Autoscaling,
    controller: karpenter.Controller,
    claims: list[str],
) -> dict[str, str]:
    """Pod -> node once every one of ``names`` runs; every NodeClaim seen meanwhile goes into ``claims``."""

    def running() -> dict[str, str] | None:
        run.check()
        claims.extend(c.metadata.name for c in karpenter.nodeclaims(kube) if c.metadata.name not in claims)
        pods = {p.metadata.name: p for p in kube.pods(namespace) if p.metadata.name in names}
        nodes = {name: p.spec.node_name for name, p in pods.items() if p.status.phase == "Running"}
        return nodes if len(nodes) == len(names) else None

    return karpenter.wait_until(f"{len(names)} pod(s) running", running, PLACED_SECONDS, controller)


def _grown(run: Autoscaling) -> dict[str, int]:
    return {group: size for group, size in hold(run).items() if group in GPU_GROUPS and size}


def _karpenter_verdict(kube: Kube, namespace: str, pod: str, controller: karpenter.Controller) -> str:
    """Karpenter's FailedScheduling event on ``pod``: why none of its NodePools could take it."""

    def said() -> str | None:
        events = kube.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}").items
        found = [
            e.message
            for e in events
            if e.reason == "FailedScheduling" and "Failed to schedule pod" in (e.message or "")
        ]
        return found[0] if found else None

    return karpenter.wait_until(f"Karpenter's verdict on {pod}", said, 60, controller)


# Each scenario's pods wait when the autoscaler starts (``scenario(pending=)``): their 30 s GPU
# scale-up buffer runs beside its start, as in tests/cluster/test_autoscaler.py. Karpenter's core
# runs throughout and sees them at once, as it would see pods waiting through an autoscaler restart.


def test_one_gpu_pod_naming_no_pool_gets_exactly_one_node_from_the_autoscaler(
    kube: Kube,
    platform: tuple[Any, Any],  # noqa: F811
    core: karpenter.Controller,  # noqa: F811
    namespace: str,
) -> None:
    settings, run = platform
    assert settings.node_group_pools and settings.karpenter_pools  # both kinds, else nothing here could fail
    anywhere = _pod(settings.contract, "anywhere")
    with scenario(kube, run, PLATFORM_ROOT, namespace, pending=[anywhere]) as autoscaler:
        claims: list[str] = []
        (node,) = _placed(kube, namespace, ["anywhere"], autoscaler, core, claims).values()
        assert claims == [], f"Karpenter launched {claims} for a pod the autoscaler serves"
        assert NODE_GROUP_LABEL in kube.core.read_node(node).metadata.labels
        assert sum(_grown(autoscaler).values()) == 1  # one node in all, held over five autoscaler loops
        assert karpenter.nodeclaims(kube) == []
        verdict = _karpenter_verdict(kube, namespace, "anywhere", core)  # Karpenter looked, and said no
        assert "did not tolerate taint" in verdict and "eks-gpu/provisioner=karpenter:NoSchedule" in verdict


def test_a_pod_naming_no_pool_that_tolerates_every_taint_still_gets_only_the_autoscalers_node(
    kube: Kube,
    platform: tuple[Any, Any],  # noqa: F811
    core: karpenter.Controller,  # noqa: F811
    namespace: str,
) -> None:
    """The provisioner taint keeps every other pod off Karpenter's nodes; a pod that tolerates every taint
    passes it, and only the node affinity the library gives a pod without a pool keeps it to the node groups."""
    tolerant = _pod(platform[0].contract, "tolerant", tolerations=[{"operator": "Exists"}])
    with scenario(kube, platform[1], PLATFORM_ROOT, namespace, pending=[tolerant]) as autoscaler:
        claims: list[str] = []
        (node,) = _placed(kube, namespace, ["tolerant"], autoscaler, core, claims).values()
        assert claims == [], f"Karpenter launched {claims} for a pod the autoscaler serves"
        assert NODE_GROUP_LABEL in kube.core.read_node(node).metadata.labels
        assert sum(_grown(autoscaler).values()) == 1
        assert karpenter.nodeclaims(kube) == []


def test_a_burst_of_ten_pods_naming_no_pool_gets_autoscaler_nodes_only(
    kube: Kube,
    platform: tuple[Any, Any],  # noqa: F811
    core: karpenter.Controller,  # noqa: F811
    namespace: str,
) -> None:
    names = [f"burst-{i}" for i in range(10)]
    burst = [_pod(platform[0].contract, name) for name in names]
    with scenario(kube, platform[1], PLATFORM_ROOT, namespace, pending=burst) as autoscaler:
        claims: list[str] = []
        placed = _placed(kube, namespace, names, autoscaler, core, claims)
        assert claims == [], f"Karpenter launched {claims} for pods the autoscaler serves"
        nodes = set(placed.values())
        assert all(NODE_GROUP_LABEL in kube.core.read_node(n).metadata.labels for n in nodes)
        grown = _grown(autoscaler)
        assert sum(grown.values()) == len(nodes), f"{grown}: a node of the autoscaler's idles"
        assert karpenter.nodeclaims(kube) == []


def test_a_pod_naming_a_karpenter_pool_gets_one_nodeclaim_no_asg_grows_and_the_device_plugin_runs_there(
    kube: Kube,
    platform: tuple[Any, Any],  # noqa: F811
    core: karpenter.Controller,  # noqa: F811
    namespace: str,
) -> None:
    settings, run = platform
    contract = settings.contract
    bursty = _pod(contract, "bursty", pool="burst")
    with scenario(kube, run, PLATFORM_ROOT, namespace, pending=[bursty]) as autoscaler:
        claims: list[str] = []
        (node_name,) = _placed(kube, namespace, ["bursty"], autoscaler, core, claims).values()
        node = kube.core.read_node(node_name)
        assert node.metadata.labels[POOL_LABEL] == "burst" and NODE_GROUP_LABEL not in node.metadata.labels
        assert {(t.key, t.value, t.effect) for t in node.spec.taints or []} >= {
            (contract.key, contract.value, "NoSchedule"),
            ("eks-gpu/provisioner", "karpenter", "NoSchedule"),
        }
        assert _grown(autoscaler) == {}  # the autoscaler leaves the pod to Karpenter
        assert len(karpenter.nodeclaims(kube)) == 1
        _device_plugin_runs_on(kube, run, node_name)


def _device_plugin_runs_on(kube: Kube, run: Any, node: str) -> None:
    """The real chart with the run's values: the DaemonSet controller puts a plugin pod on ``node``."""
    (release,) = [
        r for r in run.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "nvidia-device-plugin"
    ]
    namespace = release.inputs["namespace"]
    objects = pinned_chart.render(
        release.inputs["values"], release=release.inputs["name"], namespace=namespace
    )
    kube.namespace(namespace, pod_security="privileged")  # the plugin mounts host paths, as on EKS
    apps = client.AppsV1Api(kube.api)
    try:
        kube.apply_all(objects, namespace)

        def on_node() -> bool:
            ds = apps.read_namespaced_daemon_set("nvidia-device-plugin", namespace)
            return ds.status.observed_generation == ds.metadata.generation and any(
                p.spec.node_name == node
                for p in kube.pods(namespace, "app.kubernetes.io/name=nvidia-device-plugin")
            )

        karpenter.wait_until(f"a device plugin pod on the Karpenter node {node}", on_node, 60)
    finally:
        kube.delete_namespace(namespace)
