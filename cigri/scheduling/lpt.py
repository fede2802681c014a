"""``lpt``: the longest work first where it shortens the makespan (Graham's LPT rule), CiGri's order
elsewhere, with a reserve for short work.

**Order.** Campaigns by JDL ``priority`` (higher first). Then the critical ones, longest estimated job
duration first: a campaign is critical when, started after the rest, it would end last, i.e. its remaining
work over the slots it may use, plus one of its jobs, reaches the remaining work of every campaign over
every slot. The other campaigns follow, oldest first (CiGri's order): work that cannot set the end does not
hold short campaigns back. An estimate is Spritz's mean duration; remaining work counts its waiting jobs and
half of its active ones, at the estimate.

**Probes.** A campaign none of whose jobs ended yet has no estimate: before anything else, it gets a probe
job per cluster it may use (less its jobs already queued or running), whose ends tell its duration. Until
then it ranks among the critical ones by how long its running jobs have run, a floor of its duration: behind
known longer work, ahead of it once its jobs ran longer. (On trace.yaml, such a campaign of 2,500-s jobs
took the slots freed by a campaign of 17,300-s jobs ahead of that campaign's last jobs, which then set the
makespan.)

**Short reserve.** A campaign whose estimate is below ``cutoff`` seconds is short. Of each cluster's free
slots, ``short_share`` (10 % by default, at least one slot when any is free) goes to short campaigns first,
oldest first, so that short work arriving behind long work starts within a pass (Eagle's short partition);
what the probes and they leave goes to the rest in order. Then each campaign's jobs to queue go, in the same
order, where they are expected to start first (:func:`cigri.scheduling.fill`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError
from . import CampaignView, ClusterView, Decision, Snapshot, State, fill, horizon, inputs, launches, off_slow, register

CUTOFF = 600.0  # seconds: a campaign whose jobs take less is short (srpt's cutoff)
SHORT_SHARE = 0.1  # of each cluster's free slots, first for short campaigns


def order(campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView]) -> list[CampaignView]:
    """The campaigns in lpt's order (see the module's docstring)."""
    slots = {c.name: c.slots for c in clusters}
    left = {c.id: (c.waiting + c.active / 2) * (c.floor or 0.0) for c in campaigns}
    everything = horizon(campaigns, clusters)

    def key(campaign: CampaignView) -> tuple:
        estimate = campaign.estimate
        if estimate is None:
            return (-campaign.priority, 0, -(campaign.floor or 0.0), campaign.submitted_at, campaign.id)
        usable = max(1, sum(slots.get(name, 0) for name in campaign.demands))
        if left[campaign.id] / usable + estimate >= everything:
            return (-campaign.priority, 0, -estimate, campaign.submitted_at, campaign.id)
        return (-campaign.priority, 1, 0.0, campaign.submitted_at, campaign.id)

    return sorted(campaigns, key=key)


@register
@dataclass(frozen=True)
class Lpt:
    name = "lpt"
    cutoff: float = CUTOFF
    short_share: float = SHORT_SHARE

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> Lpt:
        """Check the ``metasched.lpt.*`` options; a bad one raises ConfigError naming its key."""
        path = f"metasched.{cls.name}"
        inputs.known(options, ("cutoff", "short_share"), path, "option")
        share = inputs.number(options, "short_share", path, SHORT_SHARE)
        if share >= 1:
            raise ConfigError(f"{path}.short_share: must be below 1 (long campaigns need slots), got {share!r}")
        return cls(cutoff=inputs.positive(options, "cutoff", path, CUTOFF), short_share=share)

    def decide(self, snapshot: Snapshot, state: State) -> Decision:
        return Decision(launches=launches(self.plan(snapshot.campaigns, snapshot.clusters)), stops=off_slow(snapshot))

    def plan(self, campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView]) -> dict[tuple[str, int], int]:
        ranked = order(campaigns, clusters)
        short = sorted(
            (c for c in campaigns if c.estimate is not None and c.estimate < self.cutoff),
            key=lambda c: (-c.priority, c.submitted_at, c.id),
        )
        taken: dict[tuple[str, int], int] = {}
        rest = list(clusters)
        # a probe job per cluster for each campaign without an estimate: their ends tell its duration
        probes = [replace(c, waiting=min(c.waiting, len(c.demands) - c.active)) for c in ranked if c.estimate is None]
        rest = _first([c for c in probes if c.waiting > 0], rest, taken, queue=True)
        if short and self.short_share > 0:
            reserve = [replace(c, free=min(c.free, max(1, math.floor(c.free * self.short_share)))) for c in rest]
            rest = _first(short, rest, taken, reserve)
        return fill(ranked, rest, taken)


def _first(
    campaigns: Sequence[CampaignView],
    clusters: Sequence[ClusterView],
    taken: dict[tuple[str, int], int],
    budgets: Sequence[ClusterView] | None = None,
    *,
    queue: bool = False,
) -> list[ClusterView]:
    """Give the campaigns the free slots first (of ``budgets``, else all; and the queue allowances with
    ``queue``), adding to ``taken``; the clusters with the slots they took taken off their free slots, then
    off their allowances."""
    if not campaigns:
        return list(clusters)
    before = dict(taken)
    fill(campaigns, [c if queue else replace(c, queue=0) for c in (budgets or clusters)], taken)
    demands = {c.id: c.demands for c in campaigns}
    spent = dict.fromkeys((c.name for c in clusters), 0)
    for (name, campaign_id), n in taken.items():
        if n > before.get((name, campaign_id), 0):
            spent[name] += (n - before.get((name, campaign_id), 0)) * demands[campaign_id][name].slots_per_job
    return [
        replace(c, free=max(0, c.free - spent[c.name]), queue=max(0, c.queue - max(0, spent[c.name] - c.free)))
        for c in clusters
    ]
