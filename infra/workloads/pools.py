"""Which GPU nodes a pod may land on: the pools that can give it its GPUs, and required affinity.

Pure, on a pod spec in Kubernetes' form (UNKNOWN allowed); :mod:`infra.workloads.podspec` calls it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.workloads.placement import (
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    KARPENTER,
    POOL_LABEL,
    PROVISIONER_TAINT_KEY,
    GpuPool,
    Placement,
    PlacementError,
)
from infra.workloads.scheduling import match_expression
from infra.workloads.values import UNKNOWN, PodSpecError, known

_REQUIRED_PATH = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
REQUIRED_TERMS = ".".join((*_REQUIRED_PATH, "nodeSelectorTerms"))


def required_terms(pod: Mapping[str, Any]) -> list[Any] | Any | None:
    """The required node affinity's terms ([] if it lists none), None without one, or UNKNOWN."""
    value: Any = pod
    for key in _REQUIRED_PATH:
        value = value.get(key)
        if not known(value):
            return UNKNOWN
        if not isinstance(value, Mapping):
            return None
    terms = value.get("nodeSelectorTerms")
    return terms if not known(terms) else list(terms or [])


def _is_empty_term(term: Any) -> bool:
    """A term with no expressions and no fields, which matches no node (component-helpers nodeaffinity)."""
    if term is None:
        return True
    if not known(term) or not isinstance(term, Mapping):
        return False
    expressions, fields = term.get("matchExpressions"), term.get("matchFields")
    return known(expressions) and known(fields) and not expressions and not fields


def _term_rejects(term: Any, labels: Mapping[str, str]) -> bool:
    """True if ``term`` fails on every node carrying ``labels`` (judged on those keys only)."""
    expressions = term.get("matchExpressions") if isinstance(term, Mapping) else UNKNOWN
    if not known(expressions):
        return False
    return any(
        known(e)
        and isinstance(e, Mapping)
        and e.get("key") in labels
        and all(known(v) for v in [e.get("operator"), *(e.get("values") or [])])
        and not match_expression(e, labels)
        for e in expressions or []
    )


def check_affinity(
    pod: Mapping[str, Any], label_sets: Sequence[Mapping[str, str]] | None, where: str
) -> None:
    """Refuse required node affinity that no GPU node (of the possible pools, if known) could satisfy."""
    terms = required_terms(pod)
    if not known(terms) or not terms:
        return  # no affinity, not known yet, or no terms (which the API refuses itself)
    if all(_is_empty_term(term) for term in terms):
        raise PodSpecError(
            f"{where}.{REQUIRED_TERMS} has only empty terms, and an empty term matches no node: the pod "
            "could never be scheduled. Give the term matchExpressions or matchFields, or remove "
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    if label_sets is None or any(
        not all(_is_empty_term(term) or _term_rejects(term, labels) for term in terms)
        for labels in label_sets
    ):
        return  # pools not known yet, or some term may still match a node of a pool
    shown = " or ".join(", ".join(f"{k}={v!r}" for k, v in labels.items()) for labels in label_sets)
    raise PodSpecError(
        f"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution excludes nodes labelled "
        f"{shown} in every term, so the pod could never land on a GPU node: "
        "remove the expressions on those labels"
    )


def _require_pools(pod: dict[str, Any], names: list[str]) -> None:
    """AND ``eks-gpu/pool In names`` into every required affinity term (or make the first term)."""
    terms = required_terms(pod)
    if terms == [] or not known(terms) or any(not known(t) for t in terms or []):
        return  # no terms: the API refuses that as written; not known: decided on the resolved spec
    expression = {"key": POOL_LABEL, "operator": "In", "values": names}
    new_terms = []
    for term in terms or [{}]:
        if terms and _is_empty_term(term):
            new_terms.append(term)  # matches no node; with the pool requirement it would match some
            continue
        term = dict(term or {})
        expressions = term.get("matchExpressions")
        if not known(expressions):
            return
        if expression not in (expressions or []):
            term["matchExpressions"] = [*(expressions or []), expression]
        new_terms.append(term)
    affinity = dict(pod.get("affinity") or {})
    node = dict(affinity.get("nodeAffinity") or {})
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    node["requiredDuringSchedulingIgnoredDuringExecution"] = {**required, "nodeSelectorTerms": new_terms}
    pod["affinity"] = {**affinity, "nodeAffinity": node}


@dataclass(frozen=True)
class GpuDemand:
    """What a pod asks of one node, as far as it is known now."""

    total: Any = UNKNOWN
    """The pod's ``nvidia.com/gpu`` as the scheduler counts it, or UNKNOWN."""
    floor: int = 0
    """A known lower bound of ``total``: what the containers known so far ask for."""
    largest: int = 0
    """The largest known request of a single container (init containers included)."""
    largest_where: str = ""
    """That container's field, for errors (``spec.containers[1]``)."""

    @property
    def least(self) -> int:
        """The pod's total if known, else its known lower bound."""
        return self.total if known(self.total) else self.floor


def _check_pool(pool: GpuPool, demand: GpuDemand) -> None:
    """Refuse a pod that no node of ``pool`` could run: too many GPUs per container or per pod."""
    if pool.shared and demand.largest > pool.max_gpus_per_container:
        raise PodSpecError(
            f"{demand.largest_where} asks for {demand.largest} {GPU_RESOURCE}, but pool {pool.name!r} "
            f"shares each GPU {pool.time_slicing_replicas} ways and its device plugin refuses a container's "
            "request above 1 (failRequestsGreaterThanOne, checked per container): give each container at "
            "most 1 (several containers may ask for 1 each) or choose another pool"
        )
    if demand.least > pool.max_gpus_per_pod:
        capacity = (
            f"{pool.gpus_per_node} GPU(s) per node shared {pool.time_slicing_replicas} ways, at most 1 per container"
            if pool.shared
            else f"it has {pool.gpus_per_node} GPUs per node"
        )
        raise PodSpecError(
            f"the pod asks for {demand.least} {GPU_RESOURCE} but no node of pool {pool.name!r} can give "
            f"more than {pool.max_gpus_per_pod} ({capacity}); ask for at most "
            f"{pool.max_gpus_per_pod} or choose another pool"
        )


def _chosen_pool(pod: dict[str, Any], pool: str | None) -> str | None:
    """The pool the user chose, by argument or by nodeSelector; a contradiction refused."""
    selector = pod.get("nodeSelector")
    named = selector.get(POOL_LABEL) if known(selector) and isinstance(selector, Mapping) else None
    if pool is None:
        return named if known(named) else None  # a pool chosen by hand is checked like the argument
    if not isinstance(pool, str):
        raise PodSpecError(f"pool must be a pool name (a string), got {pool!r}")
    if known(named) and named is not None and named != pool:
        raise PodSpecError(
            f"nodeSelector {POOL_LABEL}={named!r} contradicts pool={pool!r}: remove that entry or the pool argument"
        )
    if known(selector) and isinstance(selector, Mapping):
        pod["nodeSelector"] = {**selector, POOL_LABEL: pool}
    return pool


def merge_toleration(pod: dict[str, Any], toleration: Mapping[str, str]) -> None:
    """``toleration`` last; a user's copy of it (operator defaulted, nothing else) dropped."""
    tolerations = pod.get("tolerations")
    if not known(tolerations):
        return

    def same(t: Any) -> bool:
        written = {**t, "operator": t.get("operator") or "Equal"} if isinstance(t, Mapping) else {}
        return {k: v for k, v in written.items() if v is not None} == toleration

    pod["tolerations"] = [*(t for t in tolerations or [] if not same(t)), dict(toleration)]


def _provisioner_tolerations(pod: Mapping[str, Any]) -> list[int]:
    """Indexes of the user's tolerations keyed by the provisioner taint (those not known yet are skipped)."""
    tolerations = pod.get("tolerations")
    if not known(tolerations):
        return []
    return [
        i
        for i, t in enumerate(tolerations or [])
        if known(t) and isinstance(t, Mapping) and t.get("key") == PROVISIONER_TAINT_KEY
    ]


def _karpenter_names(placement: Placement, pools: Sequence[GpuPool] | None = None) -> str:
    return ", ".join(p.name for p in (placement.pools if pools is None else pools) if p.karpenter)


def _route(pod: dict[str, Any], placement: Placement, chosen: GpuPool | None) -> None:
    """One provisioner per pod: the provisioner toleration for a Karpenter pool's pod (in any cluster); a
    hand-written one refused where it would contradict the pool or a pool-less pod's routing (decision 0098)."""
    if chosen is not None and chosen.karpenter:
        merge_toleration(pod, placement.provisioner_toleration())
        return
    written = _provisioner_tolerations(pod)
    if not written or not placement.mixed:
        return  # harmless where no node carries the taint
    taint = f"{PROVISIONER_TAINT_KEY}={KARPENTER}:{GPU_TAINT_EFFECT}"
    if chosen is not None:
        raise PodSpecError(
            f"tolerations[{written[0]}] tolerates {taint}, the taint only Karpenter pools' nodes carry, but pool "
            f"{chosen.name!r} is a managed node group (Cluster Autoscaler): remove that toleration, or set pool "
            f"to a Karpenter pool ({_karpenter_names(placement)})"
        )
    raise PodSpecError(
        f"tolerations[{written[0]}] tolerates {taint}, the taint only Karpenter pools' nodes carry, but the pod "
        "names no pool, and where a cluster has both node-group and Karpenter pools a pod without a pool goes "
        "to the node groups only, so that Cluster Autoscaler and Karpenter never both launch a node for it: "
        f"set pool to a Karpenter pool ({_karpenter_names(placement)}) and drop the toleration (the pool "
        "adds it), or remove the toleration"
    )


def _fits(pool: GpuPool, demand: GpuDemand) -> bool:
    return demand.largest <= pool.max_gpus_per_container and demand.least <= pool.max_gpus_per_pod


def _limits(pools: Sequence[GpuPool]) -> str:
    return ", ".join(
        f"{p.name}: at most {p.max_gpus_per_pod} per pod" + (", 1 per container" if p.shared else "")
        for p in pools
    )


def _refuse_unfit(placement: Placement, demand: GpuDemand, candidates: Sequence[GpuPool]) -> None:
    """No pool the pod may use can give it its GPUs: name the Karpenter pools that could, else every limit."""
    asks = (
        f"the pod asks for {demand.least} {GPU_RESOURCE} (at most {demand.largest} in one container, "
        f"{demand.largest_where})"
    )
    karpenter = [p for p in placement.pools if p.karpenter and _fits(p, demand)]
    if placement.mixed and karpenter:
        raise PodSpecError(
            f"{asks}, which no node-group pool can give ({_limits(candidates)}); where a cluster has both "
            "node-group and Karpenter pools, a pod that names no pool goes to the node groups only, so that "
            "Cluster Autoscaler and Karpenter never both launch a node for it: set pool to a Karpenter pool "
            f"that can ({_karpenter_names(placement, karpenter)})"
        )
    raise PodSpecError(
        f"{asks} but no GPU pool can give that ({_limits(placement.pools)}); ask for fewer GPUs"
    )


def apply_pool(
    pod: dict[str, Any], placement: Placement, pool: str | None, demand: GpuDemand, placement_known: bool
) -> list[Mapping[str, str]] | None:
    """Pin or narrow the pod to pools that can give it its GPUs; return the possible node labels. With both
    kinds of pool, one provisioner acts for each pod (how: decision 0098, docs/components.md's pools row)."""
    pool = _chosen_pool(pod, pool)
    if not placement_known:
        return None
    if pool is not None:
        try:
            chosen = placement.pool(pool)
        except PlacementError as error:
            raise PodSpecError(f"pool: {error}") from None
        _check_pool(chosen, demand)
        _route(pod, placement, chosen)
        return [placement.pool_labels(pool)]
    if not placement.pools:
        return [placement.node_labels()]
    _route(pod, placement, None)
    candidates = [p for p in placement.pools if not (placement.mixed and p.karpenter)]
    fitting = [p for p in candidates if _fits(p, demand)]
    if not fitting:
        _refuse_unfit(placement, demand, candidates)
    if not known(demand.total):
        if placement.mixed:
            _require_pools(pod, [p.name for p in candidates])
        return None
    if len(fitting) < len(placement.pools):
        _require_pools(pod, [p.name for p in fitting])
    return [placement.pool_labels(p.name) for p in fitting]
