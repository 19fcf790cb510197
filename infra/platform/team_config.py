"""``teams:``: which team may use how many GPUs (slices on a time-sliced pool) of which pool, through Kueue,
checked against the pools before anything is declared (:func:`check_teams`; decision 0099)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field, model_validator

from infra.platform.config_types import NAMESPACE_WORDS, Flag, PoolName, Section, text, whole
from infra.platform.pool_config import Pool
from infra.workloads.queues import DEFAULT_PRIORITY, PRIORITY_CLASSES, TeamQueue

# Most nvidia.com/gpu a quota can name: 450 nodes (EKS's maxSize) x 8 GPUs x 16 slices.
MOST_GPUS = 450 * 8 * 16
TEAM_WORDS = (
    "1-63 lowercase letters, digits or '-', a letter or digit at both ends; it names the team's ClusterQueue"
)
TeamName = text(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", TEAM_WORDS, "vision")
# Namespaces that are not a team's to own: the API server's, Kueue's own and the platform's agents'.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "kueue-system")
TeamNamespace = text(
    rf"^(?!({'|'.join(RESERVED_NAMESPACES)})$)[a-z0-9]([-a-z0-9]{{0,61}}[a-z0-9])?$",
    f"{NAMESPACE_WORDS}, not {', '.join(RESERVED_NAMESPACES)}",
    "vision",
)
Gpus = whole(0, MOST_GPUS)


class QuotaConfig(Section):
    """A team's share of one pool, in nvidia.com/gpu as the pool advertises it (slices when time-sliced)."""

    nominal_quota: Gpus
    """GPUs (slices on a time-sliced pool) the team is guaranteed; lent to the cohort while idle."""
    borrowing_limit: Gpus | None = None
    """At most this many more, borrowed from other teams' idle quota; unset: as much as is idle."""
    lending_limit: Gpus | None = None
    """At most this much of nominalQuota is lent out; the rest stays the team's reserve; unset: all of it."""

    @model_validator(mode="after")
    def _lend_what_it_has(self) -> QuotaConfig:
        if self.lending_limit is not None and self.lending_limit > self.nominal_quota:
            raise ValueError(
                f".lendingLimit ({self.lending_limit}) must not exceed nominalQuota ({self.nominal_quota}): "
                "a team lends only quota it has (Kueue's ClusterQueue webhook refuses it too)"
            )
        return self


class TeamConfig(Section):
    """One team: its namespace, its quota per pool, its Jobs' default priority."""

    namespace: TeamNamespace
    """The team's namespace (created by the platform): its Jobs there go through its queue."""
    quotas: Annotated[
        dict[PoolName, QuotaConfig],
        Field(min_length=1, json_schema_extra={"x-key": "pool"}),
    ]
    """Quota per GPU pool by the pool's name (a gpuPools key)."""
    priority: Literal[tuple(PRIORITY_CLASSES)] = DEFAULT_PRIORITY
    """Priority class of the team's Jobs that name none; within a team a higher class preempts a lower one."""
    partial_admission: Flag = False
    """true lets the team's Jobs start with fewer pods than their parallelism (GpuJob min_parallelism)."""


def _reach_words(pool: Pool) -> str:
    settings = pool.settings
    if pool.karpenter and settings.karpenter_settings.gpu_limit is not None:
        return f"its karpenter.gpuLimit, {pool.reach}"
    contract = pool.contract
    return (
        f"maxSize {settings.max_size} x {contract.gpus_per_node} GPU(s) per node x "
        f"{contract.time_slicing_replicas} slice(s) = {pool.reach}"
    )


def check_teams(teams: Mapping[str, TeamConfig], pools: Sequence[Pool], taken: Mapping[str, str]) -> None:
    """Refuse, naming the key: an unknown pool, quotas a pool can never give, a namespace twice or one the
    platform declares itself (``taken``: namespace -> the setting that names it)."""
    by_name = {pool.name: pool for pool in pools}
    owners: dict[str, str] = {}
    for team, config in teams.items():
        if config.namespace in owners:
            raise ValueError(
                f".teams.{team}.namespace {config.namespace!r} is teams.{owners[config.namespace]}'s too: "
                "a namespace goes through one team's queue; give each team its own"
            )
        if config.namespace in taken:
            raise ValueError(
                f".teams.{team}.namespace {config.namespace!r} is {taken[config.namespace]}'s, which the "
                "platform declares for itself: give the team a namespace of its own"
            )
        owners[config.namespace] = team
        for name, quota in config.quotas.items():
            if name not in by_name:
                raise ValueError(
                    f".teams.{team}.quotas.{name}: no GPU pool is called {name!r}; allowed: "
                    f"{', '.join(by_name)} (the gpuPools keys)"
                )
            pool, borrowing = by_name[name], quota.borrowing_limit
            if borrowing is not None and quota.nominal_quota + borrowing > pool.reach:
                raise ValueError(
                    f".teams.{team}.quotas.{name}: nominalQuota {quota.nominal_quota} + borrowingLimit "
                    f"{quota.borrowing_limit} is more than pool {name!r} can ever have ({_reach_words(pool)} "
                    "nvidia.com/gpu): lower borrowingLimit"
                )
    for name, pool in by_name.items():
        shares = {team: c.quotas[name].nominal_quota for team, c in teams.items() if name in c.quotas}
        if sum(shares.values()) > pool.reach:
            raise ValueError(
                f".teams: the nominalQuota of {' + '.join(f'{t} {n}' for t, n in shares.items())} on pool "
                f"{name!r} sum to {sum(shares.values())}, more than it can ever have ({_reach_words(pool)} "
                "nvidia.com/gpu): Kueue would admit Jobs whose pods stay Pending; lower the quotas or raise "
                f"gpuPools.{name}.maxSize"
            )


def team_queues(teams: Mapping[str, TeamConfig]) -> tuple[TeamQueue, ...]:
    """Each team's queue as the contract exports it."""
    return tuple(
        TeamQueue(
            team=team,
            namespace=config.namespace,
            pools=tuple(config.quotas),
            priority=config.priority,
            partial_admission=config.partial_admission,
        )
        for team, config in teams.items()
    )
