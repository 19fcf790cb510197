"""A workload's pod specs as the rules read them: where they are, their well-formed parts, and what is
malformed, in words."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from infra.workloads.placement import GPU_RESOURCE
from infra.workloads.quantity import QuantityError, whole_count
from infra.workloads.values import is_list

TOLERATION_FIELDS = ("key", "operator", "value", "effect")
CONTAINER_LISTS = ("initContainers", "containers")
# NodeSelectorRequirement operators (k8s.io/api core/v1 types.go NodeSelectorOperator): what
# scheduling.match_expression evaluates; pod affinity's fewer ones are podspec.SELECTOR_OPERATORS.
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _container(value: Any) -> bool:
    """Shaped like a container that asks for resources: ``{resources: {limits/requests: ...}}``."""
    return isinstance(value, Mapping) and isinstance(value.get("resources"), Mapping)


def _known_items(node: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    """``node``'s items whose values can be read. pulumi_policy's proxy raises on reading a value not
    known yet (its ``UnknownValueError``, which this plain module does not import): the walk steps
    around it, and a pod spec inside is judged once known."""
    for key in node:
        try:
            value = node[key]
        except Exception:  # see above: only the proxy's unknown values raise here
            continue
        yield key, value


def is_pod_spec(node: Any) -> bool:
    """A pod spec by its shape: it has ``containers`` (a Pod's spec, any pod template's spec, KServe's
    predictor with containers), or holds a container under another name (KServe's ``predictor.model``)."""
    if not isinstance(node, Mapping):
        return False
    return any(key == "containers" or _container(value) for key, value in _known_items(node))


def _walk(node: Any, path: str, found: list[tuple[str, Mapping[str, Any]]]) -> None:
    if is_pod_spec(node):
        found.append((path, node))
    elif isinstance(node, Mapping):
        for key, item in _known_items(node):
            _walk(item, f"{path}.{key}", found)
    elif is_list(node):
        for index, item in enumerate(node):
            _walk(item, f"{path}[{index}]", found)


def pod_specs(props: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Every pod spec in a Kubernetes object's ``spec`` (a PodTemplate's: ``template``), with its path."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    for field in ("spec", "template"):
        if props.get(field) is not None:
            _walk(props[field], field, found)
    return found


def _toleration_ok(toleration: Any) -> bool:
    return isinstance(toleration, Mapping) and all(
        isinstance(toleration.get(f), (str, type(None))) for f in TOLERATION_FIELDS
    )


def _terms_ok(affinity: Any) -> bool:
    """Is the required node affinity, if any, objects and lists where Kubernetes has them?"""
    if not isinstance(affinity, Mapping):
        return False
    node = affinity.get("nodeAffinity")
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, Mapping) else {}
    if (node is not None and not isinstance(node, Mapping)) or not isinstance(required or {}, Mapping):
        return False
    terms = (required or {}).get("nodeSelectorTerms") or []
    return is_list(terms) and all(
        isinstance(t, Mapping)
        and all(
            is_list(t.get(f) or [])
            and all(
                isinstance(e, Mapping)
                and "key" in e
                and "operator" in e
                and isinstance(e["key"], (str, type(None)))  # None: not known yet, judged once known
                and e["operator"] in (*NODE_SELECTOR_OPERATORS, None)
                and is_list(e.get("values") or [])
                and all(isinstance(v, (str, type(None))) for v in e.get("values") or [])
                for e in t.get(f) or []
            )
            for f in ("matchExpressions", "matchFields")
        )
        for t in terms
    )


def _gpus_ok(container: Mapping[str, Any]) -> bool:
    resources = container.get("resources")
    if resources is None:
        return True
    if not isinstance(resources, Mapping):
        return False
    for part in ("limits", "requests"):
        given = resources.get(part)
        if given is not None and not isinstance(given, Mapping):
            return False
        count = _map(given).get(GPU_RESOURCE)
        try:
            whole_count(count if count is not None else 0)  # None: not known yet; [] or "" is no quantity
        except QuantityError:
            return False
    return True


def pod_spec(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod spec with only its well-formed scheduling fields; the others are :func:`problems`."""
    pod = dict(pod)
    inline = [v for k, v in pod.items() if k != "containers" and _container(v)]
    if inline:
        given = pod.get("containers")
        pod["containers"] = [*(given if is_list(given) else []), *inline]
    selector = pod.get("nodeSelector")
    if selector is not None:
        pod["nodeSelector"] = {
            k: v for k, v in _map(selector).items() if isinstance(k, str) and isinstance(v, (str, type(None)))
        }
    if pod.get("tolerations") is not None:
        given = pod["tolerations"]
        pod["tolerations"] = [t for t in given if _toleration_ok(t)] if is_list(given) else []
    if pod.get("affinity") is not None and not _terms_ok(pod["affinity"]):
        pod.pop("affinity")
    for field in CONTAINER_LISTS:
        if pod.get(field) is not None:
            given = pod[field]
            ok = [c for c in given if isinstance(c, Mapping) and _gpus_ok(c)] if is_list(given) else []
            pod[field] = [_known_gpus(c) for c in ok]
    return pod


def _known_gpus(container: Mapping[str, Any]) -> Mapping[str, Any]:
    """The container without a GPU count not known yet (None): counted once known."""
    resources = _map(container.get("resources"))
    if all(_map(resources.get(p)).get(GPU_RESOURCE, 0) is not None for p in ("limits", "requests")):
        return container
    known = {
        p: {k: v for k, v in _map(resources.get(p)).items() if not (k == GPU_RESOURCE and v is None)}
        for p in ("limits", "requests")
    }
    return {**container, "resources": {**resources, **known}}


def problems(props: Mapping[str, Any]) -> list[str]:
    """What Kubernetes would refuse in each pod spec's scheduling fields and GPU requests, in words,
    each named by its path (``spec.template.spec.nodeSelector must be ...``)."""
    return [f"{path}.{problem}" for path, pod in pod_specs(props) for problem in _problems(pod)]


def _problems(pod: Mapping[str, Any]) -> Iterator[str]:
    selector = pod.get("nodeSelector")
    if selector is not None and not isinstance(selector, Mapping):
        yield f"nodeSelector must be a map of label to text, got {selector!r}"
    elif selector is not None:
        for key, value in selector.items():
            if value is not None and not isinstance(value, str):
                yield f"nodeSelector.{key} must be text, got {value!r}"
    given = pod.get("tolerations")
    if given is not None and not is_list(given):
        yield f"tolerations must be a list of {{key, operator, value, effect}}, got {given!r}"
    elif given is not None:
        for i, toleration in enumerate(given):
            if toleration is not None and not _toleration_ok(toleration):
                yield f"tolerations[{i}] must be an object of key, operator, value and effect as text, got {toleration!r}"
    if pod.get("affinity") is not None and not _terms_ok(pod["affinity"]):
        yield (
            "affinity.nodeAffinity must be objects and lists as Kubernetes has them "
            f"(nodeSelectorTerms: a list of {{matchExpressions: [{{key, operator, values}}]}}, operator one of "
            f"{', '.join(NODE_SELECTOR_OPERATORS)}, values text), got {pod['affinity']!r}"
        )
    for field in CONTAINER_LISTS:
        given = pod.get(field)
        if given is not None and not is_list(given):
            yield f"{field} must be a list of containers, got {given!r}"
            continue
        for i, container in enumerate(given or []):
            if not isinstance(container, Mapping):
                yield f"{field}[{i}] must be a container object, got {container!r}"
            elif not _gpus_ok(container):
                yield (
                    f"{field}[{i}].resources must hold limits and requests as maps of resource to a quantity "
                    f"({GPU_RESOURCE}: a whole number), got {container.get('resources')!r}"
                )


def workload_pod(props: Mapping[str, Any]) -> dict[str, Any]:
    """The well-formed parts of the first pod spec (``{}`` for none): a workload with one pod template."""
    found = pod_specs(props)
    return pod_spec(found[0][1]) if found else {}
