"""Could a pod land on a node? kube-scheduler's filters that decide GPU placement, in pure Python."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from infra.workloads.placement import EKS_TO_K8S_EFFECT, GPU_RESOURCE
from infra.workloads.quantity import QuantityError, parse_quantity, whole_count

REPELLING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class Node:
    """A node as the scheduler sees it: labels, taints (Kubernetes spelling), allocatable."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    allocatable: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_node_group(
        cls,
        name: str,
        *,
        labels: Mapping[str, str],
        eks_taints: Sequence[Mapping[str, str]] = (),
        instance_type: str,
        arch: str,
        gpus: int = 0,
        sized: Mapping[str, int] | None = None,
    ) -> Node:
        """The node a managed node group brings up: its labels plus the ones EKS and kubelet add;
        ``sized``: its allocatable ``cpu`` (millicores) and ``memory`` (MiB), where known."""
        taints = [
            {"key": t["key"], "value": t.get("value", ""), "effect": EKS_TO_K8S_EFFECT[t["effect"]]}
            for t in eks_taints
        ]
        all_labels = {
            "kubernetes.io/arch": arch,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": instance_type,
            "eks.amazonaws.com/nodegroup": name,
            **labels,
        }
        allocatable = {**(sized or {}), **({GPU_RESOURCE: gpus} if gpus else {})}
        return cls(name=name, labels=all_labels, taints=tuple(taints), allocatable=allocatable)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    """Kubernetes' ToleratesTaint: key, effect and (for Equal) value must match."""
    if (toleration.get("effect") or "") not in ("", taint.get("effect")):
        return False  # an empty effect matches every effect
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if not key:
        return operator == "Exists"  # empty key + Exists tolerates everything
    if key != taint.get("key"):
        return False
    return operator == "Exists" or (
        operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")
    )


def admitted_tolerations(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The pod's tolerations after EKS's ExtendedResourceToleration admission plugin: a pod asking for
    an extended resource (``nvidia.com/gpu``) tolerates a ``NoSchedule`` taint of that name."""
    names: set[str] = set()
    for container in [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]:
        resources = container.get("resources") or {}
        for name in [*(resources.get("requests") or {}), *(resources.get("limits") or {})]:
            domain = name.split("/")[0] if "/" in name else ""
            if domain and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io"):
                names.add(name)
    implied = [{"key": n, "operator": "Exists", "effect": "NoSchedule"} for n in sorted(names)]
    return [*(pod_spec.get("tolerations") or []), *implied]


_INT64 = re.compile(r"^[+-]?[0-9]+$")


def _int64(text: str | None) -> int | None:
    """A label value as Go's ``strconv.ParseInt(v, 10, 64)`` reads it (not ``"1_0"``, spaces, past int64)."""
    if text is None or not _INT64.match(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def match_expression(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One NodeSelectorRequirement against a node's labels."""
    key, operator = expression["key"], expression["operator"]
    values = list(expression.get("values") or [])
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        node_value, bound = _int64(labels.get(key)), _int64(values[0] if values else None)
        if node_value is None or bound is None:
            return False
        return node_value > bound if operator == "Gt" else node_value < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def _term_matches(term: Mapping[str, Any], node: Node) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no objects
    return all(match_expression(e, node.labels) for e in expressions) and all(
        match_expression(f, {"metadata.name": node.name}) for f in fields
    )


def whole_gpus(container: Mapping[str, Any]) -> int:
    """``nvidia.com/gpu`` one container asks for (its limit, else its request)."""
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    return whole_count(limits.get(GPU_RESOURCE, requests.get(GPU_RESOURCE, 0)))


def _effective(pod_spec: Mapping[str, Any], per_container: Callable[[Mapping[str, Any]], Any]) -> Any:
    """What the scheduler counts for a pod: containers add up; init containers run one at a time,
    except sidecars (``restartPolicy: Always``), which keep theirs while later containers run."""
    sidecars = peak = 0
    for container in pod_spec.get("initContainers") or []:
        if container.get("restartPolicy") == "Always":
            sidecars += per_container(container)
        else:
            peak = max(peak, per_container(container) + sidecars)
    total = sum(per_container(c) for c in pod_spec.get("containers") or []) + sidecars
    return max(total, peak)


def gpu_limit(pod_spec: Mapping[str, Any]) -> int:
    """GPUs the pod needs, as the scheduler counts them (:func:`_effective`)."""
    return int(_effective(pod_spec, whole_gpus))


def request(pod_spec: Mapping[str, Any], resource: str) -> Fraction:
    """The pod's request of ``resource`` (``cpu`` in cores, ``memory`` in bytes) as NodeResourcesFit
    counts it: a container's request, else its limit (the API defaults one to the other)."""

    def one(container: Mapping[str, Any]) -> Fraction:
        resources = container.get("resources") or {}
        value = (resources.get("requests") or {}).get(resource, (resources.get("limits") or {}).get(resource))
        try:
            return parse_quantity(str(value)) if value is not None else Fraction(0)
        except QuantityError:  # not known yet (an Output), or refused by the API anyway
            return Fraction(0)

    return Fraction(_effective(pod_spec, one))


@dataclass(frozen=True)
class Verdict:
    """Whether a pod fits a node, and if not, every reason the scheduler would give."""

    fits: bool
    reasons: tuple[str, ...] = ()


def fits(pod_spec: Mapping[str, Any], node: Node) -> Verdict:
    """The filters' verdict: untolerated NoSchedule/NoExecute taints, nodeSelector and required
    affinity (terms ORed, expressions ANDed; none matches every node), GPUs against allocatable."""
    tolerations = admitted_tolerations(pod_spec)
    reasons = [
        f"untolerated taint {taint['key']}={taint.get('value', '')}:{taint['effect']}"
        for taint in node.taints
        if taint.get("effect") in REPELLING_EFFECTS and not any(tolerates(t, taint) for t in tolerations)
    ]
    if any(node.labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        reasons.append("nodeSelector does not match the node's labels")
    affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required and not any(_term_matches(term, node) for term in required.get("nodeSelectorTerms") or []):
        reasons.append("required node affinity does not match the node's labels")
    needed, allocatable = gpu_limit(pod_spec), node.allocatable.get(GPU_RESOURCE, 0)
    if needed > allocatable:
        reasons.append(f"needs {needed} {GPU_RESOURCE}, node has {allocatable}")
    reasons += too_big(pod_spec, node)
    return Verdict(fits=not reasons, reasons=tuple(reasons))


# Resources a node model may list beyond GPUs, in the units its allocatable holds them: cpu in
# millicores, memory in MiB (what infra/platform/allocatable.py computes).
SIZED = {"cpu": (1000, "m"), "memory": (Fraction(1, 1024 * 1024), "Mi")}


def too_big(pod_spec: Mapping[str, Any], node: Node) -> list[str]:
    """NodeResourcesFit for CPU and memory, where the node model lists them: one reason per resource."""
    reasons = []
    for resource, (scale, unit) in SIZED.items():
        if resource in node.allocatable:
            asked = request(pod_spec, resource) * scale
            if asked > node.allocatable[resource]:
                reasons.append(
                    f"requests {resource} {float(asked):g}{unit}, node offers {node.allocatable[resource]}{unit}"
                )
    return reasons


def pods_per_node(pod_spec: Mapping[str, Any], node: Node) -> int | None:
    """How many pods of ``pod_spec`` one ``node`` can hold, counting ``nvidia.com/gpu`` only: 0 when the
    pod cannot land there at all, ``None`` when it asks for no GPU (GPUs set no bound)."""
    needed = gpu_limit(pod_spec)
    if not fits(pod_spec, node).fits:
        return 0
    if needed == 0:
        return None
    return node.allocatable.get(GPU_RESOURCE, 0) // needed


def placeable_on(pod_spec: Mapping[str, Any], nodes: Sequence[Node]) -> list[str]:
    """Names of the nodes the pod fits, in the order given."""
    return [node.name for node in nodes if fits(pod_spec, node).fits]
