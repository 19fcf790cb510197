"""The preview's scheduling model agrees with the real kube-scheduler on generated pod/node pairs.

Each case is one fake node and one pod pinned to it (``matchFields`` on the node's
name, ANDed into every affinity term), so the scheduler's answer for the pair is
"bound" or "unschedulable". The model (``infra.workloads.scheduling.fits``) must
give the same answer for the pod as written. Cases the API server refuses are
not scheduling questions and are left out (``test_api_refusals`` covers those).
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from infra.workloads.scheduling import Node, fits
from localcluster.kube import Kube, settled, wait_for
from localcluster.nodes import node_object

CASES = 520
SEED = 20261203
NAMESPACE = "differential"
KEYS = ("GPU", "eks-gpu/pool", "kubernetes.io/arch", "tier")
VALUES = {
    "GPU": ["true", "false"],
    "eks-gpu/pool": ["inference", "training"],
    "kubernetes.io/arch": ["arm64", "amd64"],
    # Go's ParseInt decides Gt/Lt: "1_0" and values past int64 are no numbers there.
    "tier": ["1", "5", "10", "1_0", "99999999999999999999"],
}
TAINTS = [
    {"key": "GPU", "value": "true", "effect": "NoSchedule"},
    {"key": "GPU", "value": "true", "effect": "NoExecute"},
    {"key": "GPU", "value": "false", "effect": "NoSchedule"},
    {"key": "GPU", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "", "effect": "NoSchedule"},
]
TOLERATIONS = [
    {"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"key": "GPU", "operator": "Equal", "value": "true"},
    {"key": "GPU", "operator": "Exists"},
    {"key": "GPU", "operator": "Exists", "effect": "NoExecute"},
    {"key": "GPU", "operator": "Equal", "value": "false", "effect": "NoSchedule"},
    {"operator": "Exists"},
    {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists"},
]
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
QUANTITIES = ["1", "2", "4", "1000m", "2e0", "0.9995", "3"]


def _expression(rng: random.Random) -> dict[str, Any]:
    operator = rng.choice(OPERATORS)
    key = "tier" if operator in ("Gt", "Lt") else rng.choice(KEYS)
    if operator in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": operator}
    if operator in ("Gt", "Lt"):
        return {"key": key, "operator": operator, "values": [rng.choice(["0", "3", "7", "20"])]}
    return {"key": key, "operator": operator, "values": rng.sample(VALUES[key], rng.randint(1, 2))}


def _gpus(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.3:
        return {}
    return {"resources": {"limits": {"nvidia.com/gpu": rng.choice(QUANTITIES)}}}


def generate(rng: random.Random, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """One (node, pod spec) pair; the pod spec is as a user would write it, not yet pinned."""
    labels = {k: rng.choice(VALUES[k]) for k in KEYS if rng.random() < 0.6}
    node = {
        "name": f"diff-{index}",
        "labels": labels,
        # The API takes one taint per (key, effect).
        "taints": list(
            {(t["key"], t["effect"]): t for t in rng.sample(TAINTS, rng.choice([0, 0, 1, 1, 2]))}.values()
        ),
        "gpus": rng.choice([0, 1, 2, 4]),
    }
    pod: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.invalid/x", **_gpus(rng)}]}
    if rng.random() < 0.4:
        pod["containers"].append({"name": "side", "image": "registry.invalid/x", **_gpus(rng)})
    if rng.random() < 0.25:
        init = {"name": "init", "image": "registry.invalid/x", **_gpus(rng)}
        if rng.random() < 0.5:
            init["restartPolicy"] = "Always"  # a sidecar: keeps its GPUs while the others run
        pod["initContainers"] = [init]
    if rng.random() < 0.6:
        pod["tolerations"] = rng.sample(TOLERATIONS, rng.randint(1, 3))
    if rng.random() < 0.5:
        pod["nodeSelector"] = {k: rng.choice(VALUES[k]) for k in rng.sample(KEYS[:3], rng.randint(1, 2))}
    if rng.random() < 0.5:
        terms = [
            {"matchExpressions": [_expression(rng) for _ in range(rng.randint(1, 2))]}
            for _ in range(rng.randint(1, 2))
        ]
        pod["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    return node, pod


def pinned(pod: dict[str, Any], node: str) -> dict[str, Any]:
    """The pod, allowed only on ``node``: its name ANDed into every required term."""
    pod = copy.deepcopy(pod)
    pin = {"key": "metadata.name", "operator": "In", "values": [node]}
    required = (
        pod.setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": [{}]})
    )
    for term in required["nodeSelectorTerms"]:
        term["matchFields"] = [pin]
    return pod


def _node(node: dict[str, Any]) -> dict[str, Any]:
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    if node["gpus"]:
        capacity["nvidia.com/gpu"] = str(node["gpus"])
    return node_object(node["name"], {**node["labels"], "differential": "true"}, node["taints"], capacity)


def model_verdict(node: dict[str, Any], pod: dict[str, Any]) -> bool:
    model_node = Node(
        node["name"],
        labels=node["labels"],
        taints=tuple(node["taints"]),
        allocatable={"nvidia.com/gpu": node["gpus"]},
    )
    return fits(pod, model_node).fits


@pytest.fixture(scope="module")
def cases(kube: Kube):
    rng = random.Random(SEED)
    pairs = [generate(rng, i) for i in range(CASES)]
    kube.core.delete_collection_node(label_selector="differential=true")  # a crashed run's
    kube.namespace(NAMESPACE, pod_security="baseline")
    for node, _ in pairs:
        kube.create_node(_node(node))

    def all_settled() -> bool:
        nodes = kube.nodes("differential=true")
        return len(nodes) == CASES and all(settled(n) for n in nodes)

    wait_for("the generated nodes to be Ready", all_settled, timeout=120, every=1)
    yield pairs
    kube.core.delete_collection_namespaced_pod(NAMESPACE, grace_period_seconds=0)
    kube.core.delete_collection_node(label_selector="differential=true")
    kube.delete_namespace(NAMESPACE, timeout=180)


def _real_verdicts(kube: Kube, pairs: list[tuple[dict, dict]]) -> dict[str, bool]:
    """Create every pinned pod; return pod name -> bound (True) or unschedulable (False)."""
    created = []
    for i, (node, pod) in enumerate(pairs):
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"case-{i}"},
            "spec": pinned(pod, node["name"]),
        }
        try:
            kube.core.create_namespaced_pod(NAMESPACE, body)
            created.append(f"case-{i}")
        except ApiException as error:
            if error.status != 422:
                raise

    def decided() -> dict[str, bool] | None:
        verdicts = {}
        for pod in kube.pods(NAMESPACE):
            if pod.spec.node_name:
                verdicts[pod.metadata.name] = True
            elif any(
                c.type == "PodScheduled" and c.reason == "Unschedulable" for c in pod.status.conditions or []
            ):
                verdicts[pod.metadata.name] = False
        return verdicts if len(verdicts) == len(created) else None

    return wait_for("the scheduler to decide every case", decided, timeout=120, every=1)


def test_the_model_agrees_with_kube_scheduler(kube: Kube, cases: list[tuple[dict, dict]]) -> None:
    real = _real_verdicts(kube, cases)
    assert len(real) >= 500, f"only {len(real)} of {CASES} cases were valid pods"
    disagreements = [
        (cases[int(name.split("-")[1])], bound)
        for name, bound in real.items()
        if model_verdict(*cases[int(name.split("-")[1])]) != bound
    ]
    assert not disagreements, f"{len(disagreements)} disagreements, first: {disagreements[:3]}"
