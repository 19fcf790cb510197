"""The GPU placement contract: the one place the GPU taint and label are defined.

Everything that has to agree on where GPU pods run reads this module: the node
group (taint and labels in the EKS API's spelling), the device plugin's Helm
values, ``GpuDeployment``, the policy pack and the scheduling checks. It has no
cloud imports so that consumers, policies and tests can use it anywhere.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.workloads.quantity import QuantityError, whole_count
from infra.workloads.values import as_whole

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource the NVIDIA device plugin advertises on GPU nodes."""

# The taint effect in both spellings. EKS's API (node group taints) says
# NO_SCHEDULE, Kubernetes (node taints, pod tolerations) says NoSchedule: mixing
# them up is the classic bug, so the mapping lives here and nowhere else.
EKS_TO_K8S_EFFECT: Mapping[str, str] = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}
K8S_TO_EKS_EFFECT: Mapping[str, str] = {v: k for k, v in EKS_TO_K8S_EFFECT.items()}

GPU_TAINT_EFFECT = "NoSchedule"
"""NoSchedule repels pods that do not tolerate it; it does not evict running ones."""

POOL_LABEL = "eks-gpu/pool"
"""The node label naming a node's GPU pool; every pool also carries the contract's ``key=value``."""

CAPACITY_TYPES = ("ON_DEMAND", "SPOT")

# Kubernetes label syntax (apimachinery validation.IsQualifiedName / IsValidLabelValue).
_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_LABEL_NAME_RE = re.compile(rf"^{_NAME}$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE_RE = re.compile(rf"^{_NAME}$")
# EKS refuses node group labels and taints under these prefixes (CreateNodegroup).
RESERVED_PREFIXES = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")


class PlacementError(ValueError):
    """A placement key or value that Kubernetes or EKS would refuse."""


def whole_number(value: object, setting: str, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; integral floats (JSON numbers, e.g. ``1.0``) are accepted.

    Stack outputs and the component provider hand numbers over as floats, so
    ``2.0`` means 2; ``2.5``, booleans and strings are refused.
    """
    count = as_whole(value)
    if count is None or count < minimum:
        raise PlacementError(
            f"{setting} must be a whole number >= {minimum}, got {value if count is None else count!r}"
        )
    return count


def gpu_count(value: object, setting: str, minimum: int) -> int:
    """A GPU count setting (``gpus``, ``gpusPerNode``) as an int >= ``minimum``.

    Judged by the one GPU quantity parser, :func:`infra.workloads.quantity.whole_count`,
    so a number means here what it means in ``nvidia.com/gpu`` (``2.0`` is 2, ``2.5`` is
    refused). These settings are numbers: text and booleans are refused.
    """
    count = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        with contextlib.suppress(QuantityError):
            count = whole_count(value)
    if count is None or count < minimum:
        raise PlacementError(f"{setting} must be a whole number >= {minimum}, got {value!r}")
    return count


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise PlacementError(f"placement.key must be a non-empty string, got {key!r}")
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.match(prefix)):
        raise PlacementError(
            f"placement.key {key!r}: the prefix before '/' must be a DNS subdomain "
            "(lower-case letters, digits, '-' and '.', at most 253 characters)"
        )
    if not _LABEL_NAME_RE.match(name):
        raise PlacementError(
            f"placement.key {key!r}: the name must be 1-63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )
    for reserved in RESERVED_PREFIXES:
        if key.startswith(reserved) or f".{reserved}" in key:
            raise PlacementError(
                f"placement.key {key!r}: EKS refuses node group labels and taints under "
                f"{', '.join(RESERVED_PREFIXES)}; choose another key, e.g. 'GPU'"
            )
    return key


def _check_value(value: object) -> str:
    if isinstance(value, bool):
        raise PlacementError(
            f"placement.value must be a string, got the boolean {value!r}: "
            f'labels are strings, write "{str(value).lower()}" in quotes'
        )
    if not isinstance(value, str) or not _LABEL_VALUE_RE.match(value):
        raise PlacementError(
            f"placement.value {value!r}: must be 1-63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit (EKS needs a "
            "non-empty taint value)"
        )
    return value


@dataclass(frozen=True)
class GpuPool:
    """A set of GPU nodes that are alike: same GPUs per node, same sharing, same capacity type.

    Pods pick a pool by the node label ``eks-gpu/pool=<name>``; the numbers let
    consumers refuse a pod no node of the pool could ever run, before deploying it.
    """

    name: str
    gpus_per_node: int
    """Physical GPUs on every node of the pool (the fewest, if its instance types differ)."""
    time_slicing_replicas: int = 1
    """1: whole GPUs; N >= 2: the device plugin advertises each GPU N times (time-slicing)."""
    capacity_type: str = "ON_DEMAND"
    """``ON_DEMAND`` or ``SPOT``."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _LABEL_VALUE_RE.match(self.name):
            raise PlacementError(
                f"pool name {self.name!r} must be a label value: 1-63 characters of letters, digits, "
                "'-', '_' or '.', starting and ending with a letter or digit"
            )
        where = f"pool {self.name!r}"
        object.__setattr__(self, "gpus_per_node", gpu_count(self.gpus_per_node, f"{where} gpusPerNode", 1))
        object.__setattr__(
            self,
            "time_slicing_replicas",
            whole_number(self.time_slicing_replicas, f"{where} timeSlicingReplicas", 1),
        )
        if self.capacity_type not in CAPACITY_TYPES:
            raise PlacementError(
                f"{where} capacityType must be one of {', '.join(CAPACITY_TYPES)}, got {self.capacity_type!r}"
            )

    @property
    def shared(self) -> bool:
        """True when time-slicing hands each physical GPU to several pods."""
        return self.time_slicing_replicas > 1

    @property
    def slots_per_node(self) -> int:
        """``nvidia.com/gpu`` a node of the pool advertises: physical GPUs x time-slicing replicas."""
        return self.gpus_per_node * self.time_slicing_replicas

    @property
    def max_gpus_per_container(self) -> int:
        """The most ``nvidia.com/gpu`` one container (init containers too) can ask for on this pool.

        Shared pools run the device plugin with ``failRequestsGreaterThanOne``, which it
        checks per container request (NVIDIA/k8s-device-plugin ``internal/rm/rm.go``
        ``ValidateRequest``, called once per container by ``Allocate``): a container
        asking for 2 would get two slices of one GPU, so it is refused.
        """
        return 1 if self.shared else self.gpus_per_node

    @property
    def max_gpus_per_pod(self) -> int:
        """The most ``nvidia.com/gpu`` one pod can get on this pool: what one node advertises.

        The scheduler counts the pod's total against the node's allocatable, so on a
        shared pool a pod of several one-GPU containers fits up to the node's slots.
        """
        return self.slots_per_node

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpusPerNode": self.gpus_per_node,
            "timeSlicingReplicas": self.time_slicing_replicas,
            "capacityType": self.capacity_type,
        }


_POOL_FIELDS = {
    "gpusPerNode": "gpus_per_node",
    "timeSlicingReplicas": "time_slicing_replicas",
    "capacityType": "capacity_type",
}


def _pool_from_dict(name: object, data: object) -> GpuPool:
    if not isinstance(name, str):
        raise PlacementError(f"placement.pools: pool names must be strings, got {name!r}")
    if not isinstance(data, Mapping):
        raise PlacementError(
            f"placement.pools.{name} must be a mapping with {', '.join(_POOL_FIELDS)}, got {data!r}"
        )
    unknown = sorted(set(data) - set(_POOL_FIELDS))
    if unknown:
        raise PlacementError(
            f"placement.pools.{name} has unknown field(s) {unknown}; allowed: {', '.join(_POOL_FIELDS)}"
        )
    if "gpusPerNode" not in data:
        raise PlacementError(f"placement.pools.{name}.gpusPerNode is required (physical GPUs per node)")
    return GpuPool(name=name, **{_POOL_FIELDS[k]: v for k, v in data.items()})


@dataclass(frozen=True)
class Placement:
    """Where GPU pods go: nodes labelled and tainted ``key=value``, optionally split into pools.

    The defaults are the blog post's ``GPU=true``; platforms with another naming
    scheme set ``key`` and ``value`` once and every consumer follows. Every pool's
    nodes carry ``key=value`` too (and its taint), plus ``eks-gpu/pool=<name>``.
    """

    key: str = "GPU"
    value: str = "true"
    pools: tuple[GpuPool, ...] = ()

    def __post_init__(self) -> None:
        _check_key(self.key)
        _check_value(self.value)
        if self.key == POOL_LABEL:
            raise PlacementError(f"placement.key may not be {POOL_LABEL!r}: that label names the pool")
        pools = tuple(self.pools) if isinstance(self.pools, (list, tuple)) else self.pools
        if not isinstance(pools, tuple) or not all(isinstance(p, GpuPool) for p in pools):
            raise PlacementError(f"placement.pools must be a tuple of GpuPool, got {self.pools!r}")
        names = [p.name for p in pools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise PlacementError(f"placement.pools: pool name(s) {duplicates} appear more than once")
        object.__setattr__(self, "pools", pools)

    @property
    def pool_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.pools)

    def pool(self, name: str) -> GpuPool:
        """The exported pool called ``name``; the error lists the ones there are."""
        for candidate in self.pools:
            if candidate.name == name:
                return candidate
        if not self.pools:
            raise PlacementError(
                f"pool {name!r}: the platform exports no GPU pools; leave pool unset "
                "(every GPU node is alike) or add pools to the platform"
            )
        raise PlacementError(
            f"pool {name!r} is not one the platform exports; allowed: {', '.join(self.pool_names)}"
        )

    def pool_labels(self, name: str) -> dict[str, str]:
        """The labels of every node of pool ``name``: the contract's plus ``eks-gpu/pool``."""
        self.pool(name)
        return {self.key: self.value, POOL_LABEL: name}

    def eks_taint(self) -> dict[str, str]:
        """The taint as the EKS CreateNodegroup API takes it (``NO_SCHEDULE``)."""
        return {"key": self.key, "value": self.value, "effect": K8S_TO_EKS_EFFECT[GPU_TAINT_EFFECT]}

    def node_taint(self) -> dict[str, str]:
        """The taint as Kubernetes shows it on the Node object (``NoSchedule``)."""
        return {"key": self.key, "value": self.value, "effect": GPU_TAINT_EFFECT}

    def node_labels(self) -> dict[str, str]:
        """The label every GPU node carries."""
        return {self.key: self.value}

    def node_selector(self) -> dict[str, str]:
        """The pod nodeSelector that keeps GPU pods on GPU nodes."""
        return {self.key: self.value}

    def toleration(self) -> dict[str, str]:
        """The pod toleration that lets GPU pods past the taint, and only this taint."""
        return {
            "key": self.key,
            "operator": "Equal",
            "value": self.value,
            "effect": GPU_TAINT_EFFECT,
        }

    def node_affinity(self) -> dict[str, Any]:
        """Required node affinity selecting GPU nodes, for charts that take affinity."""
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": self.key, "operator": "In", "values": [self.value]}]}
                    ]
                }
            }
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for a stack output that consumer stacks read back.

        Without pools it is the original ``{key, value}`` form, so older consumers
        keep reading it; with pools it adds ``poolLabel`` and ``pools`` (by name).
        """
        data: dict[str, Any] = {"key": self.key, "value": self.value}
        if self.pools:
            data["poolLabel"] = POOL_LABEL
            data["pools"] = {p.name: p.to_dict() for p in self.pools}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Placement:
        """Rebuild from :meth:`to_dict` output (e.g. a StackReference output), old or new form."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise PlacementError(f"placement must be a mapping with 'key' and 'value', got {data!r}")
        allowed = ("key", "value", "poolLabel", "pools")
        unknown = set(data) - set(allowed)
        if unknown:
            raise PlacementError(
                f"placement has unknown field(s) {sorted(unknown)}; allowed: {', '.join(map(repr, allowed))}"
            )
        label = data.get("poolLabel", POOL_LABEL)
        if label != POOL_LABEL:
            raise PlacementError(
                f"placement.poolLabel {label!r} is not this library's pool label {POOL_LABEL!r}: "
                "the platform and this consumer use different versions of the contract"
            )
        pools = data.get("pools") or {}
        if not isinstance(pools, Mapping):
            raise PlacementError(f"placement.pools must be a mapping of pool name to pool, got {pools!r}")
        return cls(
            key=data.get("key", cls.key),
            value=data.get("value", cls.value),
            pools=tuple(_pool_from_dict(name, pool) for name, pool in pools.items()),
        )


DEFAULT_PLACEMENT = Placement()
