"""The teams' Kueue queues as the contract states them: names, labels, priority classes (pure).

The platform declares them from ``teams:`` (:mod:`infra.platform.kueue_objects`) and exports
them with the placement; ``GpuJob(queue=...)`` and the policy pack read them from there.
Decision 0099.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""Kueue's label naming the LocalQueue a Job is submitted to (``pkg/controller/constants``)."""
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""Kueue's label naming the WorkloadPriorityClass of a Job."""
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
"""Kueue's annotation allowing partial admission: as few as this many pods (1 to pods - 1)."""
DEFAULT_QUEUE = "default"
"""Each team's LocalQueue: Kueue also puts a Job of the namespace that names no queue in it."""
COHORT = "gpu-teams"
"""The one cohort every team's ClusterQueue is in: idle quota is lent and reclaimed within it."""

PRIORITY_CLASSES: Mapping[str, int] = {"low": 100, "normal": 1000, "high": 10000}
"""The WorkloadPriorityClasses the platform declares: a higher one preempts a lower one within a team."""
DEFAULT_PRIORITY = "normal"


class QueueError(ValueError):
    """A queue setting that no team declares, or that its team does not allow."""


@dataclass(frozen=True)
class TeamQueue:
    """A team's LocalQueue, what it may use, and how its Jobs are admitted."""

    team: str
    namespace: str
    pools: tuple[str, ...]
    """The pools the team has quota on: the flavors of its ClusterQueue."""
    priority: str = DEFAULT_PRIORITY
    """The priority class of its Jobs that name none."""
    partial_admission: bool = False
    """True: its Jobs may ask to start with fewer pods than their parallelism."""
    name: str = DEFAULT_QUEUE

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "pools": list(self.pools),
            "priority": self.priority,
            "partialAdmission": self.partial_admission,
        }

    @classmethod
    def from_dict(cls, team: str, data: Any) -> TeamQueue:
        """A team's queue from a stack output (``placement.queues.<team>``)."""
        where = f"placement.queues.{team}"
        if not isinstance(data, Mapping) or not isinstance(data.get("namespace"), str):
            raise QueueError(f"{where} must be a mapping with at least namespace, got {data!r}")
        unknown = sorted(set(data) - {"namespace", "name", "pools", "priority", "partialAdmission"})
        if unknown:
            raise QueueError(f"{where} has unknown field(s) {unknown}")
        return cls(
            team=team,
            namespace=data["namespace"],
            pools=tuple(data.get("pools") or ()),
            priority=data.get("priority", DEFAULT_PRIORITY),
            partial_admission=bool(data.get("partialAdmission", False)),
            name=data.get("name", DEFAULT_QUEUE),
        )


def queues_from_dict(data: Any) -> tuple[TeamQueue, ...]:
    """``placement.queues`` of a stack output: ``{team: {...}}``."""
    if data is None:
        return ()
    if not isinstance(data, Mapping):
        raise QueueError(f"placement.queues must be a mapping of team to queue, got {data!r}")
    return tuple(TeamQueue.from_dict(team, queue) for team, queue in data.items())
