"""The GPU placement contract: the one place the GPU taint and label are defined.

Everything that has to agree on where GPU pods run reads this module: the node
group (taint and labels in the EKS API's spelling), the device plugin's Helm
values, ``GpuDeployment``, the policy pack and the scheduling checks. It has no
cloud imports so that consumers, policies and tests can use it anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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

# Kubernetes label syntax (apimachinery validation.IsQualifiedName / IsValidLabelValue).
_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_LABEL_NAME_RE = re.compile(rf"^{_NAME}$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE_RE = re.compile(rf"^{_NAME}$")
# EKS refuses node group labels and taints under these prefixes (CreateNodegroup).
RESERVED_PREFIXES = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")


class PlacementError(ValueError):
    """A placement key or value that Kubernetes or EKS would refuse."""


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
class Placement:
    """Where GPU pods go: nodes labelled and tainted ``key=value``.

    The defaults are the blog post's ``GPU=true``; platforms with another naming
    scheme set ``key`` and ``value`` once and every consumer follows.
    """

    key: str = "GPU"
    value: str = "true"

    def __post_init__(self) -> None:
        _check_key(self.key)
        _check_value(self.value)

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

    def to_dict(self) -> dict[str, str]:
        """Plain data, for a stack output that consumer stacks read back."""
        return {"key": self.key, "value": self.value}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Placement:
        """Rebuild from :meth:`to_dict` output (e.g. a StackReference output)."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise PlacementError(f"placement must be a mapping with 'key' and 'value', got {data!r}")
        unknown = set(data) - {"key", "value"}
        if unknown:
            raise PlacementError(f"placement has unknown field(s) {sorted(unknown)}; allowed: 'key', 'value'")
        return cls(key=data.get("key", cls.key), value=data.get("value", cls.value))


DEFAULT_PLACEMENT = Placement()
