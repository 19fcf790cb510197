"""The teams' Kueue queues as the contract states them: names, labels, priority classes (pure).

The platform declares them from ``teams:`` (:mod:`infra.platform.kueue_objects`) and exports
them with the placement; ``GpuJob(queue=...)`` and the policy pack read them from there.
Decision 0099.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.workloads.values import PlacementError, PodSpecError, as_whole, known

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
            raise PlacementError(f"{where} must be a mapping with at least namespace, got {data!r}")
        unknown = sorted(set(data) - {"namespace", "name", "pools", "priority", "partialAdmission"})
        if unknown:
            raise PlacementError(f"{where} has unknown field(s) {unknown}")
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
        raise PlacementError(f"placement.queues must be a mapping of team to queue, got {data!r}")
    return tuple(TeamQueue.from_dict(team, queue) for team, queue in data.items())


# A LocalQueue's name: a DNS subdomain (Kueue's LocalQueueName pattern, at most 253 characters).
_QUEUE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class QueueSettings:
    """What a Job asks of Kueue: its queue, its priority class, the fewest pods it may start with."""

    queue: str | None = None
    priority: str | None = None
    min_parallelism: int | None = None

    def check(self, *, replace_unready: bool) -> QueueSettings:
        """The settings alone, before any contract or spec is looked at; refused with what to write instead."""
        queue, priority = self.queue, self.priority
        if queue is None:
            for setting, value in (("priority", priority), ("min_parallelism", self.min_parallelism)):
                if value is not None:
                    raise PodSpecError(
                        f"{setting}={value!r} needs queue=: only Kueue reads it (e.g. queue={DEFAULT_QUEUE!r})"
                    )
            return self
        if not isinstance(queue, str) or len(queue) > 253 or not _QUEUE_NAME.fullmatch(queue):
            raise PodSpecError(
                f"queue must be a LocalQueue name (lowercase letters, digits, '-' and '.'), got {queue!r}; "
                f"each team's is {DEFAULT_QUEUE!r}"
            )
        if priority is not None and priority not in PRIORITY_CLASSES:
            raise PodSpecError(
                f"priority {priority!r} is not a priority class the platform declares; allowed: "
                f"{', '.join(PRIORITY_CLASSES)}"
            )
        least = self.min_parallelism
        if least is not None and (as_whole(least) or 0) < 1:
            raise PodSpecError(f"min_parallelism must be a whole number >= 1, got {least!r}")
        if replace_unready:
            raise PodSpecError(
                "replace_unready=True on a queued Job (queue=...): while Kueue holds it suspended, or after it "
                "preempts it, the Job is not Complete, and pulumi-kubernetes would replace it at the next "
                "pulumi up, sending it to the back of the queue; drop replace_unready (Kueue requeues a Job "
                "whose pods never become ready) or queue"
            )
        # A number from YAML or JSON arrives as 2.0: the annotation must say 2.
        return dataclasses.replace(self, min_parallelism=as_whole(least) if least is not None else None)

    def check_spec(self, spec: Mapping[str, Any]) -> None:
        """A queued Job's spec: Kueue owns ``suspend``; partial admission needs more pods than its minimum."""
        if self.queue is None:
            return
        if spec.get("suspend") is not None:
            raise PodSpecError(
                f"spec.suspend {spec.get('suspend')!r} on a queued Job: Kueue suspends it on creation and "
                "unsuspends it on admission; remove spec.suspend"
            )
        if self.min_parallelism is None:
            return
        parallelism, completions = spec.get("parallelism", 1), spec.get("completions")
        if not known(parallelism) or not known(completions) or as_whole(parallelism) is None:
            return  # decided once known
        pods = as_whole(parallelism) or 1  # Kueue's podsCount: parallelism, or completions when fewer
        if as_whole(completions) is not None:
            pods = min(pods, as_whole(completions))
        if self.min_parallelism >= pods:
            raise PodSpecError(
                f"min_parallelism={self.min_parallelism} needs fewer than the Job's {pods} pod(s) at once "
                "(spec.parallelism, and spec.completions if lower): Kueue's webhook takes 1 to pods - 1"
            )

    def team(self, queues: Sequence[TeamQueue], namespace: Any, pool: str | None) -> TeamQueue | None:
        """The team whose queue this is, refused when the placement lists queues and none fits.

        ``namespace``: the Job's metadata.namespace (UNKNOWN: judged by the queue's name alone).
        Without queues in the placement, the queue cannot be checked, and partial admission,
        which needs a team's opt-in, is refused.
        """
        if self.queue is None:
            return None
        if not queues:
            if self.min_parallelism is not None:
                raise PodSpecError(
                    "min_parallelism needs the team's partialAdmission: true, and the placement lists no teams' "
                    "queues (pass the platform's placement output, which has them when teams: is set)"
                )
            return None
        declared = ", ".join(f"{q.namespace}/{q.name}" for q in queues)
        if namespace is None:
            raise PodSpecError(
                f"queue={self.queue!r} needs metadata.namespace, a team's namespace: Kueue admits a Job only "
                f"through the LocalQueue of its own namespace; declared: {declared}"
            )
        found = [
            q for q in queues if q.name == self.queue and (not known(namespace) or q.namespace == namespace)
        ]
        if not found:
            where = f"namespace {namespace!r}" if known(namespace) else "any namespace"
            raise PodSpecError(
                f"queue {self.queue!r} in {where} is not a queue any team declares (declared: {declared}): "
                "the Job would wait forever; use your team's namespace and queue, or ask for a team (teams:)"
            )
        team = found[0]
        if pool is None and len(team.pools) > 1:
            raise PodSpecError(
                f"queue={self.queue!r} without pool: team {team.team!r} has quota on {', '.join(team.pools)}, "
                "and Kueue may admit the Job to any of them, pinning it there, where the pool its pods can use "
                "(their GPUs, their provisioner) may be another: they would stay Pending, requeued by "
                f"waitForPodsReady; set pool to one of {', '.join(team.pools)}"
            )
        if pool is not None and pool not in team.pools:
            raise PodSpecError(
                f"pool {pool!r}: team {team.team!r} has no quota on it, so Kueue would never admit the Job; "
                f"its pools: {', '.join(team.pools)}"
            )
        if self.min_parallelism is not None and not team.partial_admission:
            raise PodSpecError(
                f"min_parallelism={self.min_parallelism}: team {team.team!r} has not opted in to partial admission "
                f"(teams.{team.team}.partialAdmission: true in the platform's config); drop min_parallelism"
            )
        return team

    def check_unqueued(self, queues: Sequence[TeamQueue], namespace: Any) -> None:
        """A Job naming no queue in a team's namespace: Kueue's LocalQueue ``default`` takes it anyway
        (LocalQueueDefaulting, GA in 0.17), so it is queued without the waits and refusals that needs."""
        if self.queue is not None or namespace is None or not known(namespace):
            return
        for team in queues:
            if team.namespace == namespace:
                raise PodSpecError(
                    f"namespace {namespace!r} is team {team.team!r}'s: Kueue queues every Job there (its LocalQueue "
                    f"{team.name!r} takes the Jobs that name none); pass queue={team.name!r}, which makes the waits "
                    "allow for the queue and refuses what a queued Job cannot do (replace_unready)"
                )

    def labels(self, team: TeamQueue | None) -> dict[str, str]:
        """The Job's Kueue labels: its queue, and its priority class (the team's default if it names none)."""
        if self.queue is None:
            return {}
        priority = self.priority or (team.priority if team else None)
        return {QUEUE_LABEL: self.queue, **({PRIORITY_LABEL: priority} if priority else {})}

    def annotations(self) -> dict[str, str]:
        return {MIN_PARALLELISM: str(self.min_parallelism)} if self.min_parallelism is not None else {}
