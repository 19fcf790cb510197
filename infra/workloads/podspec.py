"""Apply the placement contract to a pod spec: pure, so every workload kind can use it.

Works on Kubernetes' own (camelCase) form of a pod spec as plain dicts, the form
Helm values, YAML manifests and ``infra.workloads.wire`` produce. A value may be
:data:`UNKNOWN` (a Pulumi Output not known yet): the checks that need it are
skipped, so the same code validates eagerly at declaration and finally on the
resolved spec.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from infra.workloads.placement import DEFAULT_PLACEMENT, GPU_RESOURCE, Placement
from infra.workloads.scheduling import expression_rejects_label


class _Unknown:
    """Stands for a value that is not known until the Pulumi engine resolves it."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


class PodSpecError(ValueError):
    """A workload that cannot honour the placement contract; the message says what to change."""


def known(value: Any) -> bool:
    return value is not UNKNOWN


DEPLOYMENT_SPEC_FIELDS = frozenset(
    {
        "minReadySeconds",
        "paused",
        "progressDeadlineSeconds",
        "replicas",
        "revisionHistoryLimit",
        "selector",
        "strategy",
        "template",
    }
)

# Secure defaults for GPU pods (issue: secure by default). The user's own values win
# key by key; GPU workloads need none of root, privilege escalation or capabilities:
# the device plugin hands the GPU device files to the container.
POD_SECURITY_DEFAULTS: Mapping[str, Any] = {
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
# Inference and training pods seldom talk to the Kubernetes API: no token unless asked for.
POD_DEFAULTS: Mapping[str, Any] = {"automountServiceAccountToken": False}
CONTAINER_SECURITY_DEFAULTS: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
# A rolling update that never needs a spare GPU node: take one pod down, then start one.
ROLLING_UPDATE_DEFAULTS: Mapping[str, Any] = {"maxSurge": 0, "maxUnavailable": 1}


def check_gpus(gpus: object, setting: str = "gpus") -> int:
    """GPUs per pod: a whole number of at least 1 (the device plugin hands out whole GPUs)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PodSpecError(f"{setting} must be a whole number >= 1 (GPUs per pod), got {gpus!r}")
    return gpus


def _quantity(value: Any, where: str) -> int | Any:
    """An nvidia.com/gpu quantity as an int; GPUs are not divisible."""
    if not known(value):
        return UNKNOWN
    if isinstance(value, bool):
        raise PodSpecError(f"{where} must be a whole number of GPUs, got {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    else:
        raise PodSpecError(f"{where} must be a whole number of GPUs, got {value!r}")
    if number < 0:
        raise PodSpecError(f"{where} must not be negative, got {value!r}")
    return number


def _merge_defaults(defaults: Mapping[str, Any], user: Any) -> Any:
    """User keys win; defaults fill only what the user left out."""
    if not known(user):
        return user
    if user is None:
        return copy.deepcopy(dict(defaults))
    if not isinstance(user, Mapping):
        return user
    merged = copy.deepcopy(dict(defaults))
    merged.update(user)
    return merged


def _merge_node_selector(pod: dict[str, Any], placement: Placement) -> None:
    selector = pod.get("nodeSelector")
    if not known(selector):
        return
    selector = dict(selector or {})
    current = selector.get(placement.key)
    if known(current) and current is not None and current != placement.value:
        raise PodSpecError(
            f"nodeSelector {placement.key}={current!r} contradicts the GPU placement contract "
            f"({placement.key}={placement.value!r}): remove that entry or set it to {placement.value!r}"
        )
    selector[placement.key] = placement.value
    pod["nodeSelector"] = selector


def _same_toleration(a: Any, b: Mapping[str, str]) -> bool:
    if not isinstance(a, Mapping):
        return False
    return (
        a.get("key") == b["key"]
        and (a.get("operator") or "Equal") == b["operator"]
        and a.get("value") == b["value"]
        and a.get("effect") == b["effect"]
        and a.get("tolerationSeconds") is None
    )


def _merge_tolerations(pod: dict[str, Any], placement: Placement) -> None:
    tolerations = pod.get("tolerations")
    if not known(tolerations):
        return
    contract = placement.toleration()
    kept = [t for t in list(tolerations or []) if not _same_toleration(t, contract)]
    pod["tolerations"] = [*kept, contract]


def _check_affinity(pod: Mapping[str, Any], placement: Placement) -> None:
    """Refuse required node affinity that no GPU node could satisfy."""
    affinity = pod.get("affinity")
    if not known(affinity) or not isinstance(affinity, Mapping):
        return
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not known(required) or not isinstance(required, Mapping):
        return
    terms = required.get("nodeSelectorTerms")
    if not known(terms) or not terms:
        return
    for term in terms:
        expressions = term.get("matchExpressions") if isinstance(term, Mapping) else UNKNOWN
        if not known(expressions) or not any(
            known(e) and expression_rejects_label(e, placement.key, placement.value)
            for e in expressions or []
        ):
            return  # this term may still match a GPU node
    raise PodSpecError(
        f"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution excludes nodes labelled "
        f"{placement.key}={placement.value!r} in every term, so the pod could never land on a GPU node: "
        "remove the expressions on that label"
    )


def _container_gpus(container: dict[str, Any], where: str) -> int | Any | None:
    """Make a container's GPU request equal its limit; return its GPU count (None: not declared)."""
    resources = container.get("resources")
    if not known(resources):
        return UNKNOWN
    resources = dict(resources or {})
    limits, requests = resources.get("limits"), resources.get("requests")
    if not known(limits) or not known(requests):
        return UNKNOWN
    limits, requests = dict(limits or {}), dict(requests or {})
    limit = (
        _quantity(limits[GPU_RESOURCE], f"{where}.resources.limits[{GPU_RESOURCE!r}]")
        if GPU_RESOURCE in limits
        else None
    )
    request = (
        _quantity(requests[GPU_RESOURCE], f"{where}.resources.requests[{GPU_RESOURCE!r}]")
        if GPU_RESOURCE in requests
        else None
    )
    if limit is None and request is None:
        return None
    if known(limit) and known(request) and limit is not None and request is not None and limit != request:
        raise PodSpecError(
            f"{where}: {GPU_RESOURCE} requests ({request}) must equal limits ({limit}); "
            "GPUs cannot be overcommitted, set both to the same number"
        )
    # Extended resources need requests == limits; whichever one the user gave is
    # copied to the other, so the pod asks exactly what the user wrote.
    if limit is None:
        limits[GPU_RESOURCE] = requests[GPU_RESOURCE]
    if request is None:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE]
    container["resources"] = {**resources, "limits": limits, "requests": requests}
    return request if request is not None else limit


def _apply_gpus(pod: dict[str, Any], gpus: int | None, where: str) -> None:
    containers = pod.get("containers")
    if not known(containers):
        return
    if not isinstance(containers, list) or not containers:
        raise PodSpecError(f"{where}.containers must list at least one container")
    pod["containers"] = containers = [dict(c) if isinstance(c, Mapping) else c for c in containers]
    declared: list[int | Any] = []
    for index, container in enumerate(containers):
        if not isinstance(container, dict):
            if known(container):
                raise PodSpecError(
                    f"{where}.containers[{index}] must be a container object, got {container!r}"
                )
            declared.append(UNKNOWN)
            continue
        count = _container_gpus(container, f"{where}.containers[{index}]")
        if count is not None:
            declared.append(count)
    if not declared:
        first = containers[0]
        if not isinstance(first, dict) or not known(first.get("resources")):
            return
        wanted = gpus if gpus is not None else 1
        resources = dict(first.get("resources") or {})
        for kind in ("limits", "requests"):
            if not known(resources.get(kind)):
                return
            resources[kind] = {**(resources.get(kind) or {}), GPU_RESOURCE: wanted}
        first["resources"] = resources
        return
    if not all(known(n) for n in declared):
        return
    total = sum(declared)
    if total < 1:
        raise PodSpecError(
            f"{where}: the containers declare {GPU_RESOURCE} 0 in total; a GPU workload needs at least 1"
        )
    if gpus is not None and gpus != total:
        raise PodSpecError(
            f"gpus={gpus} but the containers already declare {GPU_RESOURCE} {total} in total: "
            "drop the gpus argument or make the two agree"
        )


def _apply_security(pod: dict[str, Any]) -> None:
    for key, value in POD_DEFAULTS.items():
        pod.setdefault(key, value)
    pod["securityContext"] = _merge_defaults(POD_SECURITY_DEFAULTS, pod.get("securityContext"))
    containers = pod.get("containers")
    if not known(containers) or not isinstance(containers, list):
        return
    for container in containers:
        if isinstance(container, dict):
            container["securityContext"] = _merge_defaults(
                CONTAINER_SECURITY_DEFAULTS, container.get("securityContext")
            )


def place_pod_spec(
    pod_spec: Mapping[str, Any],
    placement: Placement = DEFAULT_PLACEMENT,
    gpus: int | None = None,
    *,
    security_defaults: bool = True,
    where: str = "spec",
) -> dict[str, Any]:
    """Return a copy of ``pod_spec`` that lands on GPU nodes only and asks for its GPUs.

    - the contract's nodeSelector entry and toleration are added once, every
      user entry kept; a contradicting selector or affinity is refused;
    - ``nvidia.com/gpu`` requests equal limits in every container that declares
      it; if none does, the first container gets ``gpus`` (default 1);
    - with ``security_defaults``, restricted pod/container securityContext
      defaults fill whatever the user did not set.
    """
    if gpus is not None:
        check_gpus(gpus)
    if not isinstance(pod_spec, Mapping):
        raise PodSpecError(f"{where} must be a pod spec mapping, got {type(pod_spec).__name__}")
    pod = copy.deepcopy(dict(pod_spec))
    _merge_node_selector(pod, placement)
    _merge_tolerations(pod, placement)
    _check_affinity(pod, placement)
    _apply_gpus(pod, gpus, where)
    if security_defaults:
        _apply_security(pod)
    return pod


def place_deployment_spec(
    spec: Any,
    placement: Placement = DEFAULT_PLACEMENT,
    gpus: int | None = None,
    *,
    security_defaults: bool = True,
    rolling_update_defaults: bool = True,
) -> dict[str, Any]:
    """Check that ``spec`` is a Deployment spec and place its pod template on GPU nodes."""
    if not isinstance(spec, Mapping):
        raise PodSpecError(f"spec must be a Deployment spec (a mapping), got {type(spec).__name__}")
    unknown_fields = sorted(set(spec) - DEPLOYMENT_SPEC_FIELDS)
    if unknown_fields:
        raise PodSpecError(
            f"spec is not a Deployment spec: unknown field(s) {unknown_fields}; "
            f"allowed: {sorted(DEPLOYMENT_SPEC_FIELDS)}"
        )
    if "selector" not in spec:
        raise PodSpecError("spec.selector is required: a Deployment selects its pods by label")
    template = spec.get("template")
    if template is None:
        raise PodSpecError("spec.template is required: it is the pod template that runs on GPU nodes")
    result = copy.deepcopy(dict(spec))
    if not known(template):
        return result
    if not isinstance(template, Mapping):
        raise PodSpecError(f"spec.template must be a pod template mapping, got {template!r}")
    pod = template.get("spec")
    if pod is None:
        raise PodSpecError("spec.template.spec is required: it must list the containers to run")
    _check_selector_matches(spec.get("selector"), template.get("metadata"))
    if known(pod):
        result["template"] = {
            **result["template"],
            "spec": place_pod_spec(
                pod, placement, gpus, security_defaults=security_defaults, where="spec.template.spec"
            ),
        }
    if rolling_update_defaults:
        result["strategy"] = _rolling_update(result.get("strategy"))
    return result


def _rolling_update(strategy: Any) -> Any:
    if not known(strategy):
        return strategy
    strategy = dict(strategy or {})
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return strategy  # Recreate: the user chose it; nothing to default
    strategy["type"] = "RollingUpdate"
    strategy["rollingUpdate"] = _merge_defaults(ROLLING_UPDATE_DEFAULTS, strategy.get("rollingUpdate"))
    return strategy


def _check_selector_matches(selector: Any, metadata: Any) -> None:
    """Kubernetes refuses a Deployment whose selector does not match its template's labels."""
    if not (known(selector) and isinstance(selector, Mapping) and known(metadata)):
        return
    match = selector.get("matchLabels")
    labels = (metadata or {}).get("labels") if isinstance(metadata, Mapping) else None
    if not known(match) or not match or not known(labels):
        return
    labels = labels or {}
    for key, value in match.items():
        if known(value) and known(labels.get(key, None)) and labels.get(key) != value:
            raise PodSpecError(
                f"spec.selector.matchLabels {key}={value!r} does not match spec.template.metadata.labels "
                f"({key}={labels.get(key)!r}): Kubernetes refuses a Deployment whose selector misses its pods"
            )
