"""Run a scenario: the real almighty cycle, pass after pass, on simulated clusters and a simulated clock.

Each pass: campaigns that have arrived are submitted (through cigri.campaigns, as gridsub would), the
cycle runs (updator, spritz, metasched, runner, nikita), and a simulated user fixes failed jobs' events
with a resubmission, ``fix_delay`` after they failed. Between passes cigri waits as a looping almighty
does (cigri.loop.wait_for_news): until its period is over, or sooner once a cluster reports a job's end;
the clusters advance with the simulated clock. A watchdog stops a simulation that makes no progress.

The metrics come from the simulated world's own records (cigri.sim.cluster: Usage, Ledger), never from
what cigri counts about itself: a job is done when a cluster ran it to a real end (exit 0, not on a black
hole); a test campaign's jobs that never ran are skipped, any other job that never completed is lost.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import campaigns as campaign_ops
from .. import config
from ..cycle import Cycle
from ..errors import CigriError, ConfigError, TimedOut
from ..jdl import MAX_WALLTIME
from ..jdl import parse as parse_jdl
from ..model import ACTIVE_JOB_STATES, FINAL_JOB_STATES, CampaignState, DataFile, EventClass, JobState
from ..scheduling import MetaScheduler, registry
from ..store import Store
from .clock import SimClock
from .cluster import Ledger, SimCluster
from .fileserver import FileServer
from .reference import Capacity, Work, works
from .reference import makespan as reference_makespan
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


def fair_shares(capacity: float, demands: dict[str, float], weights: dict[str, float]) -> dict[str, float]:
    """Weighted max-min fair shares of ``capacity`` (water-filling): a user who asks less than its weighted
    share of what is left gets what it asks; the rest is shared again, by weight, among the others."""
    shares = {}
    left, asking = capacity, {user for user, demand in demands.items() if demand > 0}
    while asking:
        weight = sum(weights[user] for user in asking)
        satisfied = {user for user in asking if demands[user] <= left * weights[user] / weight}
        if not satisfied:
            shares.update({user: left * weights[user] / weight for user in asking})
            break
        for user in satisfied:
            shares[user] = demands[user]
            left -= demands[user]
        asking -= satisfied
    return shares


def fairness(usage: dict[str, float], shares: dict[str, float]) -> float | None:
    """Jain's index of each user's usage over its fair share (users with a share): 1 when each got its share.
    Usage over raw entitlements would measure demand, not scheduling: a user who asks little looks wronged."""
    return jain([usage.get(user, 0.0) / share for user, share in shares.items() if share > 0])


PROGRESS = (25, 50, 75)  # % of a campaign's jobs done when the estimated end is judged


def eta_error(eta: float | None, at: float, end: float) -> float | None:
    """The error of an end estimated at ``at`` as a fraction of the time that really remained then:
    |eta - end| / (end - at); infinite without an estimate; None when nothing remained (end <= at)."""
    if end <= at:
        return None
    return math.inf if eta is None else abs(eta - end) / (end - at)


def eta_errors(marks: dict[int, dict[int, tuple[float, float | None]]], ends: dict[int, float]) -> dict[str, dict]:
    """Per progress mark: how far the estimated ends were from the true ones.

    ``marks[campaign][p]`` is (the first pass at or after the simulated clusters had completed p % of the
    campaign's jobs, the estimated end cigri recorded at that pass); ``ends[campaign]`` is when its last job
    really ended there (campaigns that did not complete every job are left out). For each p: the campaigns
    judged (``n``); those whose last job had already ended at that pass, left out (``ended``); those with no
    estimate then (``no_estimate``, counted as infinitely wrong); and the median and 90th percentile (nearest
    rank) of :func:`eta_error` in % of the remaining time."""
    out = {}
    for p in PROGRESS:
        errors, ended = [], 0
        for campaign, end in ends.items():
            if p not in marks.get(campaign, {}):
                continue
            at, eta = marks[campaign][p]
            error = eta_error(eta, at, end)
            if error is None:
                ended += 1
            else:
                errors.append(error)
        median, p90 = percentile(errors, 50), percentile(errors, 90)
        out[str(p)] = {
            "n": len(errors),
            "ended": ended,
            "no_estimate": sum(1 for e in errors if math.isinf(e)),
            "median_pct": None if median is None or math.isinf(median) else 100 * median,
            "p90_pct": None if p90 is None or math.isinf(p90) else 100 * p90,
        }
    return out


def work_bound(timelines: list[tuple[float, list[tuple[float, int]]]], *, start: float, work: float) -> float | None:
    """The shortest time from ``start`` in which the clusters could have done ``work`` (core-seconds at speed
    1), given each one's (speed, [(from when, cores the grid could use)]): the first T where
    sum over clusters of speed x (integral from start to start + T of the cores available) reaches the work.
    Past its last change a cluster keeps its last capacity; None if the work can never be done."""
    changes = sorted(
        (t, speed, cores - previous) for speed, timeline in timelines for t, cores, previous in _steps(timeline)
    )
    rate, done, at = 0.0, 0.0, start
    for t, speed, step in changes:
        if t > at:
            if rate > 0 and done + rate * (t - at) >= work:
                break
            done += rate * (t - at)
            at = t
        rate += speed * step
    else:
        if rate <= 0:
            return None
    return at + (work - done) / rate - start


def _steps(timeline: list[tuple[float, int]]):
    """(when, cores from then, cores before) of each change, the first from 0 cores."""
    previous = 0
    for t, cores in timeline:
        yield t, cores, previous
        previous = cores


@dataclass
class Trace:
    """What the simulation records as it goes."""

    times: list[float] = field(default_factory=list)
    queued: list[int] = field(default_factory=list)  # grid jobs waiting in the clusters' queues
    utilization: dict[str, list[float]] = field(default_factory=dict)  # grid slots busy / slots
    pass_seconds: list[float] = field(default_factory=list)  # wall time of each pass
    pending: list[int] = field(default_factory=list)  # jobs waiting in cigri at each pass
    usage: dict[str, float] = field(default_factory=dict)  # cores each user held, integrated over time
    fair: dict[str, float] = field(default_factory=dict)  # its max-min fair share of them, integrated
    waiting: dict[str, list[int]] = field(default_factory=dict)  # slots of grid jobs queued, at each pass
    over: dict[str, list[bool]] = field(default_factory=dict)  # at each pass: more queued than allowed?


@dataclass
class Watchdog:
    """When the simulated world last moved: a job started or ended somewhere, a campaign changed state."""

    stall: float
    seen: tuple = ()
    since: float = 0.0

    def moved(self, now: float, state: tuple) -> bool:
        if state != self.seen:
            self.seen, self.since = state, now
        return now - self.since < self.stall


class Simulation:
    """One run of a scenario. ``policy`` decides for every cluster (a name takes its options from the
    scenario's ``config``); without it, the strategies the scenario configures do (lpt by default).
    ``flow`` sizes every cluster's queue (its options from the ``config`` too); without it, the configured
    flow strategies do (constant by default). With ``oracle``, strategies are handed each campaign's true
    mean job duration as its estimate (Eagle's assumption), instead of what cigri learns from the jobs
    that ended."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        policy: str | MetaScheduler | None = None,
        seed: int | None = None,
        oracle: bool = False,
        flow: str | None = None,
    ):
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.clock = SimClock(0.0, on_advance=self._advance_clusters)
        self.store = Store(":memory:")
        self.ledger = Ledger()
        self.clusters: dict[str, SimCluster] = {}
        for spec in scenario.clusters:
            quota = {} if spec.cache_quota is None else {"cache_quota": spec.cache_quota}
            self.store.add_cluster(spec.name, "sim", quota, 0.0)
            rng = random.Random(f"{self.seed}:{spec.name}")  # the same whatever other clusters there are
            self.clusters[spec.name] = SimCluster(spec, self.clock, rng, self.ledger)
        self.file_server = self._file_server()
        self._configure(scenario.config)
        settings = self.store.settings()
        if self.file_server is not None and self.file_server.spec.reference is None:
            self.file_server.spec = dataclasses.replace(self.file_server.spec, reference=self._reference(settings))
        scheduler = config.build(settings, policy) if isinstance(policy, str) else policy
        self.policy = (scheduler or config.strategies(self.store).main).name
        if flow is not None:
            config.build_flow(settings, flow)  # an unknown name or a bad option fails before the run
        self.flow = flow or str(settings.get("flow", config.DEFAULT_FLOW))
        self.oracle = oracle
        self.cycle = Cycle(
            self.store,
            self.clock,
            scheduler=scheduler,
            forecaster=config.forecaster(settings),
            adapters=self.clusters.__getitem__,
            oracle=(lambda campaign_id: self.plans[campaign_id].mean_duration) if oracle else None,
            flow=flow,
        )
        self.plans: dict[int, CampaignPlan] = {}
        self.campaign_of: dict[int, int] = {}  # scenario campaign index -> cigri campaign id
        self.completed: dict[int, int] = {}  # scenario campaign index -> jobs the clusters completed
        self.last_end: dict[int, float] = {}  # and when the last of them ended
        self.marks: dict[int, dict[int, tuple[float, float | None]]] = {}  # campaign -> p -> (pass, eta then)
        self._firsts_seen = 0
        self.trace = Trace(
            utilization={name: [] for name in self.clusters},
            waiting={name: [] for name in self.clusters},
            over={name: [] for name in self.clusters},
        )
        self.failures_fixed = 0
        self.total_jobs = sum(len(p.durations) for p in scenario.campaigns)
        self.demand: dict[str, int] = {}  # cores each user's arrived jobs take, counted as they arrive
        self.watchdog = Watchdog(scenario.stall)
        self._last_usage: dict[str, int] = {}  # at the last pass: cores each user held
        self._last_fair: dict[str, float] = {}  # and its fair share of them
        self.weights = self.shares()

    def _file_server(self) -> FileServer | None:
        """The scenario's file server, loaded by the running jobs of the clusters it serves (each job by
        its campaign's ``io_weight``)."""
        spec = self.scenario.file_server
        if spec is None:
            return None
        server = FileServer(spec)
        weights = [plan.io_weight for plan in self.scenario.campaigns]

        def weight_of(work: str) -> float:  # work keys are c<campaign index>j<job index> (work_key)
            return weights[int(work[1 : work.index("j")])]

        for name, cluster in self.clusters.items():
            if not spec.clusters or name in spec.clusters:
                cluster.file_server, cluster.weight_of = server, weight_of
        return server

    def _reference(self, settings: dict[str, object]) -> float | None:
        """The configured reference of the first cluster whose sensor reads the file server."""
        sensor = f"{config.LOAD}{self.scenario.file_server.host}"
        for name in self.clusters:
            reference = settings.get(config.cluster_key(name, "reference"))
            if settings.get(config.cluster_key(name, "sensor")) == sensor and reference is not None:
                return float(reference)
        return None

    def _configure(self, settings: dict[str, object]) -> None:
        """Apply the scenario's grid config keys, each checked as ``grid config set`` checks it. The users'
        shares the scenario gives are the fairshare strategy's, unless its config says otherwise."""
        given = {user: share for user, share in self.scenario.users.items() if share != 1.0}
        if given and "fairshare" in registry() and "metasched.fairshare.shares" not in settings:
            settings = {**settings, "metasched.fairshare.shares": dict(self.scenario.users)}
        for key, value in settings.items():
            try:
                config.set_value(self.store, key, value)
            except CigriError as exc:
                raise ConfigError(f"scenario config: {exc}") from None

    def shares(self) -> dict[str, float]:
        """Each user's share, as the metrics judge fairness: the fairshare strategy's configured shares
        (users it does not list get its default share, else 1), else the scenario's users' shares (equal
        unless it gives them)."""
        settings = self.store.settings()
        configured = settings.get("metasched.fairshare.shares")
        if not isinstance(configured, dict):
            return dict(self.scenario.users)
        default = float(settings.get("metasched.fairshare.default_share", 1.0))
        return {user: float(configured.get(user, default)) for user in self.scenario.users}

    def _advance_clusters(self, t: float) -> None:
        for cluster in self.clusters.values():
            cluster.advance_to(t)

    @staticmethod
    def work_key(plan_index: int, job_index: int) -> str:
        """The name of a scenario job, as its param carries it to the cluster that runs it."""
        return f"c{plan_index}j{job_index}"

    def _expected(self, plan: CampaignPlan) -> int:
        """Jobs of the campaign the world is asked to run: a test campaign's one job per cluster."""
        if plan.type != "test":
            return len(plan.durations)
        return min(len(plan.durations), len(plan.clusters or self.clusters))

    def _submit(self, plan: CampaignPlan) -> None:
        names = plan.clusters or tuple(self.clusters)
        index = self.scenario.campaigns.index(plan)
        longest = max(plan.durations, default=1.0)
        walltime = int(min(MAX_WALLTIME, max(3600, math.ceil(longest * 2))))
        data = {
            "name": plan.name,
            "exec_file": "sim",
            "walltime": walltime,
            "resources": plan.resources,
            "test_mode": plan.type == "test",
            "clusters": {name: dict(plan.settings.get(name, {})) for name in names},
            "params": [f"{self.work_key(index, i)} {d:.6f}" for i, d in enumerate(plan.durations)],
        }
        if plan.properties:
            data["properties"] = plan.properties
        if plan.finalize:
            data["finalize"] = True
        jdl = parse_jdl(data)
        campaign_id, _ = campaign_ops.submit(
            self.store, jdl, self.clock, user=plan.user, adapters=self.clusters.__getitem__
        )
        self._add_files(campaign_id, plan)
        self.plans[campaign_id] = plan
        self.campaign_of[index] = campaign_id
        self.demand[plan.user] = self.demand.get(plan.user, 0) + self._expected(plan) * plan.cores

    def _plan_files(self, plan: CampaignPlan) -> tuple[dict[str, int], list[list[str]]]:
        """A campaign's files (key -> bytes) and each of its jobs' keys, from the scenario."""
        if plan.input_files:
            keys = list(plan.input_files)
            return {key: self.scenario.files.get(key, 0) for key in keys}, [keys] * len(plan.durations)
        if plan.job_files:
            sizes = {plan.file_key(n): plan.file_size for n in range(plan.file_count)}
            return sizes, [[plan.file_key(n) for n in numbers] for numbers in plan.job_files]
        return {}, []

    def job_inputs(self) -> dict[str, tuple[str, ...]]:
        """The world's own list of each scenario job's input files (by :meth:`work_key`), keys qualified by
        their campaign (``c0/f07.dat``): two campaigns' files are never the same file."""
        out = {}
        for index, plan in enumerate(self.scenario.campaigns):
            for job, keys in enumerate(self._plan_files(plan)[1]):
                out[self.work_key(index, job)] = tuple(f"c{index}/{key}" for key in keys)
        return out

    @property
    def file_sizes(self) -> dict[str, int]:
        """Bytes of each input file of the scenario, by the qualified keys of :meth:`job_inputs`."""
        return {
            f"c{index}/{key}": size
            for index, plan in enumerate(self.scenario.campaigns)
            for key, size in self._plan_files(plan)[0].items()
        }

    def _add_files(self, campaign_id: int, plan: CampaignPlan) -> None:
        """The campaign's input files (the scenario's ``input_files`` or ``files``), recorded as a submission
        records a JDL's (:func:`cigri.staging.register`), with made-up checksums: the runner stages them."""
        sizes, per_job = self._plan_files(plan)
        if not sizes:
            return
        files = [
            DataFile(key, size, hashlib.sha256(f"{plan.name}/{key}".encode()).hexdigest())
            for key, size in sizes.items()
        ]
        job_ids = [job.id for job in self.store.jobs(campaign_id)]
        with self.store.transaction():
            self.store.add_files(
                campaign_id,
                files,
                [(job_id, key) for job_id, keys in zip(job_ids, per_job, strict=True) for key in keys],
            )

    def _fix_failures(self) -> None:
        """The simulated user runs `gridevents ID -f -r` on each failed job, ``fix_delay`` after it failed (the
        job's cluster is blacklisted for its campaign until its last failure there is fixed)."""
        noticed = self.clock.now() - self.scenario.fix_delay
        for event in self.store.events(cls=EventClass.JOB):
            if event.created_at <= noticed:
                result = campaign_ops.fix_events(self.store, self.clock, event_id=event.id, resubmit=True, user="root")
                self.failures_fixed += result.resubmitted

    def _close_refusals(self) -> None:
        """A cluster that refused a campaign (it can never run its jobs: a campaign event) keeps the campaign
        from ending. Once its other clusters have run every job, the simulated user closes the event
        (`gridevents -c ID -f`) and the campaign ends."""
        for campaign_id in {e.campaign_id for e in self.store.events(cls=EventClass.CAMPAIGN)}:
            counts = self.store.counts(campaign_id)
            if not any(counts[state] for state in (JobState.TO_LAUNCH, JobState.EVENT, *ACTIVE_JOB_STATES)):
                campaign_ops.fix_events(self.store, self.clock, campaign_id=campaign_id, user="root")

    def _mark_progress(self) -> None:
        """After a pass: the campaigns whose completed jobs (the clusters' record) crossed 25, 50 or 75 % of
        their jobs since the previous pass get cigri's estimated end of this pass recorded at that mark."""
        firsts = self.ledger.firsts
        moved = set()
        for work, at in firsts[self._firsts_seen :]:
            index = int(work[1 : work.index("j")])  # work_key's "c<campaign>j<job>"
            self.completed[index] = self.completed.get(index, 0) + 1
            self.last_end[index] = max(at, self.last_end.get(index, at))
            moved.add(index)
        self._firsts_seen = len(firsts)
        now = self.clock.now()
        for index in moved:
            plan = self.scenario.campaigns[index]
            if plan.type == "test":
                continue
            campaign_id = self.campaign_of[index]
            marks = self.marks.setdefault(campaign_id, {})
            for p in PROGRESS:
                if p not in marks and self.completed[index] >= math.ceil(p / 100 * len(plan.durations)):
                    marks[p] = (now, self.store.stats(campaign_id)["eta"])

    def true_ends(self) -> dict[int, float]:
        """When the last job of each campaign that completed all its jobs really ended (test campaigns left out)."""
        return {
            self.campaign_of[index]: self.last_end[index]
            for index, plan in enumerate(self.scenario.campaigns)
            if plan.type != "test" and self.completed.get(index, 0) == len(plan.durations)
        }

    def _sample(self, seconds: float) -> None:
        self.trace.times.append(self.clock.now())
        self.trace.pass_seconds.append(seconds)
        self.trace.queued.append(sum(c.capacity().queued for c in self.clusters.values() if not c.down))
        for name, cluster in self.clusters.items():
            self.trace.utilization[name].append(cluster.grid_used / cluster.spec.slots)
        self.trace.pending.append(sum(self.store.counts(cid)[JobState.TO_LAUNCH] for cid in self._running()))
        self._sample_fairness()

    def _sample_queues(self) -> None:
        """Before a pass, from the simulated queues: each cluster's queued grid slots, and whether they
        exceed what its flow allowed at the previous pass (what nikita judges)."""
        if self.file_server is not None:  # every cluster has reached now: its load so far (and fewer changes kept)
            self.file_server.load_at(self.clock.now())
        allowed = self.cycle.ctx.allowed  # the previous pass's, until this pass begins
        for name, cluster in self.clusters.items():
            if cluster.down:
                continue
            waiting = cluster.waiting_slots()
            self.trace.waiting[name].append(waiting)
            if name in allowed:
                self.trace.over[name].append(waiting > allowed[name])

    def _sample_fairness(self) -> None:
        """Each user's cores held now and its max-min fair share of all the grid's cores held now (demand: the
        cores its arrived, not yet completed jobs take), both counted until the next pass."""
        times = self.trace.times
        span = times[-1] - times[-2] if len(times) > 1 else 0.0
        for user, cores in self._last_usage.items():
            self.trace.usage[user] = self.trace.usage.get(user, 0.0) + cores * span
        for user, cores in self._last_fair.items():
            self.trace.fair[user] = self.trace.fair.get(user, 0.0) + cores * span
        held: dict[str, int] = {}
        for cluster in self.clusters.values():
            for user, cores in cluster.grid_by_user.items():
                held[user] = held.get(user, 0) + cores
        done = self.ledger.cores_by_user
        demands = {user: max(0, cores - done.get(user, 0)) for user, cores in self.demand.items()}
        self._last_usage = held
        self._last_fair = fair_shares(sum(held.values()), demands, self.weights)

    def _running(self) -> list[int]:
        return [c.id for c in self.store.campaigns(states=[CampaignState.IN_TREATMENT])]

    def run(self, on_pass: Callable[[Simulation], None] | None = None) -> dict:
        try:
            return self._run(on_pass)
        finally:
            gc.unfreeze()  # what the run froze (see _run) is the collector's again, the caller's objects with it

    def _run(self, on_pass: Callable[[Simulation], None] | None) -> dict:
        scenario = self.scenario
        arrivals = list(scenario.campaigns)
        period = scenario.period
        started = time.perf_counter()
        self._advance_clusters(self.clock.now())
        while True:
            now = self.clock.now()
            while arrivals and arrivals[0].arrival <= now:
                self._submit(arrivals.pop(0))
            self._sample_queues()
            wall = time.perf_counter()
            self.cycle.run()
            self._mark_progress()
            self._fix_failures()
            self._close_refusals()
            self._sample(time.perf_counter() - wall)
            if on_pass:
                on_pass(self)
            # what survived the pass leaves the collector's generations: its full scans walked every object of
            # the run (millions in the grid week); garbage the next passes make is still collected
            gc.freeze()
            idle = not self._running()
            if idle and not arrivals:
                break
            if now >= scenario.max_time:
                break
            self._check_progress(now, idle)
            if idle:
                self.clock.advance_to(max(now + period, period * math.ceil(arrivals[0].arrival / period)))
            else:
                self._wait_for_news(now, period)
        return self.metrics(time.perf_counter() - started)

    def _wait_for_news(self, started: float, period: float) -> None:
        """What :func:`cigri.loop.wait_for_news` does (the clock goes poll after poll until a cluster shows
        activity or the period is over), without asking the clusters at the polls before their next event:
        activity is a job's end, and nothing ends between events, so those polls could only say no."""
        clock, scenario = self.clock, self.scenario
        clock.sleep(max(0.0, started + scenario.min_gap - clock.now()))
        while clock.now() < started + period:
            if self.cycle.news():
                return
            upcoming = self._next_event()  # after a look that saw nothing, only an event can bring news
            clock.sleep(scenario.poll)
            while clock.now() < min(started + period, upcoming):
                clock.sleep(scenario.poll)

    def _next_event(self) -> float:
        """When the first of the clusters' pending events happens (infinity when none is pending)."""
        return min((cluster.events[0][0] for cluster in self.clusters.values() if cluster.events), default=math.inf)

    def _check_progress(self, now: float, idle: bool) -> None:
        """The watchdog: a TimedOut naming what is stuck once nothing moved for ``stall`` seconds."""
        moves = (
            idle,
            sum(c.usage.started + c.usage.ended for c in self.clusters.values()),
            tuple(self._running()),  # the campaigns in treatment: cheaper than all of them, and enough
        )
        if idle or self.watchdog.moved(now, moves):
            return
        raise TimedOut(
            f"simulation stuck at {now:g} s: no progress for {self.scenario.stall:g} s (no job started or ended, "
            f"no campaign changed state); {'; '.join(self._stuck())}"
        )

    def _stuck(self) -> list[str]:
        """What the running campaigns wait for, and in what state each cluster is."""
        out = []
        for campaign_id in self._running():
            plan = self.plans[campaign_id]
            counts = self.store.counts(campaign_id)
            jobs = ", ".join(f"{n} {state.value}" for state, n in counts.items() if n and state not in FINAL_JOB_STATES)
            out.append(f"campaign {campaign_id} {plan.name} ({plan.user}): {jobs or 'no job left'}")
        for name, cluster in self.clusters.items():
            state = "down" if cluster.down else "up"
            out.append(f"{name}: {state}, {cluster.waiting} queued, {len(cluster.running)} running")
        return out

    # ---- metrics --------------------------------------------------------------------------------

    def metrics(self, wall: float) -> dict:
        scenario = self.scenario
        campaigns = self.store.campaigns()
        completion: dict[str, list[float]] = {"short": [], "long": []}
        per_campaign = []
        for campaign in campaigns:
            plan = self.plans[campaign.id]
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
        bounds = self._lower_bounds(first)
        bound = max((v for v in bounds.values() if v is not None), default=0.0)
        reference = self._offline_reference(first)
        jobs = self._jobs()
        clusters = self.clusters.values()
        available = sum(c.usage.available_slot_seconds for c in clusters)
        shares = self.weights
        total_share = sum(shares.values()) or 1.0
        total_used = sum(self.trace.usage.values()) or 1.0
        total_fair = sum(self.trace.fair.values()) or 1.0
        users = {
            u: {
                "share": shares[u] / total_share,
                "usage": self.trace.usage.get(u, 0.0) / total_used,
                "fair_share": self.trace.fair.get(u, 0.0) / total_fair,
                "held_slot_seconds": sum(c.usage.by_user.get(u, 0.0) for c in clusters),
            }
            for u in shares
        }
        return {
            "scenario": scenario.name,
            "policy": self.policy,
            "oracle": self.oracle,
            "seed": self.seed,
            "simulated_seconds": end,
            "passes": len(self.trace.times),
            "jobs": self.total_jobs,
            **jobs,
            "makespan": makespan,
            "lower_bounds": bounds,
            "makespan_over_bound": makespan / bound if bound else None,
            "reference": reference,
            "makespan_over_reference": makespan / reference if reference else None,
            "completion_time": {
                kind: {"n": len(v), "p50": percentile(v, 50), "p90": percentile(v, 90), "p99": percentile(v, 99)}
                for kind, v in completion.items()
            },
            "clusters": {
                name: {
                    "slots": c.spec.slots,
                    "utilization": _ratio(c.usage.useful_slot_seconds, c.usage.available_slot_seconds),
                    "held_slot_seconds": c.usage.grid_slot_seconds,  # by every grid job, killed or not
                    "available_slot_seconds": c.usage.available_slot_seconds,
                    "down_seconds": c.usage.down_seconds,
                    "local_slot_seconds": c.usage.local_slot_seconds,
                    "started": c.usage.started,
                    "killed": c.usage.killed,
                    "cancelled_queued": c.usage.cancelled_queued,
                    "black_hole_ends": c.usage.black_hole_ends,
                    "bytes_staged": c.usage.bytes_staged,
                    "files_staged": c.usage.files_staged,
                    "files_deleted": c.usage.files_deleted,
                }
                for name, c in self.clusters.items()
            },
            "utilization": _ratio(sum(c.usage.useful_slot_seconds for c in clusters), available),
            "waste": {
                "killed": sum(c.usage.wasted_slot_seconds for c in clusters),
                # of the killed: copies cancelled once another copy of their job had completed (finalize)
                "superseded": sum(c.usage.superseded_slot_seconds for c in clusters),
                "failed": sum(c.usage.failed_slot_seconds for c in clusters),
                "duplicates": sum(c.usage.duplicate_slot_seconds for c in clusters),
            },
            "superseded": sum(c.usage.superseded for c in clusters),
            # queued jobs cancelled before they started: nikita's flooding and timeouts, take-backs, stops
            "cancelled_queued": sum(c.usage.cancelled_queued for c in clusters),
            "resubmitted": sum(c.usage.killed - c.usage.superseded for c in clusters) + self.failures_fixed,
            "failures_fixed": self.failures_fixed,
            "remote_queue": {
                "max": max(self.trace.queued, default=0),
                "mean": sum(self.trace.queued) / len(self.trace.queued) if self.trace.queued else 0,
            },
            "bytes_staged": sum(c.usage.bytes_staged for c in self.clusters.values()),
            "users": users,
            "fairness_maxmin_jain": fairness(self.trace.usage, self.trace.fair),
            # the estimated end's error at 25, 50 and 75 % of each campaign's jobs done (see eta_errors)
            "eta_error": eta_errors(self.marks, self.true_ends()),
            "performance": {
                "wall_seconds": wall,
                "simulated_per_wall_second": end / wall if wall else None,
                "mean_pass_seconds": sum(self.trace.pass_seconds) / len(self.trace.pass_seconds),
            },
            "campaigns": per_campaign,
            "flow": self._flow_metrics(end),
        }

    def _flow_metrics(self, end: float) -> dict:
        """How the flow strategies did, from the simulated world: queued grid slots per cluster at each pass
        (mean, p99, passes above what the flow allowed), local users' wait (core-seconds local jobs waited
        while grid jobs held cores), and the file server's load (time above its reference, mean, peak)."""
        over = [flag for flags in self.trace.over.values() for flag in flags]
        clusters = {}
        for name, cluster in self.clusters.items():
            waiting, flags = self.trace.waiting[name], self.trace.over[name]
            clusters[name] = {
                "waiting_mean": sum(waiting) / len(waiting) if waiting else 0.0,
                "waiting_p99": percentile([float(w) for w in waiting], 99) or 0.0,
                "over_allowance": _ratio(sum(flags), len(flags)),
                "local_wait_core_seconds": cluster.usage.local_wait_core_seconds,
            }
        return {
            "strategy": self.flow,
            "over_allowance": _ratio(sum(over), len(over)),
            "local_wait_core_seconds": sum(c.usage.local_wait_core_seconds for c in self.clusters.values()),
            "clusters": clusters,
            "file_server": self._file_server_metrics(end),
        }

    def _file_server_metrics(self, end: float) -> dict | None:
        server = self.file_server
        if server is None:
            return None
        server.load_at(end)
        return {
            "host": server.spec.host,
            "reference": server.spec.reference,
            "time_above_reference": _ratio(server.seconds_above, end) if server.spec.reference is not None else None,
            "mean_load": _ratio(server.load_seconds, end),
            "peak_load": server.peak,
        }

    def _jobs(self) -> dict[str, int]:
        """done: scenario jobs some cluster ran to a real end; skipped: a test campaign's jobs that never ran;
        lost: any other job that never completed; duplicated: jobs that completed more than once, of which
        hidden: those whose first completion its cluster's outage hid (it went silent within a period of that
        end, before cigri's next look could see it: cigri ran it again as lost)."""
        completed = self.ledger.completed
        done = skipped = 0
        for index, plan in enumerate(self.scenario.campaigns):
            ran = sum(1 for i in range(len(plan.durations)) if self.work_key(index, i) in completed)
            done += ran
            skipped += len(plan.durations) - ran if plan.type == "test" else 0
        return {
            "jobs_done": done,
            "skipped": skipped,
            "lost": self.total_jobs - done - skipped,
            "duplicated": sum(1 for n in completed.values() if n > 1),
            "duplicated_hidden": sum(1 for work, n in completed.items() if n > 1 and self._hidden(work)),
        }

    def _hidden(self, work: str) -> bool:
        """Did an outage of its cluster begin within a period of the scenario job's first completion?"""
        cluster, at = self.ledger.first_ends[work]
        return any(at <= start <= at + self.scenario.period for start, _ in self.clusters[cluster].spec.outages)

    def _lower_bounds(self, first: float) -> dict[str, float | None]:
        """No schedule beats these. Work over the capacity the grid really had: the clusters' slots at their
        speed, less outages and what local users held (each cluster's record of it), from the first
        submission on (see work_bound). The longest job on the fastest cluster."""
        scenario = self.scenario
        work = sum(d * p.cores for p in scenario.campaigns for d in p.durations)
        longest = max((d for p in scenario.campaigns for d in p.durations), default=0.0)
        fastest = max(c.spec.speed for c in self.clusters.values())
        timelines = [(c.spec.speed, c.usage.availability) for c in self.clusters.values()]
        return {
            "work_over_available_capacity": work_bound(timelines, start=first, work=work) if work else 0.0,
            "longest_job": longest / fastest,
        }

    def _offline_reference(self, first: float) -> float | None:
        """The offline reference's makespan (cigri/sim/reference.py) over the jobs that had to run: every job
        of the scenario but a test campaign's that never ran, on the capacity the clusters recorded."""
        capacities, jobs, _ = self._reference_world()
        return reference_makespan(capacities, jobs, start=first)

    def in_order_reference(self) -> float | None:
        """After the run: the in-order reference's makespan, the offline reference's world with each campaign's
        jobs taken in their order (cigri cannot tell them apart), the campaign of the longest true mean first
        (reference.schedule's ``in_order``). Not in the metrics: as costly as the reference itself."""
        capacities, jobs, means = self._reference_world()
        first = min((c.submitted_at for c in self.store.campaigns()), default=0.0)
        return reference_makespan(capacities, jobs, start=first, in_order=means)

    def _reference_world(self) -> tuple[list[Capacity], list[Work], list[float]]:
        """What the references schedule: the clusters' recorded capacity, the jobs that had to run (every job
        of the scenario but a test campaign's that never ran) and each one's campaign's true mean."""
        completed = self.ledger.completed
        jobs: list[Work] = []
        means: list[float] = []
        for index, plan in enumerate(self.scenario.campaigns):
            clusters = frozenset(plan.clusters)  # one per campaign, its jobs share it
            durations = plan.durations
            if plan.type == "test":
                durations = [d for i, d in enumerate(durations) if self.work_key(index, i) in completed]
            jobs += works(plan.arrival, durations, plan.cores, clusters)
            means += [plan.mean_duration] * len(durations)
        capacities = [
            Capacity(name, tuple(c.usage.availability), c.spec.speed, c.spec.delay) for name, c in self.clusters.items()
        ]
        return capacities, jobs, means


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def simulate(
    scenario: Scenario,
    *,
    policy: str | MetaScheduler | None = None,
    seed: int | None = None,
    oracle: bool = False,
    flow: str | None = None,
    on_pass: Callable[[Simulation], None] | None = None,
) -> dict:
    simulation = Simulation(scenario, policy=policy, seed=seed, oracle=oracle, flow=flow)
    try:
        return simulation.run(on_pass)
    finally:
        simulation.cycle.close()
        simulation.store.close()
