"""The GPU placement contract: the one place the GPU taint and label are defined."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.workloads.quantity import QuantityError, whole_count
from infra.workloads.queues import TeamQueue, queues_from_dict
from infra.workloads.values import PlacementError, as_whole

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource the NVIDIA device plugin advertises on GPU nodes."""

# EKS's API (node group taints) says NO_SCHEDULE, Kubernetes (node taints, tolerations) says
# NoSchedule: mixing them up is the classic bug, so the mapping lives here and nowhere else.
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

KARPENTER = "karpenter"
"""A pool's ``provisioner`` when Karpenter launches its nodes; a pool without one is a managed node group
that Cluster Autoscaler scales."""
PROVISIONER_TAINT_KEY = "eks-gpu/provisioner"
"""Karpenter's nodes' taint beside the GPU one where both kinds of pool are: only pods that name a Karpenter
pool tolerate it, so exactly one provisioner acts for any pod (decision 0098)."""

# Kubernetes label names and values (apimachinery IsQualifiedName, IsValidLabelValue).
_LABEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_RULE = "1-63 characters: letters, digits, '-', '_' or '.', first and last a letter or digit"
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# EKS refuses node group labels and taints under these prefixes (CreateNodegroup).
RESERVED_PREFIXES = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")


def gpu_count(value: object, setting: str, error: type[ValueError] = PlacementError) -> int:
    """A GPU count setting (``gpus``, ``gpusPerNode``) as an int >= 1, else ``error`` naming ``setting``:
    a number (not text or a boolean) judged as ``nvidia.com/gpu`` is (:func:`~.quantity.whole_count`)."""
    try:
        count = 0 if isinstance(value, str) else whole_count(value)  # type: ignore[arg-type]
    except QuantityError:
        count = 0
    if count < 1:
        raise error(f"{setting} must be a whole number >= 1, got {value!r}")
    return count


@dataclass(frozen=True)
class GpuPool:
    """A set of GPU nodes that are alike: same GPUs per node, same sharing, same capacity type."""

    name: str
    gpus_per_node: int
    """Physical GPUs on every node of the pool (the fewest, if its instance types differ)."""
    time_slicing_replicas: int = 1
    """1: whole GPUs; N >= 2: the device plugin advertises each GPU N times (time-slicing)."""
    capacity_type: str = "ON_DEMAND"
    """``ON_DEMAND`` or ``SPOT``."""
    provisioner: str | None = None
    """``karpenter`` for a pool Karpenter provisions; None for a managed node group (Cluster Autoscaler)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _LABEL.fullmatch(self.name):
            raise PlacementError(
                f"placement.pools: pool name {self.name!r} must be a label value: {_LABEL_RULE}"
            )
        where = f"placement.pools.{self.name}"
        object.__setattr__(self, "gpus_per_node", gpu_count(self.gpus_per_node, f"{where}.gpusPerNode"))
        replicas = as_whole(self.time_slicing_replicas)
        if replicas is None or replicas < 1:
            raise PlacementError(
                f"{where}.timeSlicingReplicas must be a whole number >= 1, got {self.time_slicing_replicas!r}"
            )
        object.__setattr__(self, "time_slicing_replicas", replicas)
        if self.capacity_type not in CAPACITY_TYPES:
            raise PlacementError(
                f"{where}.capacityType must be one of {', '.join(CAPACITY_TYPES)}, got {self.capacity_type!r}"
            )
        if self.provisioner not in (None, KARPENTER):
            raise PlacementError(
                f"{where}.provisioner must be {KARPENTER!r} or absent (a managed node group), got {self.provisioner!r}"
            )

    @property
    def shared(self) -> bool:
        """True when time-slicing hands each physical GPU to several pods."""
        return self.time_slicing_replicas > 1

    @property
    def slots_per_node(self) -> int:
        """``nvidia.com/gpu`` a node of the pool advertises (physical GPUs x time-slicing replicas): the
        most one pod can get, since the scheduler counts the pod's total against it."""
        return self.gpus_per_node * self.time_slicing_replicas

    max_gpus_per_pod = slots_per_node

    @property
    def max_gpus_per_container(self) -> int:
        """The most ``nvidia.com/gpu`` one container (init containers too) can ask for: shared pools run
        the device plugin with ``failRequestsGreaterThanOne``, checked per container (``rm.go``)."""
        return 1 if self.shared else self.gpus_per_node

    @property
    def karpenter(self) -> bool:
        return self.provisioner == KARPENTER

    def to_dict(self) -> dict[str, Any]:
        """Plain data; ``provisioner`` only for Karpenter pools, so node-group pools export as before."""
        found = {key: getattr(self, attribute) for key, attribute in _POOL_FIELDS.items()}
        return {key: value for key, value in found.items() if value is not None}


_POOL_FIELDS = {
    "gpusPerNode": "gpus_per_node",
    "timeSlicingReplicas": "time_slicing_replicas",
    "capacityType": "capacity_type",
    "provisioner": "provisioner",
}


def _mapping(data: object, where: str, allowed: tuple[str, ...]) -> Mapping[str, Any]:
    """``data`` if it is a mapping of ``allowed`` fields only; a refusal naming ``where`` otherwise."""
    if not isinstance(data, Mapping):
        raise PlacementError(f"{where} must be a mapping with {', '.join(allowed)}, got {data!r}")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise PlacementError(f"{where} has unknown field(s) {unknown}; allowed: {', '.join(allowed)}")
    return data


def _pool_from_dict(name: object, data: object) -> GpuPool:
    """A pool of a stack output: its fields, then the pool's own checks."""
    data = _mapping(data, f"placement.pools.{name}", tuple(_POOL_FIELDS))
    if "gpusPerNode" not in data:
        raise PlacementError(f"placement.pools.{name}.gpusPerNode is required (physical GPUs per node)")
    return GpuPool(name, **{attribute: data[key] for key, attribute in _POOL_FIELDS.items() if key in data})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Placement:
    """Where GPU pods go: nodes labelled and tainted ``key=value``, optionally split into pools."""

    key: str = "GPU"
    value: str = "true"
    pools: tuple[GpuPool, ...] = ()
    queues: tuple[TeamQueue, ...] = ()
    """The teams' Kueue queues (``teams:`` of the platform; decision 0099); none without teams."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pools", tuple(self.pools))  # a generator is read once, here
        if any(not isinstance(p, GpuPool) for p in self.pools):
            raise PlacementError(f"placement.pools must be GpuPool objects, got {list(self.pools)!r}")
        # Kept by name: the export is a mapping, whose order does not survive the engine (a protobuf
        # Struct is a Go map), so a refusal that lists pools or teams reads the same in every language.
        object.__setattr__(self, "pools", tuple(sorted(self.pools, key=lambda p: p.name)))
        object.__setattr__(self, "queues", tuple(sorted(self.queues, key=lambda q: q.team)))
        twice = sorted({p.name for p in self.pools if self.pool_names.count(p.name) > 1})
        if twice:
            raise PlacementError(f"placement.pools names a pool twice: {', '.join(twice)}")
        key, value = self.key, self.value
        if not isinstance(key, str) or not key:
            raise PlacementError(f"placement.key must be a non-empty string, got {key!r}")
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
            raise PlacementError(
                f"placement.key {key!r}: the prefix before '/' must be a DNS subdomain "
                "(lower-case letters, digits, '-' and '.', at most 253 characters)"
            )
        if not _LABEL.fullmatch(name):
            raise PlacementError(f"placement.key {key!r}: the name must be {_LABEL_RULE}")
        if any(key.startswith(reserved) or f".{reserved}" in key for reserved in RESERVED_PREFIXES):
            raise PlacementError(
                f"placement.key {key!r}: EKS refuses node group labels and taints under "
                f"{', '.join(RESERVED_PREFIXES)}; choose another key, e.g. 'GPU'"
            )
        if key == POOL_LABEL:
            raise PlacementError(f"placement.key may not be {POOL_LABEL!r}: that label names the pool")
        if isinstance(value, bool):
            raise PlacementError(
                f"placement.value must be a string, got the boolean {value!r}: "
                f'labels are strings, write "{str(value).lower()}" in quotes'
            )
        if not isinstance(value, str) or not _LABEL.fullmatch(value):
            raise PlacementError(
                f"placement.value {value!r}: must be {_LABEL_RULE} (EKS needs a non-empty taint value)"
            )

    @property
    def pool_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.pools)

    def pool(self, name: str) -> GpuPool:
        """The exported pool called ``name``; the error lists the ones there are."""
        found = [p for p in self.pools if p.name == name]
        if found:
            return found[0]
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

    @property
    def mixed(self) -> bool:
        """Both node-group and Karpenter pools: Cluster Autoscaler and Karpenter watch the same pending pods."""
        return len({p.karpenter for p in self.pools}) == 2

    def provisioner_taint(self) -> dict[str, str]:
        """The taint a Karpenter pool's nodes carry in a :attr:`mixed` cluster (Kubernetes spelling)."""
        return {"key": PROVISIONER_TAINT_KEY, "value": KARPENTER, "effect": GPU_TAINT_EFFECT}

    def provisioner_toleration(self) -> dict[str, str]:
        """What a pod naming a Karpenter pool tolerates besides :meth:`toleration`, and node agents too."""
        return Placement(PROVISIONER_TAINT_KEY, KARPENTER).toleration()

    def pool_taints(self, name: str) -> list[dict[str, str]]:
        """Every taint on pool ``name``'s nodes: the GPU taint, plus the provisioner's on a Karpenter pool
        of a :attr:`mixed` cluster."""
        extra = [self.provisioner_taint()] if self.mixed and self.pool(name).karpenter else []
        return [self.node_taint(), *extra]

    def agent_tolerations(self) -> list[dict[str, str]]:
        """What a node agent meant for every GPU node tolerates (the device plugin, CloudWatch's agents)."""
        return [self.toleration(), *([self.provisioner_toleration()] if self.mixed else [])]

    def eks_taint(self) -> dict[str, str]:
        """The taint as the EKS CreateNodegroup API takes it (``NO_SCHEDULE``)."""
        return {"key": self.key, "value": self.value, "effect": K8S_TO_EKS_EFFECT[GPU_TAINT_EFFECT]}

    def node_taint(self) -> dict[str, str]:
        """The taint as Kubernetes shows it on the Node object (``NoSchedule``)."""
        return {"key": self.key, "value": self.value, "effect": GPU_TAINT_EFFECT}

    def node_labels(self) -> dict[str, str]:
        """The label every GPU node carries; as a pod's nodeSelector it keeps GPU pods on GPU nodes."""
        return {self.key: self.value}

    node_selector = node_labels

    def toleration(self) -> dict[str, str]:
        """The pod toleration that lets GPU pods past the taint, and only this taint."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": GPU_TAINT_EFFECT}

    def node_affinity(self) -> dict[str, Any]:
        """Required node affinity selecting GPU nodes, for charts that take affinity."""
        expression = {"key": self.key, "operator": "In", "values": [self.value]}
        required = {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a stack output: ``{key, value}`` as older consumers read it, plus ``poolLabel``
        and ``pools`` (by name) when there are pools."""
        data: dict[str, Any] = {"key": self.key, "value": self.value}
        if self.pools:
            data["poolLabel"] = POOL_LABEL
            data["pools"] = {p.name: p.to_dict() for p in self.pools}
        if self.queues:
            data["queues"] = {q.team: q.to_dict() for q in self.queues}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Placement:
        """Rebuild from :meth:`to_dict` output (e.g. a StackReference output), old or new form."""
        if data is None:
            return cls()
        data = _mapping(data, "placement", ("key", "value", "poolLabel", "pools", "queues"))
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
            queues=queues_from_dict(data.get("queues")),
        )


DEFAULT_PLACEMENT = Placement()
