"""The guardrails on Kueue's objects and queued Jobs: stack rules over (type, name, props) triples.

Each sees the whole stack, since a queue, a flavor or a class is declared by one resource and
used by another; what the stack's placement contract lists (``placement.queues``) counts as
declared too, which is how a consumer stack learns the platform's queues. Where a stack shows
no declaration at all, nothing is judged: the pack cannot know another stack's queues.
Served through :data:`infra.tooling.policy_rules.RULES` (decision 0099).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from infra.platform.instance_types import ARM_NVIDIA
from infra.tooling.agents import NODE_GROUP, NODEPOOL, Resources, nodepool_template
from infra.tooling.node_group_props import labels
from infra.tooling.resource_keys import resource_key
from infra.workloads.placement import GPU_RESOURCE, POOL_LABEL, Placement
from infra.workloads.quantity import QuantityError, parse_quantity
from infra.workloads.queues import PRIORITY_CLASSES, PRIORITY_LABEL, QUEUE_LABEL

KUEUE = "kubernetes:kueue.x-k8s.io/"
JOB = "kubernetes:batch/v1:Job"
SCOPE_FIX = "select the team's namespace, e.g. {matchLabels: {kubernetes.io/metadata.name: <namespace>}}"


def _kind(resource_type: str, kind: str) -> bool:
    """A Kueue object of ``kind``, at any API version (v1beta1 and v1beta2 are both served)."""
    return resource_type.startswith(KUEUE) and resource_type.rsplit(":", 1)[-1] == kind


def _meta(props: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = props.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _named(resources: Resources, kind: str) -> set[str]:
    return {str(_meta(p).get("name")) for t, _, p in resources if _kind(t, kind) and _meta(p).get("name")}


def _jobs_labelled(resources: Resources, label: str) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """(resource, metadata, label value) of every Job carrying ``label``."""
    for t, n, p in resources:
        if t != JOB:
            continue
        found = (_meta(p).get("labels") or {}).get(label)
        if isinstance(found, str):
            yield resource_key(t, n), _meta(p), found


def queued_job_declared_queue(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """A Job labelled kueue.x-k8s.io/queue-name names a LocalQueue of its namespace that the stack
    or its placement declares; else it waits, suspended, forever."""
    declared = {
        (str(_meta(p).get("namespace") or "default"), str(_meta(p).get("name")))
        for t, _, p in resources
        if _kind(t, "LocalQueue")
    } | {(q.namespace, q.name) for q in placement.queues}
    if not declared:
        return []
    listed = ", ".join(f"{ns}/{name}" for ns, name in sorted(declared))
    return [
        (
            key,
            f"names queue {queue!r} in namespace {meta.get('namespace') or 'default'!r}, which no LocalQueue "
            f"declares (declared: {listed}): Kueue keeps it suspended forever; use your team's namespace and queue",
        )
        for key, meta, queue in _jobs_labelled(resources, QUEUE_LABEL)
        if (str(meta.get("namespace") or "default"), queue) not in declared
    ]


def cluster_queue_scoped(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Every ClusterQueue has a namespaceSelector and names only ResourceFlavors the stack declares."""
    flavors = _named(resources, "ResourceFlavor")
    found = []
    for t, n, p in resources:
        if not _kind(t, "ClusterQueue"):
            continue
        key = resource_key(t, n)
        spec = p.get("spec") if isinstance(p.get("spec"), Mapping) else {}
        selector = spec.get("namespaceSelector")
        if not selector:
            why = (
                "has no spec.namespaceSelector, so it admits no namespace's Jobs (Kueue: nil selects nothing)"
                if selector is None
                else "has spec.namespaceSelector {}, which selects every namespace: any Job there draws on "
                "this team's quota"
            )
            found.append((key, f"{why}; {SCOPE_FIX}"))
        named = [
            f.get("name")
            for group in spec.get("resourceGroups") or []
            for f in (group.get("flavors") or [] if isinstance(group, Mapping) else [])
            if isinstance(f, Mapping)
        ]
        unknown = [name for name in named if name not in flavors]
        if unknown:
            declared = ", ".join(sorted(flavors)) or "none"
            why = f"names flavor(s) {unknown} that the stack does not declare (declared: {declared})"
            found.append((key, f"{why}: Kueue keeps the queue inactive (FlavorNotFound)"))
    return found


def _gpus(value: Any) -> Fraction | None:
    try:
        return parse_quantity(str(value)) if value is not None else None
    except QuantityError:
        return None


def _reach(resources: Resources, placement: Placement, pool: str) -> int | None:
    """The most nvidia.com/gpu pool ``pool`` can have: its node groups' maxSize x GPUs x slices, its NodePools'
    GPU limit; None when the stack shows no bound for it."""
    replicas = next((p.time_slicing_replicas for p in placement.pools if p.name == pool), None)
    if replicas is None:
        return None  # a contract without the pool cannot say how many slices a GPU is
    total, seen = 0, False
    for t, _, p in resources:
        if t == NODE_GROUP and labels(p).get(POOL_LABEL) == pool:
            types = p.get("instanceTypes") or []
            size = (p.get("scalingConfig") or {}).get("maxSize")
            if not types or types[0] not in ARM_NVIDIA or not isinstance(size, int):
                return None
            total, seen = total + size * ARM_NVIDIA[types[0]].gpus * replicas, True
        elif t == NODEPOOL and nodepool_template(p)[0].get(POOL_LABEL) == pool:
            limit = _gpus(((p.get("spec") or {}).get("limits") or {}).get(GPU_RESOURCE))
            if limit is None:
                return None
            total, seen = total + int(limit), True
    return total if seen else None


def _gpu_quotas(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], Fraction]]:
    """A ClusterQueue spec's nominal GPU quotas: (flavor, its quota entry, GPUs)."""
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for quota in flavor.get("resources") or []:
                gpus = _gpus(quota.get("nominalQuota")) if quota.get("name") == GPU_RESOURCE else None
                if gpus is not None:
                    yield str(flavor.get("name")), quota, gpus


def _promised(resources: Resources, placement: Placement) -> Iterator[tuple[str, str, Fraction, Any, Any]]:
    """Each ResourceFlavor the ClusterQueues promise GPUs on: (key, pool, GPUs promised, what the pool can
    reach or None)."""
    promised: dict[str, Fraction] = {}
    for t, _, p in resources:
        if _kind(t, "ClusterQueue"):
            for name, _, gpus in _gpu_quotas(p.get("spec") or {}):
                promised[name] = promised.get(name, Fraction(0)) + gpus
    for t, n, p in resources:
        name = _meta(p).get("name")
        if _kind(t, "ResourceFlavor") and name in promised:
            pool = ((p.get("spec") or {}).get("nodeLabels") or {}).get(POOL_LABEL)
            reach = _reach(resources, placement, pool) if pool else None
            yield resource_key(t, n), pool, promised[name], reach


def flavor_quota_reachable(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """The nominal GPU quota the ClusterQueues promise on a flavor does not exceed what its pool can
    reach (maxSize x GPUs per node x slices): Kueue would admit Jobs whose pods stay Pending."""
    return [
        (
            key,
            f"is promised {promised} {GPU_RESOURCE} by the ClusterQueues' nominalQuota, but pool "
            f"{pool!r} can reach only {reach} (maxSize x GPUs per node x slices): Kueue would admit Jobs "
            "whose pods stay Pending; lower the quotas or raise the pool's maxSize",
        )
        for key, pool, promised, reach in _promised(resources, placement)
        if reach is not None and promised > reach
    ]


def priority_class_declared(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Every kueue.x-k8s.io/priority-class a Job uses names a WorkloadPriorityClass the stack or its
    platform declares, else Kueue cannot make its Workload and the Job stays suspended. Kueue's lookup:
    pkg/util/priority/priority.go."""
    declared = _named(resources, "WorkloadPriorityClass") | set(PRIORITY_CLASSES if placement.queues else ())
    if not declared:
        return []
    listed = ", ".join(sorted(declared))
    return [
        (key, f"uses priority class {name!r}, which is not declared (declared: {listed}); use one of them")
        for key, _, name in _jobs_labelled(resources, PRIORITY_LABEL)
        if name not in declared
    ]


def quota_lines(resources: Resources, placement: Placement) -> list[str]:
    """The preview's view of the teams: each ClusterQueue's namespace and quota per pool, then what the
    queues promise on each pool against what it can reach; empty without ClusterQueues."""
    lines = []
    for t, _, p in resources:
        if not _kind(t, "ClusterQueue"):
            continue
        spec = p.get("spec") or {}
        selector = ((spec.get("namespaceSelector") or {}).get("matchLabels") or {}).values()
        shares = []
        for name, quota, _ in _gpu_quotas(spec):
            limits = [f"{k} {quota[k]}" for k in ("borrowingLimit", "lendingLimit") if k in quota]
            shares.append(f"{name} {quota['nominalQuota']}" + (f" ({', '.join(limits)})" if limits else ""))
        where = ", ".join(selector) or "no namespace"
        lines.append(f"  {_meta(p).get('name')} (namespace {where}): {'; '.join(shares) or 'no GPU quota'}")
    for _, pool, promised, reach in _promised(resources, placement):
        lines.append(f"  pool {pool}: {promised} promised of {'?' if reach is None else reach} it can reach")
    return lines
