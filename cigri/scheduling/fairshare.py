"""``fairshare``: the most under-served user's campaigns first, by decayed usage against configured shares.

**Charge.** Each user is charged, in slot-seconds: its decayed usage (``Snapshot.usage``: the slot-seconds of
its ended jobs, halved every ``half_life`` seconds by the cycle, like Slurm's ``PriorityDecayHalfLife``), plus
the expected cost of its jobs already queued or running on the clusters (their usage is only recorded when they
end), plus what this pass has launched for it so far. A job's expected cost is its slots times its campaign's
estimated job duration, or ``nominal_duration`` while the campaign has no estimate (at least one second, so
that every launch counts); a job running for longer than that costs what it has used so far. Jobs of a
campaign the snapshot does not list are not charged.

**Ranking.** Users are ranked by charge / share, lowest first (``shares``; a user not listed there has
``default_share``). That is the order of Slurm's classic fair-share factor F = 2^(-U/S), with U the user's
charge over all users' charges and S its share over all shares: F falls as U/S grows, and the two sums are the
same for every user, so the ratio alone decides.

**Allocation.** Each cluster's free slots, cluster by cluster, then each one's queue allowance, are handed out
one job at a time to the lowest-ranked user that can use them, re-ranking after each job with that job's cost
charged: one pass does not hand everything to the user that was most under-served when it began. (A user gets
at once the jobs that take it just past the next user's ratio: the same result as one job at a time, in fewer
steps.) Ties between users go to the older campaign; a user's campaigns go oldest first. A campaign takes at
most its waiting jobs, and on a cluster at most its demand's limit.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..model import CampaignType
from . import (
    CampaignView,
    ClusterView,
    Decision,
    Demand,
    GridJob,
    Snapshot,
    State,
    evaluates,
    inputs,
    launches,
    register,
)

HALF_LIFE = 604800.0  # seconds: 7 days, Slurm's PriorityDecayHalfLife default
NOMINAL_DURATION = 3600.0  # seconds charged per slot of a job without an estimate: the JDL's default walltime


def _age(campaign: CampaignView) -> tuple[float, int]:
    return campaign.submitted_at, campaign.id


def _read_options(data: Mapping[str, Any], path: str) -> dict[str, Any]:
    shares = inputs.mapping(data, "shares", path, {})
    return {
        "shares": {str(user): inputs.positive(shares, user, f"{path}.shares" if path else "shares") for user in shares},
        "default_share": inputs.positive(data, "default_share", path, 1.0),
        "nominal_duration": inputs.positive(data, "nominal_duration", path, NOMINAL_DURATION),
    }


@register
class FairShare:
    """The most under-served user's campaigns first (see the module's docstring for the exact rule)."""

    name = "fairshare"
    options = ("default_share", "half_life", "nominal_duration", "shares")

    def __init__(
        self,
        shares: Mapping[str, float] | None = None,
        default_share: float = 1.0,
        half_life: float = HALF_LIFE,
        nominal_duration: float = NOMINAL_DURATION,
    ):
        self.shares = dict(shares or {})
        self.default_share = default_share
        self.half_life = half_life  # the cycle decays usage with it; the ranking takes usage as it comes
        self.nominal_duration = nominal_duration

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> FairShare:
        """Options ``shares`` ({user: weight > 0}), ``default_share`` (> 0, default 1), ``half_life`` (seconds
        > 0, default 604800) and ``nominal_duration`` (seconds > 0, default 3600)."""
        path = f"metasched.{cls.name}"
        inputs.known(options, cls.options, path, "option")
        return cls(half_life=inputs.positive(options, "half_life", path, HALF_LIFE), **_read_options(options, path))

    def share(self, user: str) -> float:
        return self.shares.get(user, self.default_share)

    def cost(self, campaign: CampaignView, slots: int) -> float:
        """Expected slot-seconds of one job of the campaign taking ``slots`` slots."""
        duration = self.nominal_duration if campaign.estimate is None else campaign.estimate
        return slots * max(1.0, duration)

    def decide(self, snapshot: Snapshot, state: State) -> Decision:
        return Decision(launches=launches(self.plan(snapshot)))

    def plan(self, snapshot: Snapshot) -> dict[tuple[str, int], int]:
        """Jobs per (cluster, campaign id): free slots everywhere first, then queue allowances."""
        by_user: dict[str, list[CampaignView]] = {}  # each user's campaigns, oldest first
        for campaign in sorted(snapshot.campaigns, key=_age):
            by_user.setdefault(campaign.user, []).append(campaign)
        charges = self.charges(snapshot)
        waiting = {campaign.id: campaign.waiting for campaign in snapshot.campaigns}
        taken: dict[tuple[str, int], int] = {}
        for kind in ("free", "queue"):
            for cluster in snapshot.clusters:
                if (budget := getattr(cluster, kind)) > 0:
                    self._spend(cluster.name, budget, by_user, charges, waiting, taken)
        return taken

    def charges(self, snapshot: Snapshot) -> dict[str, float]:
        """Each user's charge before this pass launches anything: usage plus jobs on the clusters, each at its
        expected cost or, when it has run for longer, at the slot-seconds it has used."""
        charges = {campaign.user: 0.0 for campaign in snapshot.campaigns} | dict(snapshot.usage)
        campaigns = {campaign.id: campaign for campaign in snapshot.campaigns}
        for cluster in snapshot.clusters:
            for job in cluster.jobs:
                if (campaign := campaigns.get(job.campaign_id)) is not None:
                    used = 0.0 if job.started_at is None else job.slots * (snapshot.now - job.started_at)
                    charges[campaign.user] += max(self.cost(campaign, job.slots), used)
        return charges

    def _spend(
        self,
        cluster: str,
        budget: int,
        candidates: Mapping[str, Sequence[CampaignView]],
        charges: dict[str, float],
        waiting: dict[int, int],
        taken: dict[tuple[str, int], int],
    ) -> None:
        """Hand ``budget`` slots of ``cluster`` out by rank, charging each job as it is given. ``candidates``:
        each user's campaigns, oldest first."""
        first = dict.fromkeys(candidates, 0)  # per user, its first campaign that may still use the budget

        def usable(user: str) -> CampaignView | None:
            """The user's oldest campaign that can still use the budget. Waiting jobs and the budget only
            shrink during the spend, so a campaign that cannot use it is passed for good."""
            campaigns = candidates[user]
            while first[user] < len(campaigns):
                campaign = campaigns[first[user]]
                demand: Demand | None = campaign.demands.get(cluster)
                if (
                    demand is not None
                    and waiting[campaign.id] > 0
                    and taken.get((cluster, campaign.id), 0) < demand.limit
                    and demand.slots_per_job <= budget
                ):
                    return campaign
                first[user] += 1
            return None

        def rank(user: str, campaign: CampaignView) -> tuple[float, float, int, str]:
            return charges[user] / self.share(user), *_age(campaign), user

        heap = [rank(user, campaign) for user in candidates if (campaign := usable(user)) is not None]
        heapq.heapify(heap)
        while heap and budget > 0:
            entry = heapq.heappop(heap)
            user = entry[-1]
            if (campaign := usable(user)) is None:
                continue
            if rank(user, campaign) != entry:  # its oldest usable campaign changed: rank it again
                heapq.heappush(heap, rank(user, campaign))
                continue
            demand = campaign.demands[cluster]
            cost = self.cost(campaign, demand.slots_per_job)
            jobs = min(
                waiting[campaign.id],
                demand.limit - taken.get((cluster, campaign.id), 0),
                budget // demand.slots_per_job,
            )
            if heap:  # no further than just past the next user's ratio
                gap = (heap[0][0] - entry[0]) * self.share(user) / cost
                jobs = min(jobs, max(1, math.ceil(round(gap, 9))))
            taken[cluster, campaign.id] = taken.get((cluster, campaign.id), 0) + jobs
            waiting[campaign.id] -= jobs
            budget -= jobs * demand.slots_per_job
            charges[user] += jobs * cost
            if (campaign := usable(user)) is not None:
                heapq.heappush(heap, rank(user, campaign))


_SCENARIO = ("campaigns", "default_share", "nominal_duration", "queue", "shares", "slots", "usage")
_CAMPAIGN = ("estimate", "id", "max_jobs", "running", "slots_per_job", "user", "waiting")


@evaluates("fairshare")
def evaluate(scenario: Mapping[str, Any]) -> dict:
    """How one cluster's slots are shared among users' campaigns in one pass.

    Input:  {"slots": 10, "queue": 0,
             "shares": {"alice": 2}, "default_share": 1, "nominal_duration": 3600,
             "usage": {"alice": 3600},
             "campaigns": [{"id": 1, "user": "alice", "waiting": 20, "slots_per_job": 1,
                            "max_jobs": 20, "estimate": 60, "running": 0}, ...]}
    Output: {"launches": {"1": 6, ...}}

    slots, queue: the cluster's free slots and queue allowance (queue 0 unless given); shares: users'
    weights (an unlisted user has default_share, 1 unless given); usage: users' decayed slot-seconds
    ({} unless given); campaigns, oldest first: waiting jobs, slots per job (1), at most max_jobs
    (all), the predicted job duration in seconds (none: nominal_duration, 3600 unless given) and
    the campaign's jobs already running there (0). Users are ranked by (usage + running jobs +
    this pass's launches, in slot-seconds) / share, lowest first, re-ranked after each job; a tie
    goes to the older campaign. Campaigns given nothing are left out.

    Example: {"slots": 10, "shares": {"alice": 2, "bob": 1}, "usage": {"alice": 3600}, "campaigns":
    [{"id": 1, "user": "alice", "waiting": 20}, {"id": 2, "user": "bob", "waiting": 20}]}
    gives {"launches": {"1": 6, "2": 4}}.
    """
    inputs.known(scenario, _SCENARIO)
    strategy = FairShare(**_read_options(scenario, ""))
    usage = inputs.mapping(scenario, "usage", "", {})
    usage = {str(user): inputs.number(usage, user, "usage") for user in usage}
    campaigns, jobs = _scenario_campaigns(scenario)
    cluster = ClusterView(
        "cluster",
        free=inputs.integer(scenario, "slots"),
        queue=inputs.integer(scenario, "queue", "", 0),
        jobs=tuple(jobs),
    )
    placed = strategy.plan(Snapshot(0.0, (cluster,), tuple(campaigns), usage))
    return {"launches": {str(c.id): placed[key] for c in campaigns if placed.get(key := ("cluster", c.id), 0) > 0}}


def _scenario_campaigns(scenario: Mapping[str, Any]) -> tuple[list[CampaignView], list[GridJob]]:
    campaigns: list[CampaignView] = []
    jobs: list[GridJob] = []
    for index, (path, item) in enumerate(inputs.records(scenario, "campaigns", _CAMPAIGN, "id")):
        waiting = inputs.integer(item, "waiting", path)
        slots_per_job = inputs.integer(item, "slots_per_job", path, 1, minimum=1)
        estimate = inputs.number(item, "estimate", path) if "estimate" in item else None
        demand = Demand(slots_per_job, inputs.integer(item, "max_jobs", path, waiting))
        user = inputs.text(item, "user", path)
        campaign = CampaignView(
            item["id"], CampaignType.DEFAULT, user, float(index), waiting, {"cluster": demand}, estimate=estimate
        )
        campaigns.append(campaign)
        running = inputs.integer(item, "running", path, 0)
        jobs.extend(GridJob(len(jobs) + n, campaign.id, slots_per_job, 0.0, 0.0) for n in range(running))
    return campaigns, jobs
