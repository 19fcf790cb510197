"""Apply the placement contract to a pod spec: pure, so every workload kind can use it."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from infra.workloads import security
from infra.workloads.placement import DEFAULT_PLACEMENT, GPU_RESOURCE, Placement, gpu_count
from infra.workloads.pools import GpuDemand, apply_pool, check_affinity, merge_toleration
from infra.workloads.quantity import QuantityError, whole_count
from infra.workloads.scheduling import gpu_limit, match_expression
from infra.workloads.values import UNKNOWN, PodSpecError, known
from infra.workloads.wire import WireError, output_path, to_wire

__all__ = ["UNKNOWN", "PodSpecError", "check_gpus", "known", "place_pod_spec", "place_template", "prepare"]


def check_gpus(gpus: object) -> int:
    """GPUs per pod: a whole number of at least 1 (the device plugin hands out whole GPUs)."""
    return gpu_count(gpus, "gpus", PodSpecError)


def as_placement(value: Placement | Mapping[str, Any] | None) -> Placement:
    """A :class:`Placement` from itself, its ``to_dict()`` form (a stack output) or ``None`` (default)."""
    return value if isinstance(value, Placement) else Placement.from_dict(value)


def prepare(
    spec: Any,
    typ: Any,
    caller: str,
    placement: Placement | Mapping[str, Any] | None,
    gpus: object,
    security_profile: object,
    where: str = "spec",
) -> tuple[Any, Placement, int | None, str | None]:
    """What each pure entry point does first: its settings checked, ``spec`` in Kubernetes' form."""
    checked = check_gpus(gpus) if gpus is not None else None
    profile = security.check_profile(security_profile)
    path = output_path(spec)
    if path is not None:
        raise PodSpecError(
            f"{where}{path} is a Pulumi Output: {caller} is pure and cannot wait for it; use the "
            f"component (GpuDeployment, GpuJob), or call it inside Output.apply: "
            f"pulumi.Output.from_input(spec).apply(lambda s: {caller}(s, ...))"
        )
    try:
        return to_wire(spec, typ), as_placement(placement), checked, profile
    except WireError as error:
        raise PodSpecError(f"{where}: {error}") from None


def _quantity(value: Any, where: str) -> int | Any:
    """An nvidia.com/gpu quantity as the API reads it (``"1000m"`` is one GPU, ``"500m"`` refused)."""
    if not known(value):
        return UNKNOWN
    try:
        return whole_count(value)  # a negative count is the API's to refuse
    except QuantityError:
        raise PodSpecError(
            f'{where} must be a whole number of GPUs (e.g. 1 or "1"), got {value!r}: '
            "the API refuses fractional extended resources"
        ) from None


def _merge_node_selector(pod: dict[str, Any], placement: Placement) -> None:
    selector = pod.get("nodeSelector")
    if not known(selector):
        return
    current = (selector or {}).get(placement.key)
    if known(current) and current is not None and current != placement.value:
        raise PodSpecError(
            f"nodeSelector {placement.key}={current!r} contradicts the GPU placement contract "
            f"({placement.key}={placement.value!r}): remove that entry or set it to {placement.value!r}"
        )
    pod["nodeSelector"] = {**(selector or {}), placement.key: placement.value}


def _container_gpus(container: dict[str, Any], where: str) -> int | Any | None:
    """Make a container's GPU request equal its limit; return its GPU count (None: not declared)."""
    resources = container.get("resources")
    if not known(resources):
        return UNKNOWN
    sides = {side: (resources or {}).get(side) for side in ("limits", "requests")}
    if not all(known(found) for found in sides.values()):
        return UNKNOWN
    sides = {side: dict(found or {}) for side, found in sides.items()}
    counts = {
        side: _quantity(found[GPU_RESOURCE], f"{where}.resources.{side}[{GPU_RESOURCE!r}]")
        for side, found in sides.items()
        if GPU_RESOURCE in found
    }
    if not counts:
        return None
    # Extended resources need requests == limits (a mismatch is the API's to refuse); the one
    # the user gave is copied to the other, so the pod asks exactly what the user wrote.
    given = sides["requests" if "requests" in counts else "limits"][GPU_RESOURCE]
    for found in sides.values():
        found.setdefault(GPU_RESOURCE, given)
    container["resources"] = {**(resources or {}), **sides}
    return counts.get("requests", counts.get("limits"))


def _counts(pod: dict[str, Any], field: str, where: str) -> list[tuple[str, Any, Any]] | Any:
    """Copy ``field``'s containers; (path, GPU count or None if not declared, restartPolicy) of each."""
    items = pod.get(field)
    if not known(items):
        return UNKNOWN
    if items is not None and not isinstance(items, list):
        raise PodSpecError(f"{where}.{field} must be a list of containers, got {items!r}")
    if items:
        pod[field] = items = [dict(c) if isinstance(c, Mapping) else c for c in items]
    found: list[tuple[str, Any, Any]] = []
    for index, container in enumerate(items or []):
        path = f"{where}.{field}[{index}]"
        if not known(container):
            found.append((path, UNKNOWN, UNKNOWN))
        elif not isinstance(container, dict):
            raise PodSpecError(f"{path} must be a container object, got {container!r}")
        else:
            found.append((path, _container_gpus(container, path), container.get("restartPolicy")))
    return found


def _demand(pod: dict[str, Any], init: Any, main: Any) -> GpuDemand:
    """What the pod asks of one node: the scheduler's total when all is known, else what is known."""
    inits = init if known(init) else []
    mains = main if known(main) else []
    declared = [(path, n) for path, n, _ in [*inits, *mains] if known(n) and n is not None]
    largest_where, largest = max(declared, key=lambda d: d[1], default=("", 0))
    main_total = sum(n for _, n, _ in mains if known(n) and n is not None)
    floor = max(main_total, *(n for _, n, _ in inits if known(n) and n is not None), 0)
    settled = (
        known(init)
        and known(main)
        and all(known(n) for _, n, _ in mains)
        and all(known(n) and known(policy) for _, n, policy in inits)
    )
    return GpuDemand(gpu_limit(pod) if settled else UNKNOWN, floor, largest, largest_where)


def _apply_gpus(pod: dict[str, Any], gpus: int | None, where: str) -> GpuDemand:
    """Set the containers' GPUs; return what the pod asks of one node."""
    init = _counts(pod, "initContainers", where)
    main = _counts(pod, "containers", where)
    if not known(main) or not main:
        return _demand(pod, init, main)  # no containers: the API refuses that as written
    if all(count is None for _, count, _ in main):  # so every container's resources are known
        first, wanted = pod["containers"][0], gpus if gpus is not None else 1
        resources = first.get("resources") or {}
        for side in ("limits", "requests"):
            resources = {**resources, side: {**(resources.get(side) or {}), GPU_RESOURCE: wanted}}
        first["resources"] = resources
        main = [(f"{where}.containers[0]", wanted, None)]
    counts = [count for _, count, _ in main if count is not None]
    if not all(known(n) for n in counts):
        return _demand(pod, init, main)
    total = sum(counts)
    if total < 1:
        raise PodSpecError(
            f"{where}: the containers declare {GPU_RESOURCE} {total} in total; a GPU workload needs at least 1"
        )
    if gpus is not None and gpus != total:
        raise PodSpecError(
            f"gpus={gpus} but the containers already declare {GPU_RESOURCE} {total} in total: "
            "drop the gpus argument or make the two agree"
        )
    return _demand(pod, init, main)


def _place(
    pod_spec: Any,
    placement: Placement,
    gpus: int | None,
    *,
    pool: str | None,
    profile: str | None,
    where: str,
    placement_known: bool = True,
) -> dict[str, Any]:
    """The merge itself, on Kubernetes' form with UNKNOWN allowed (what the components call)."""
    if not isinstance(pod_spec, Mapping):
        raise PodSpecError(f"{where} must be a pod spec mapping, got {type(pod_spec).__name__}")
    pod = copy.deepcopy(dict(pod_spec))
    _merge_node_selector(pod, placement)
    merge_toleration(pod, placement.toleration())
    demand = _apply_gpus(pod, gpus, where)
    check_affinity(pod, apply_pool(pod, placement, pool, demand, placement_known), where)
    security.apply_profile(pod, profile, where)
    return pod


def place_pod_spec(
    pod_spec: Any,
    placement: Placement | Mapping[str, Any] = DEFAULT_PLACEMENT,
    gpus: int | None = None,
    *,
    pool: str | None = None,
    security_profile: str | None = None,
    where: str = "spec",
) -> dict[str, Any]:
    """Return a copy of ``pod_spec`` (camelCase or snake_case dict, or ``PodSpecArgs``) that lands on
    GPU nodes only and asks for its GPUs, in Kubernetes' camelCase form."""
    from pulumi_kubernetes.core.v1 import PodSpecArgs

    pod, placed_on, gpus, profile = prepare(
        pod_spec, PodSpecArgs, "place_pod_spec", placement, gpus, security_profile, where
    )
    return _place(pod, placed_on, gpus, pool=pool, profile=profile, where=where)


def place_template(
    spec: dict[str, Any],
    placement: Placement,
    gpus: int | None,
    *,
    pool: str | None,
    profile: str | None,
    placement_known: bool = True,
    where: str = "spec",
) -> dict[str, Any] | Any:
    """Place ``spec.template`` (a pod template) of a workload; returns the new template (or UNKNOWN)."""
    template = spec.get("template")
    if template is None:
        raise PodSpecError(f"{where}.template is required: it is the pod template that runs on GPU nodes")
    if not known(template):
        return UNKNOWN
    if not isinstance(template, Mapping):
        raise PodSpecError(f"{where}.template must be a pod template mapping, got {template!r}")
    pod = template.get("spec")
    if pod is None:
        raise PodSpecError(f"{where}.template.spec is required: it must list the containers to run")
    unknown_fields = sorted(set(template) - {"metadata", "spec"})
    if unknown_fields:
        raise PodSpecError(
            f"{where}.template has unknown field(s) {unknown_fields}; allowed: ['metadata', 'spec']"
        )
    if not known(pod):
        return dict(template)
    pod_where = f"{where}.template.spec"
    placed = _place(
        pod, placement, gpus, pool=pool, profile=profile, where=pod_where, placement_known=placement_known
    )
    return {**template, "spec": placed}


SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def check_selector_matches(selector: Any, template: Any, kind: str) -> None:
    """Refuse a ``spec.selector`` that misses ``spec.template.metadata.labels``, as the API does."""
    metadata = template.get("metadata") if isinstance(template, Mapping) else UNKNOWN
    if not (known(selector) and isinstance(selector, Mapping) and known(metadata)):
        return
    labels = (metadata or {}).get("labels") if isinstance(metadata, Mapping | None) else UNKNOWN
    if not known(labels) or not all(map(known, (labels or {}).values())):
        return
    labels = dict(labels or {})
    match, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
    pairs = match.items() if isinstance(match, Mapping) else ()  # UNKNOWN is no Mapping
    misses = [f"matchLabels {k}={v!r}" for k, v in pairs if known(v) and labels.get(k) != v]
    for i, e in enumerate((expressions or []) if known(expressions) else []):
        parts = (e.get("key"), e.get("operator"), e.get("values")) if isinstance(e, Mapping) else (UNKNOWN,)
        if all(map(known, parts)) and parts[1] in SELECTOR_OPERATORS and not match_expression(e, labels):
            misses.append(f"matchExpressions[{i}] {dict(e)}")
    if misses:
        raise PodSpecError(
            f"spec.selector.{misses[0]} does not match spec.template.metadata.labels {labels}: "
            f"Kubernetes refuses a {kind} whose selector misses its pods; make the two agree"
        )
