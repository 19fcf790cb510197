"""A Karpenter GPU pool as Kubernetes objects: its NodePool, EC2NodeClass and NodeOverlay. Pure.

What they carry (a node group's contract) and why: docs/platform.md, "Karpenter pools". Shapes are Karpenter's
v1 API at the pinned version (sigs.k8s.io/karpenter and karpenter-provider-aws ``pkg/apis/crds``); tests apply
them to those CRDs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.platform.node_pools import contract_labels
from infra.workloads.placement import GPU_RESOURCE, GpuPool, Placement

# One version for the chart, the controller it runs, and the core the tests run: the pins in
# localcluster/karpenter/go.mod and infra/tooling/karpenter-pins/go.mod (tests/platform/test_karpenter.py checks).
VERSION = "1.15.0"
# Kubernetes minors that version runs on: karpenter-provider-aws v1.15.0
# pkg/providers/version/version.go, MinK8sVersion and MaxK8sVersion.
KUBERNETES_MINORS = ("1.26", "1.37")
API = "karpenter.sh/v1"
AWS_API = "karpenter.k8s.aws/v1"
OVERLAY_API = "karpenter.sh/v1alpha1"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
# Karpenter spells capacity types its own way (v1 CapacityTypeSpot, CapacityTypeOnDemand).
CAPACITY_TYPES = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
# The AL2023 family: for an NVIDIA instance type the provider picks the accelerated (nvidia) variant
# of the EKS AMI for the node's architecture (pkg/providers/amifamily/al2023.go, DescribeImageQuery).
# The default, and what every non-production stack may float on; production pins a release.
AMI_ALIAS = "al2023@latest"
AMI_ALIAS_PATTERN = r"^al2023@(latest|v[0-9]{8})$"
AMI_ALIAS_WORDS = "al2023@latest, or a release pinned as al2023@vYYYYMMDD"
# Discovery: the private subnets are tagged with this (karpenter.py); the security group EKS made for
# the cluster, which managed node groups use too, carries aws:eks:cluster-name.
DISCOVERY_TAG = "karpenter.sh/discovery"
CLUSTER_SG_TAG = "aws:eks:cluster-name"
# Karpenter's consolidateAfter (karpenter.sh_nodepools.yaml): whole s, m, h parts only.
CONSOLIDATE_AFTER = r"^([0-9]+(s|m|h))+$"
BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
# Nodes are replaced only by budgeted disruption (drift, consolidation), as a node group's are never
# expired: unset, the CRD defaults expireAfter to 720h and the expiration controller then deletes the
# NodeClaim without asking the budget (sigs.k8s.io/karpenter pkg/controllers/nodeclaim/expiration).
EXPIRE_AFTER = "Never"


def name(pool: str) -> str:
    """The NodePool's, EC2NodeClass's and NodeOverlay's name for ``pool``."""
    return f"gpu-{pool}"


def kubernetes_supported(minor: str) -> bool:
    low, high = (tuple(int(p) for p in v.split(".")) for v in KUBERNETES_MINORS)
    return low <= tuple(int(p) for p in minor.split(".")) <= high


def _requirement(key: str, values: list[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": values}


def nodepool(
    placement: Placement,
    pool: GpuPool,
    *,
    instance_types: list[str],
    capacity_types: list[str],
    disruption: Mapping[str, Any],
    gpu_limit: int,
) -> dict[str, Any]:
    """The pool's NodePool: its nodes carry exactly what a node group's would (the contract);
    ``disruption`` is its ``spec.disruption`` (consolidation and budgets)."""
    requirements = [
        _requirement("kubernetes.io/arch", ["arm64"]),
        _requirement("kubernetes.io/os", ["linux"]),
        _requirement("node.kubernetes.io/instance-type", list(instance_types)),
        _requirement(CAPACITY_TYPE_LABEL, [CAPACITY_TYPES[c] for c in capacity_types]),
    ]
    return {
        "apiVersion": API,
        "kind": "NodePool",
        "metadata": {"name": name(pool.name)},
        "spec": {
            "template": {
                "metadata": {"labels": contract_labels(placement, pool)},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": name(pool.name),
                    },
                    # In a cluster with node-group pools too, also the provisioner's taint (decision 0098).
                    "taints": placement.pool_taints(pool.name),
                    "requirements": requirements,
                    "expireAfter": EXPIRE_AFTER,
                },
            },
            # Counted in what a node advertises: time-sliced slots on a shared pool (the overlay says so).
            "limits": {GPU_RESOURCE: str(gpu_limit)},
            "disruption": dict(disruption),
        },
    }


def node_overlay(pool: GpuPool) -> dict[str, Any] | None:
    """What a time-sliced pool's nodes advertise (GPUs x replicas), told to Karpenter's scheduling (None: whole
    GPUs); why: docs/platform.md, "Karpenter pools". Its capacity replaces the type's for this NodePool's nodes
    (cloudprovider/types.go ``ApplyCapacityOverlay``); alpha, behind a feature gate (karpenter.py)."""
    if not pool.shared:
        return None
    return {
        "apiVersion": OVERLAY_API,
        "kind": "NodeOverlay",
        "metadata": {"name": name(pool.name)},
        "spec": {
            "requirements": [_requirement(NODEPOOL_LABEL, [name(pool.name)])],
            "capacity": {GPU_RESOURCE: str(pool.slots_per_node)},
        },
    }


def ec2_node_class(
    pool: str,
    *,
    role: Any,
    cluster_name: str,
    disk_gib: int,
    metadata: Mapping[str, Any],
    root: Mapping[str, Any],
    ami_alias: str = AMI_ALIAS,
) -> dict[str, Any]:
    """The pool's EC2NodeClass: the node role, the accelerated AL2023 AMI (``ami_alias``), IMDSv2 and the root volume
    of the node groups' launch template (``metadata``, ``root``), private subnets, the cluster's group."""
    return {
        "apiVersion": AWS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": name(pool)},
        "spec": {
            "role": role,
            "amiSelectorTerms": [{"alias": ami_alias}],
            "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
            "securityGroupSelectorTerms": [{"tags": {CLUSTER_SG_TAG: cluster_name}}],
            "metadataOptions": dict(metadata),
            "blockDeviceMappings": [{**root, "ebs": {**root["ebs"], "volumeSize": f"{disk_gib}Gi"}}],
        },
    }
