"""Run a scenario: the real almighty cycle, pass after pass, on simulated clusters and a simulated clock.

Each pass: campaigns that have arrived are submitted (through cigri.campaigns, as gridsub would), the
clusters advance to the pass time, the cycle runs (updator, spritz, metasched, runner, nikita), and a
simulated user fixes failed jobs' events with a resubmission. Metrics are sampled at every pass.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import campaigns as campaign_ops
from ..cycle import Cycle
from ..jdl import MAX_WALLTIME
from ..jdl import parse as parse_jdl
from ..model import ACTIVE_JOB_STATES, CampaignState, EventClass, JobState
from ..prediction import predictor
from ..scheduling import MetaScheduler, metascheduler
from ..store import Store
from .clock import SimClock
from .cluster import SimCluster
from .scenario import CampaignPlan, Scenario


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (no interpolation: a value that happened)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def jain(values: list[float]) -> float | None:
    """Jain's fairness index: 1 when all equal, 1/n when one takes everything."""
    if not values or not any(values):
        return None
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


@dataclass
class Trace:
    """What the simulation records as it goes."""

    times: list[float] = field(default_factory=list)
    queued: list[int] = field(default_factory=list)  # grid jobs waiting in the clusters' queues
    utilization: dict[str, list[float]] = field(default_factory=dict)  # grid slots busy / slots
    pass_seconds: list[float] = field(default_factory=list)  # wall time of each pass
    pending: list[int] = field(default_factory=list)  # jobs waiting in cigri at each pass


class Simulation:
    def __init__(self, scenario: Scenario, *, policy: str | MetaScheduler = "fifo", seed: int | None = None):
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.rng = random.Random(self.seed)
        self.clock = SimClock(0.0)
        self.store = Store(":memory:")
        file_sizes = dict(scenario.files)
        self.clusters: dict[str, SimCluster] = {}
        for spec in scenario.clusters:
            self.store.add_cluster(spec.name, "sim", {}, 0.0)
            self.clusters[spec.name] = SimCluster(spec, self.clock, random.Random(self.rng.random()), file_sizes)
        scheduler = metascheduler(policy) if isinstance(policy, str) else policy
        self.policy = scheduler.name
        self.cycle = Cycle(
            self.store, self.clock, scheduler=scheduler, forecaster=predictor(), adapters=self.clusters.__getitem__
        )
        self.plans: dict[int, CampaignPlan] = {}
        self.trace = Trace(utilization={name: [] for name in self.clusters})
        self.failures_fixed = 0
        self.total_jobs = sum(len(p.durations) for p in scenario.campaigns)

    def _submit(self, plan: CampaignPlan) -> None:
        names = plan.clusters or tuple(self.clusters)
        longest = max(plan.durations, default=1.0)
        walltime = int(min(MAX_WALLTIME, max(3600, math.ceil(longest * 2))))
        files = ",".join(plan.input_files)
        data = {
            "name": plan.name,
            "exec_file": "sim",
            "walltime": walltime,
            "resources": plan.resources,
            "test_mode": plan.type == "test",
            "clusters": {name: dict(plan.settings.get(name, {})) for name in names},
            "params": [f"j{i} {d:.6f} {files}".rstrip() for i, d in enumerate(plan.durations)],
        }
        if plan.properties:
            data["properties"] = plan.properties
        jdl = parse_jdl(data)
        campaign_id, _ = campaign_ops.submit(
            self.store, jdl, self.clock, user=plan.user, adapters=self.clusters.__getitem__
        )
        self.plans[campaign_id] = plan

    def _fix_failures(self) -> None:
        """The simulated user runs `gridevents -c ID -f -r` on every failed job."""
        for campaign_id in {e.campaign_id for e in self.store.events(cls=EventClass.JOB)}:
            result = campaign_ops.fix_events(
                self.store, self.clock, campaign_id=campaign_id, resubmit=True, user="root"
            )
            self.failures_fixed += result.resubmitted

    def _close_refusals(self) -> None:
        """A cluster that refused a campaign (it can never run its jobs: a campaign event) keeps the campaign
        from ending. Once its other clusters have run every job, the simulated user closes the event
        (`gridevents -c ID -f`) and the campaign ends."""
        for campaign_id in {e.campaign_id for e in self.store.events(cls=EventClass.CAMPAIGN)}:
            counts = self.store.counts(campaign_id)
            if not any(counts[state] for state in (JobState.TO_LAUNCH, JobState.EVENT, *ACTIVE_JOB_STATES)):
                campaign_ops.fix_events(self.store, self.clock, campaign_id=campaign_id, user="root")

    def _sample(self, seconds: float) -> None:
        self.trace.times.append(self.clock.now())
        self.trace.pass_seconds.append(seconds)
        self.trace.queued.append(sum(c.capacity().queued for c in self.clusters.values() if not c.down))
        for name, cluster in self.clusters.items():
            self.trace.utilization[name].append(cluster.grid_used / cluster.spec.slots)
        self.trace.pending.append(sum(self.store.counts(cid)[JobState.TO_LAUNCH] for cid in self._running()))

    def _running(self) -> list[int]:
        return [c.id for c in self.store.campaigns(states=[CampaignState.IN_TREATMENT])]

    def run(self, on_pass: Callable[[Simulation], None] | None = None) -> dict:
        arrivals = list(self.scenario.campaigns)
        period = self.scenario.period
        t = 0.0
        started = time.perf_counter()
        while True:
            while arrivals and arrivals[0].arrival <= t:
                self._submit(arrivals.pop(0))
            for cluster in self.clusters.values():
                cluster.advance_to(t)
            wall = time.perf_counter()
            self.cycle.run()
            self._fix_failures()
            self._close_refusals()
            self._sample(time.perf_counter() - wall)
            if on_pass:
                on_pass(self)
            idle = not self._running()
            if idle and not arrivals:
                break
            if t >= self.scenario.max_time:
                break
            t = t + period if not idle else max(t + period, period * math.ceil(arrivals[0].arrival / period))
            self.clock.advance_to(t)
        return self.metrics(time.perf_counter() - started)

    # ---- metrics --------------------------------------------------------------------------------

    def metrics(self, wall: float) -> dict:
        scenario = self.scenario
        campaigns = self.store.campaigns()
        completion: dict[str, list[float]] = {"short": [], "long": []}
        per_campaign = []
        done_jobs = 0
        for campaign in campaigns:
            plan = self.plans[campaign.id]
            counts = self.store.counts(campaign.id)
            done_jobs += counts[JobState.TERMINATED] + counts[JobState.SKIPPED]
            took = campaign.ended_at - campaign.submitted_at if campaign.ended_at is not None else None
            kind = "short" if plan.mean_duration <= scenario.short_cutoff else "long"
            if took is not None:
                completion[kind].append(took)
            per_campaign.append(
                {
                    "id": campaign.id,
                    "name": plan.name,
                    "user": plan.user,
                    "kind": kind,
                    "jobs": len(plan.durations),
                    "submitted": campaign.submitted_at,
                    "completion_time": took,
                    "state": campaign.state.value,
                }
            )
        end = self.clock.now()
        first = min((c.submitted_at for c in campaigns), default=0.0)
        makespan = max((c.ended_at for c in campaigns if c.ended_at is not None), default=end) - first
        capacity = sum(c.spec.slots * c.spec.speed for c in self.clusters.values())
        work = sum(d * p.cores for p in scenario.campaigns for d in p.durations)
        longest = max((d for p in scenario.campaigns for d in p.durations), default=0.0)
        fastest = max(c.spec.speed for c in self.clusters.values())
        bounds = {"work_over_slots": work / capacity if capacity else None, "longest_job": longest / fastest}
        bound = max(v for v in bounds.values() if v is not None) if work else 0.0
        completions: dict[int, int] = {}
        for cluster in self.clusters.values():
            for job_id, n in cluster.usage.completions.items():
                completions[job_id] = completions.get(job_id, 0) + n
        shares = dict(scenario.users)
        total_share = sum(shares.values()) or 1.0
        used: dict[str, float] = {}
        for cluster in self.clusters.values():
            for user, seconds in cluster.usage.by_user.items():
                used[user] = used.get(user, 0.0) + seconds
        total_used = sum(used.values()) or 1.0
        users = {u: {"share": shares[u] / total_share, "usage": used.get(u, 0.0) / total_used} for u in shares}
        ratios = [v["usage"] / v["share"] for v in users.values()]
        horizon = max(end, 1e-9)
        return {
            "scenario": scenario.name,
            "policy": self.policy,
            "seed": self.seed,
            "simulated_seconds": end,
            "passes": len(self.trace.times),
            "jobs": self.total_jobs,
            "jobs_done": done_jobs,
            "lost": self.total_jobs - done_jobs,
            "duplicated": sum(1 for n in completions.values() if n > 1),
            "makespan": makespan,
            "lower_bounds": bounds,
            "makespan_over_bound": makespan / bound if bound else None,
            "completion_time": {
                kind: {"n": len(v), "p50": percentile(v, 50), "p90": percentile(v, 90), "p99": percentile(v, 99)}
                for kind, v in completion.items()
            },
            "clusters": {
                name: {
                    "slots": c.spec.slots,
                    "utilization": c.usage.grid_slot_seconds / (c.spec.slots * horizon),
                    "started": c.usage.started,
                    "killed": c.usage.killed,
                    "black_hole_ends": c.usage.black_hole_ends,
                    "bytes_staged": c.usage.bytes_staged,
                }
                for name, c in self.clusters.items()
            },
            "resubmitted": sum(c.usage.killed for c in self.clusters.values()) + self.failures_fixed,
            "failures_fixed": self.failures_fixed,
            "wasted_slot_seconds": sum(c.usage.wasted_slot_seconds for c in self.clusters.values()),
            "remote_queue": {
                "max": max(self.trace.queued, default=0),
                "mean": sum(self.trace.queued) / len(self.trace.queued) if self.trace.queued else 0,
            },
            "bytes_staged": sum(c.usage.bytes_staged for c in self.clusters.values()),
            "users": users,
            "fairness_jain": jain(ratios),
            "performance": {
                "wall_seconds": wall,
                "simulated_per_wall_second": end / wall if wall else None,
                "mean_pass_seconds": sum(self.trace.pass_seconds) / len(self.trace.pass_seconds),
            },
            "campaigns": per_campaign,
        }


def simulate(
    scenario: Scenario,
    *,
    policy: str | MetaScheduler = "fifo",
    seed: int | None = None,
    on_pass: Callable[[Simulation], None] | None = None,
) -> dict:
    simulation = Simulation(scenario, policy=policy, seed=seed)
    try:
        return simulation.run(on_pass)
    finally:
        simulation.cycle.close()
        simulation.store.close()
