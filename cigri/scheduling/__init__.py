"""Metascheduler strategies: which campaign's jobs go to which cluster in a pass.

A strategy sees plain views of the campaigns and clusters and returns assignments; the cycle turns them
into batches. Strategies are small classes behind :class:`MetaScheduler`, chosen by name from
:func:`registry`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import ConfigError
from ..model import CampaignType


@dataclass(frozen=True)
class Demand:
    """What a campaign may still send to one cluster this pass."""

    slots_per_job: int
    limit: int  # jobs at most (max_jobs, or a test campaign's one job), before the cluster's budget


@dataclass(frozen=True)
class CampaignView:
    id: int
    type: CampaignType
    user: str
    submitted_at: float
    waiting: int  # jobs to launch
    demands: dict[str, Demand]  # usable clusters only


@dataclass(frozen=True)
class ClusterView:
    name: str
    free: int  # idle slots not yet promised to jobs waiting there
    queue: int  # jobs cigri may still queue there beyond its free slots


@dataclass(frozen=True)
class Assignment:
    cluster: str
    campaign_id: int
    jobs: int


class MetaScheduler(Protocol):
    name: str

    def plan(self, campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView]) -> list[Assignment]: ...


class TestFirstFifo:
    """CiGri's order: test campaigns first (one job per cluster each), then default campaigns by age.

    Each cluster's budget goes to the oldest campaign that can use it; a campaign whose jobs are all
    placed leaves the rest to the next one. Free slots on every cluster are filled before any queue
    allowance, so that jobs do not wait in one cluster's queue while another has idle slots."""

    name = "fifo"

    def plan(self, campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView]) -> list[Assignment]:
        order = sorted(campaigns, key=lambda c: (c.type != CampaignType.TEST, c.submitted_at, c.id))
        waiting = {c.id: c.waiting for c in order}
        taken: dict[tuple[str, int], int] = {}
        for budget_of in (lambda c: c.free, lambda c: c.queue):
            for cluster in clusters:
                budget = budget_of(cluster)
                for campaign in order:
                    demand = campaign.demands.get(cluster.name)
                    if demand is None or budget < demand.slots_per_job or waiting[campaign.id] <= 0:
                        continue
                    key = (cluster.name, campaign.id)
                    n = min(waiting[campaign.id], demand.limit - taken.get(key, 0), budget // demand.slots_per_job)
                    if n > 0:
                        taken[key] = taken.get(key, 0) + n
                        waiting[campaign.id] -= n
                        budget -= n * demand.slots_per_job
        return [Assignment(cluster, campaign_id, n) for (cluster, campaign_id), n in taken.items()]


_REGISTRY: dict[str, type] = {TestFirstFifo.name: TestFirstFifo}


def register(strategy: type) -> type:
    """Make a metascheduler class available by its ``name`` (usable as a class decorator)."""
    _REGISTRY[strategy.name] = strategy
    return strategy


def registry() -> dict[str, type]:
    return dict(_REGISTRY)


def metascheduler(name: str = "fifo") -> MetaScheduler:
    strategies = registry()
    if name not in strategies:
        raise ConfigError(f"unknown metascheduler {name!r} (valid: {', '.join(sorted(strategies))})")
    return strategies[name]()
