"""A node group's properties as the rules read them: the well-formed parts, and what is malformed, in words."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from infra.platform.node_pools import TEMPLATE
from infra.workloads.placement import EKS_TO_K8S_EFFECT, GPU_RESOURCE, K8S_TO_EKS_EFFECT
from infra.workloads.quantity import QuantityError, whole_count
from infra.workloads.values import as_whole, is_list

# NodegroupScalingConfig: the least each size may be (botocore eks service-2.json, "min").
SIZE_MINIMUMS = {"minSize": 0, "maxSize": 1, "desiredSize": 0}
EKS_EFFECTS = ", ".join(EKS_TO_K8S_EFFECT)
GPU_TAG = f"{TEMPLATE}/resources/{GPU_RESOURCE}"


def _well_formed_taint(taint: Any) -> bool:
    return (
        isinstance(taint, Mapping)
        and isinstance(taint.get("key"), str)
        and bool(taint["key"])
        and isinstance(taint.get("value", ""), (str, type(None)))
        and _effect(taint.get("effect")) in EKS_TO_K8S_EFFECT
    )


def _effect(value: Any) -> Any:
    """Text as given; anything else as its repr, so an unhashable value can be looked up and shown."""
    return value if isinstance(value, str) or value is None else repr(value)


def taints(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The node group's well-formed taints (EKS spelling); malformed ones are :func:`problems`."""
    given = props.get("taints")
    return [t for t in given if _well_formed_taint(t)] if is_list(given) else []


def labels(props: Mapping[str, Any]) -> dict[str, str]:
    """The node group's labels that are text to text; the others are :func:`problems`."""
    given = props.get("labels")
    if not isinstance(given, Mapping):
        return {}
    return {k: v for k, v in given.items() if isinstance(k, str) and isinstance(v, str)}


def instance_types(props: Mapping[str, Any]) -> list[str]:
    """The node group's instance type names that are text."""
    given = props.get("instanceTypes")
    return [t for t in given if isinstance(t, str)] if is_list(given) else []


def sizes(props: Mapping[str, Any]) -> dict[str, int]:
    """The node group's scalingConfig sizes that EKS would take (whole, at least their minimum)."""
    given = props.get("scalingConfig")
    if not isinstance(given, Mapping):
        return {}
    return {name: int(given[name]) for name in SIZE_MINIMUMS if _size_ok(name, given.get(name))}


def _size_ok(name: str, value: Any) -> bool:
    whole = as_whole(value)
    return whole is not None and whole >= SIZE_MINIMUMS[name]


def advertised_gpus(props: Mapping[str, Any]) -> int | None:
    """The GPUs a node group tells the autoscaler its nodes bring (``node-template/resources`` tag), if
    it does and the tag is a whole number."""
    tags = props.get("tags")
    given = tags.get(GPU_TAG) if isinstance(tags, Mapping) else None
    try:
        return whole_count(given) if given else None
    except QuantityError:
        return None


def _taint_problems(index: int, taint: Any) -> Iterator[str]:
    where = f"taints[{index}]"
    if taint is None:
        return
    if not isinstance(taint, Mapping):
        yield f"{where} must be an object with key, value and effect, got {taint!r}"
        return
    key, value, effect = taint.get("key", ""), taint.get("value"), _effect(taint.get("effect", ""))
    if key is not None and (not isinstance(key, str) or not key):
        yield f"{where}.key is missing" if key == "" else f"{where}.key must be text, got {key!r}"
    if value is not None and not isinstance(value, str):
        yield f"{where}.value must be text, got {value!r}"
    if effect in K8S_TO_EKS_EFFECT:
        yield (
            f"{where}.effect is {effect!r}, the Kubernetes spelling: EKS takes {K8S_TO_EKS_EFFECT[effect]} "
            f"(one of {EKS_EFFECTS})"
        )
    elif effect == "":
        yield f"{where}.effect is missing: EKS takes one of {EKS_EFFECTS}"
    elif effect is not None and effect not in EKS_TO_K8S_EFFECT:
        yield f"{where}.effect must be one of {EKS_EFFECTS}, got {taint.get('effect')!r}"


def _label_problems(given: Any) -> Iterator[str]:
    if given is not None and not isinstance(given, Mapping):
        yield f"labels must be a map of text to text, got {given!r}"
    elif given:
        for key, value in given.items():
            if value is not None and not isinstance(value, str):
                quoted = f' (in quotes: "{str(value).lower()}")' if isinstance(value, bool) else ""
                yield f"labels.{key} must be text{quoted}, got {value!r}"


def _scaling_problems(given: Any) -> Iterator[str]:
    if given is None:
        return
    if not isinstance(given, Mapping):
        yield f"scalingConfig must be an object with minSize, desiredSize and maxSize, got {given!r}"
        return
    for name, least in SIZE_MINIMUMS.items():
        value = given.get(name)
        if value is not None and not _size_ok(name, value):
            yield f"scalingConfig.{name} must be a whole number of at least {least}, got {value!r}"
    well_formed = sizes({"scalingConfig": given})
    low, high = well_formed.get("minSize"), well_formed.get("maxSize")
    middle = well_formed.get("desiredSize", low)
    if None not in (low, middle, high) and not low <= middle <= high:
        yield f"scalingConfig: EKS requires minSize <= desiredSize <= maxSize, got {low}, {middle}, {high}"


def problems(props: Mapping[str, Any]) -> list[str]:
    """What EKS would refuse in the node group's taints, labels, instance types and sizes, in words."""
    found = []
    given = props.get("taints")
    if given is not None and not is_list(given):
        found.append(f"taints must be a list of {{key, value, effect}}, got {given!r}")
    elif given is not None:
        found += [p for i, t in enumerate(given) for p in _taint_problems(i, t)]
    found += _label_problems(props.get("labels"))
    types = props.get("instanceTypes")
    if types is not None and (not is_list(types) or not all(isinstance(t, str) for t in types)):
        found.append(f"instanceTypes must be a list of instance type names, got {types!r}")
    found += _scaling_problems(props.get("scalingConfig"))
    tags = props.get("tags")
    if tags is not None and not isinstance(tags, Mapping):
        found.append(f"tags must be a map of text to text, got {tags!r}")
    elif tags and tags.get(GPU_TAG) and advertised_gpus(props) is None:
        found.append(f"tags.{GPU_TAG} must be a whole number of GPUs, got {tags[GPU_TAG]!r}")
    return found
