"""A pool's settings: the system node group's, and each GPU pool's (node group or Karpenter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from infra.platform import nodepool
from infra.platform.config_types import (
    AmiAlias,
    DisruptionBudget,
    Flag,
    GpuType,
    KarpenterDuration,
    MaxNodes,
    Nodes,
    Section,
    SystemType,
    unique,
    whole,
)
from infra.platform.instance_types import ARM_NVIDIA
from infra.workloads.placement import CAPACITY_TYPES, KARPENTER, GpuPool


class NodeGroupConfig(Section):
    """What an EKS managed node group's CreateNodegroup takes: types, sizes, disk, capacity type."""

    instance_types: unique(SystemType, 1) = ("t4g.large",)
    """Graviton types for CoreDNS, the autoscaler and controllers."""
    min_size: Nodes = 2
    """Nodes at least (EKS CreateNodegroup: 0 or more)."""
    desired_size: Nodes | None = None
    """Nodes at creation (default minSize); the system group is held at it, a GPU pool keeps the nodes it runs, raised to minSize (autoscaler off: to a larger desiredSize)."""
    max_size: MaxNodes = 3
    """Nodes at most (EKS CreateNodegroup: 1 or more)."""
    disk_size_gib: Annotated[whole(20, 16384), Field(alias="diskSizeGiB")] = 30
    """Encrypted gp3 root volume, GiB."""
    capacity_type: Literal[CAPACITY_TYPES] = "ON_DEMAND"
    """SPOT nodes can be reclaimed with two minutes' notice; their pods reschedule."""

    @model_validator(mode="after")
    def _sizes_in_order(self) -> NodeGroupConfig:
        if self.min_size > self.max_size:
            raise ValueError(f": minSize ({self.min_size}) must not exceed maxSize ({self.max_size})")
        if self.desired_size is not None and not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f".desiredSize ({self.desired_size}) must be within minSize..maxSize "
                f"({self.min_size}..{self.max_size})"
            )
        return self

    @property
    def initial_size(self) -> int:
        return self.min_size if self.desired_size is None else self.desired_size


class TimeSlicingConfig(Section):
    # The device plugin refuses fewer than 2 replicas (api/config/v1/replicas.go); above 16 a
    # T4G's 16 GB leaves under 1 GB a slice, which no model we know of fits.
    replicas: whole(2, 16)
    """Pods per GPU; each gets time slices, not isolated memory. Requests above 1 GPU are refused."""


class SharingConfig(Section):
    time_slicing: TimeSlicingConfig
    """The device plugin's time-slicing."""


PROVISIONERS = ("managedNodeGroup", KARPENTER)


class KarpenterPoolConfig(Section):
    """How Karpenter provisions and consolidates a pool whose provisioner is karpenter."""

    capacity_types: unique(Literal[CAPACITY_TYPES], 1) | None = None
    """Capacity types Karpenter may launch (default: [capacityType]); with both, it takes spot where it is to be had."""
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = "WhenEmpty"
    """WhenEmpty removes only nodes without GPU pods; WhenEmptyOrUnderutilized also moves running pods to pack nodes."""
    consolidate_after: KarpenterDuration = "10m"
    """How long a node stays empty (or underutilized) before Karpenter removes it."""
    disruption_budget: DisruptionBudget = "1"
    """Nodes (a count or a percentage) Karpenter may disrupt at once in this pool, consolidation and drift alike."""
    keep_node_group: Flag = False
    """Moving from a node group: keep its nodes (Cluster Autoscaler lets go of it) until you have drained them; then remove this."""
    ami_alias: AmiAlias = nodepool.AMI_ALIAS
    """The EKS AL2023 AMI release its nodes run: al2023@vYYYYMMDD pins one (production must); a new value drifts the nodes, replaced within disruptionBudget."""
    gpu_limit: whole(1, 450 * 32) | None = None
    """nvidia.com/gpu the pool may hold in all (time-sliced slots on a shared pool); default maxSize x what one node advertises."""


class GpuPoolConfig(NodeGroupConfig):
    """A GPU pool: a managed node group of one GPU count, tainted and labelled by the contract."""

    instance_types: unique(GpuType, 1) = ("g5g.xlarge",)
    """Arm + NVIDIA T4G types, all with the same GPU count (x86 GPU types cannot run the Arm AMI)."""
    min_size: Nodes = 0
    """Nodes at least; 0 lets the pool scale from zero."""
    max_size: MaxNodes = 2
    """Nodes at most: as far as the autoscaler may go; not below the nodes the pool runs (checked)."""
    disk_size_gib: Annotated[whole(50, 16384), Field(alias="diskSizeGiB")] = 100
    """Encrypted gp3 root volume, GiB: CUDA base images alone are several GiB, models come on top."""
    sharing: SharingConfig | None = None
    """Time-slicing: {timeSlicing: {replicas: N}}; without it, whole GPUs."""
    node_repair: Flag = True
    """EKS node auto-repair: replace a node whose health checks fail (Karpenter pools: its node repair, alpha)."""
    provisioner: Literal[PROVISIONERS] = "managedNodeGroup"
    """Who adds and removes the pool's nodes: a managed node group scaled by Cluster Autoscaler, or Karpenter (no node group)."""
    karpenter: KarpenterPoolConfig | None = None
    """Karpenter's settings for this pool (only with provisioner: karpenter)."""

    def contract(self, name: str) -> GpuPool:
        """The pool as the placement contract states it, which consumers read."""
        return GpuPool(
            name=name,
            gpus_per_node=ARM_NVIDIA[self.instance_types[0]].gpus,  # one count per pool (checked)
            time_slicing_replicas=self.sharing.time_slicing.replicas if self.sharing else 1,
            # A pool that may run on spot is a spot pool to its consumers: nodes may be reclaimed.
            capacity_type="SPOT" if "SPOT" in self.capacity_types else "ON_DEMAND",
            # Consumers route pods by it in a cluster with both kinds of pool (decision 0098).
            provisioner=KARPENTER if self.provisioner == KARPENTER else None,
        )

    @property
    def slots_per_node(self) -> int:
        """nvidia.com/gpu one node advertises: its GPUs times the time-slicing replicas."""
        return self.contract("pool").slots_per_node

    @property
    def karpenter_settings(self) -> KarpenterPoolConfig:
        return self.karpenter or KarpenterPoolConfig()

    @property
    def capacity_types(self) -> tuple[str, ...]:
        """What the pool's nodes may be bought as: Karpenter's list, else the one capacityType."""
        return self.karpenter_settings.capacity_types or (self.capacity_type,)

    @model_validator(mode="after")
    def _provisioner_settings(self) -> GpuPoolConfig:
        given = self.model_fields_set
        if self.provisioner != "karpenter":
            if self.karpenter is not None:
                raise ValueError(
                    ".karpenter is set but provisioner is not karpenter: set provisioner: karpenter or remove it"
                )
            return self
        if {"desired_size", "min_size"} & given and (self.min_size or self.desired_size):
            raise ValueError(
                ".minSize and .desiredSize do not apply with provisioner: karpenter, which keeps no minimum "
                "(nodes only while pods need them): leave them unset or 0"
            )
        settings = self.karpenter_settings
        if settings.capacity_types and "capacity_type" in given:
            raise ValueError(".capacityType and .karpenter.capacityTypes are both set: keep one of them")
        if settings.gpu_limit is not None and settings.gpu_limit < self.slots_per_node:
            raise ValueError(
                f".karpenter.gpuLimit ({settings.gpu_limit}) is below what one node advertises "
                f"({self.slots_per_node} nvidia.com/gpu): Karpenter could never launch a node"
            )
        return self

    @model_validator(mode="after")
    def _one_gpu_count(self) -> GpuPoolConfig:
        counts = {name: ARM_NVIDIA[name].gpus for name in self.instance_types}
        if len(set(counts.values())) > 1:
            raise ValueError(
                f".instanceTypes mix GPU counts {counts}: the autoscaler's node template must promise what "
                "every node of the pool brings; put types with different GPU counts in separate pools"
            )
        return self


@dataclass(frozen=True)
class Pool:
    """One GPU pool on its way to resources: its contract (what consumers see) and its node group's settings."""

    contract: GpuPool
    settings: GpuPoolConfig

    @property
    def name(self) -> str:
        return self.contract.name

    @property
    def karpenter(self) -> bool:
        """Provisioned by Karpenter: no node group (unless kept while moving), nothing for Cluster Autoscaler."""
        return self.settings.provisioner == "karpenter"

    @property
    def reach(self) -> int:
        """The most nvidia.com/gpu the pool can ever have: maxSize x GPUs per node x slices (Karpenter: gpuLimit
        when set): its NodePool's limit and what teams' quotas are checked against."""
        limit = self.settings.karpenter_settings.gpu_limit if self.karpenter else None
        return limit if limit is not None else self.settings.max_size * self.contract.slots_per_node
