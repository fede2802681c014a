"""Metascheduler strategies: which campaign's jobs go to which cluster in a pass.

A strategy sees one immutable :class:`Snapshot` of the pass and its own small persistent state, and returns a
:class:`Decision`: launches per (cluster, campaign), stops (grid jobs to take back: the runner cancels them
and returns them to their bag as preemptions, never failures) and its next state. Strategies are pure
functions of (snapshot, state): no store, no clock, no adapter. They are small classes behind
:class:`MetaScheduler`, chosen by name from :func:`registry`; :func:`metascheduler` builds one from its
options (the configuration's ``metasched.<name>.*`` keys), refusing an unknown name or option.

Test campaigns go first under every strategy (one job per cluster each): :func:`decide` places them, then
hands the strategy what is left. ``grid policy NAME SCENARIO.json`` runs a strategy's core decision on a
described situation through :func:`evaluator`.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, overload

from ..errors import ConfigError
from ..model import CampaignType

State = Mapping[str, Any]  # a strategy's persistent state: JSON-able, stored in the state file by name


@dataclass(frozen=True)
class Demand:
    """What a campaign may still send to one cluster this pass."""

    slots_per_job: int
    limit: int  # jobs at most (max_jobs, or a test campaign's one job), before the cluster's budget
    failed: int = 0  # of the campaign's waiting jobs, those that already failed or were killed on this cluster


@dataclass(frozen=True)
class GridJob:
    """One of cigri's jobs running or waiting on a cluster."""

    job_id: int
    campaign_id: int
    slots: int
    submitted_at: float  # when cigri handed it to the cluster
    started_at: float | None = None  # None while it waits in the cluster's queue
    replica: bool = False  # a second copy of a job running or waiting elsewhere (finalize)
    replicated: bool = False  # the job had a replica already (over, or now its copy): finalize gives it no other

    @property
    def running(self) -> bool:
        return self.started_at is not None


class GridJobs(Sequence[GridJob]):
    """cigri's jobs on a cluster, read when a strategy first looks at them: a pass whose strategies never
    look (fifo, affinity) builds no object per job. Immutable once read; compares as the tuple of its jobs."""

    __slots__ = ("_jobs", "_load")

    def __init__(self, load: Callable[[], Iterable[GridJob]]):
        self._load: Callable[[], Iterable[GridJob]] | None = load
        self._jobs: tuple[GridJob, ...] | None = None

    def read(self) -> tuple[GridJob, ...]:
        """The jobs, read now if they were not yet."""
        if self._jobs is None:
            assert self._load is not None
            self._jobs, self._load = tuple(self._load()), None
        return self._jobs

    @overload
    def __getitem__(self, index: int) -> GridJob: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[GridJob, ...]: ...
    def __getitem__(self, index):
        return self.read()[index]

    def __len__(self) -> int:
        return len(self.read())

    def __iter__(self) -> Iterator[GridJob]:
        return iter(self.read())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GridJobs):
            return self.read() == other.read()
        return isinstance(other, tuple) and self.read() == other

    def __hash__(self) -> int:
        return hash(self.read())

    def __repr__(self) -> str:
        return f"GridJobs({self.read()!r})"


@dataclass(frozen=True)
class Record:
    """What a campaign's ended jobs say of the clusters' speeds (:func:`slowness`): their mean duration
    anywhere, and per cluster where some ended, (their mean there, how many ended there)."""

    mean: float
    there: Mapping[str, tuple[float, int]]


@dataclass(frozen=True)
class CampaignView:
    id: int
    type: CampaignType
    user: str
    submitted_at: float
    waiting: int  # jobs to launch
    demands: Mapping[str, Demand]  # usable clusters only
    priority: int = 0
    klass: str = ""  # the JDL's ``class`` key ("" when absent): Scoot's requestor
    total: int = 0  # jobs in the campaign
    active: int = 0  # jobs queued or running on clusters
    estimate: float | None = None  # predicted job duration in seconds (None: no estimate yet)
    confidence: int = 0  # how many completed jobs the estimate stands on (0: a prior or an oracle's word)
    finalize: bool = False  # replicate the last jobs on idle slots of other clusters (the 2009 design's mode)
    # Spritz's mean job duration per cluster, where some of its jobs terminated (seconds; none with an oracle)
    estimates: Mapping[str, float] = field(default_factory=dict)
    ran_for: float = 0.0  # without an estimate: the longest its running jobs have run yet, a floor of its duration
    samples: Mapping[str, int] = field(default_factory=dict)  # the ended jobs each of ``estimates`` stands on

    @property
    def floor(self) -> float | None:
        """Its estimate, else what its longest running job shows its jobs last at least (None: nothing)."""
        return self.estimate if self.estimate is not None else self.ran_for or None

    @property
    def record(self) -> Record | None:
        """What its ended jobs say of the clusters' speeds (None: none ended, or an oracle's word)."""
        if not self.estimate or not self.estimates:
            return None
        return Record(self.estimate, {name: (mean, self.samples.get(name, 1)) for name, mean in self.estimates.items()})

    @property
    def remaining_work(self) -> float | None:
        """Estimated seconds of work not yet started (Eagle's SRPT key), None without an estimate."""
        return None if self.estimate is None else self.estimate * self.waiting


@dataclass(frozen=True)
class ClusterView:
    name: str
    free: int  # idle slots not yet promised to jobs waiting there
    queue: int  # jobs cigri may still queue there beyond its free slots
    slots: int = 0  # slots the cluster has in all
    used: int = 0  # slots busy, by anyone (local users included)
    properties: Mapping[str, str] = field(default_factory=dict)
    queued: int = 0  # of cigri's jobs there, those waiting beyond its free slots (ahead of a job queued now)
    jobs: Sequence[GridJob] = ()  # cigri's jobs running or waiting there (a tuple, or GridJobs read when needed)
    others: int = 0  # slots busy with jobs that are not cigri's (the cluster's local users)
    hazard: float = 0.0  # kills of cigri's running jobs per second of their run time there (learned)
    period: float = 0.0  # seconds between cigri's last two looks at it (about its pass period; 0: the first look)
    running: Mapping[int, int] = field(default_factory=dict)  # cigri's running jobs there per campaign id
    # how many times a campaign's mean its jobs take there (:func:`slowness`, learned by the cycle from every
    # campaign of the pass and the latest ended ones; None: not learned. With none on any cluster shown, the
    # strategies learn it from the campaigns shown; a cluster left at None beside others counts as 1)
    slowness: float | None = None

    @property
    def drain_slots(self) -> int:
        """The slots that start cigri's queued jobs as they free: those local users do not hold (at least one)."""
        return max(1, self.slots - self.others)

    @property
    def grid_running(self) -> int:
        """Slots cigri's running jobs hold there."""
        return sum(job.slots for job in self.jobs if job.running)


@dataclass(frozen=True)
class Snapshot:
    """Everything a strategy may look at in one pass. Nothing in it changes while strategies decide."""

    now: float
    clusters: tuple[ClusterView, ...]
    campaigns: tuple[CampaignView, ...]
    usage: Mapping[str, float] = field(default_factory=dict)  # user -> decayed slot-seconds

    def cluster(self, name: str) -> ClusterView:
        return next(c for c in self.clusters if c.name == name)

    def campaign(self, campaign_id: int) -> CampaignView:
        return next(c for c in self.campaigns if c.id == campaign_id)


@dataclass(frozen=True)
class Assignment:
    """Launch ``jobs`` of the campaign's waiting jobs on the cluster."""

    cluster: str
    campaign_id: int
    jobs: int


@dataclass(frozen=True)
class Stop:
    """Take one grid job back from its cluster (running or queued): it returns to its campaign's bag."""

    cluster: str
    job_id: int
    reason: str = ""


@dataclass(frozen=True)
class Replica:
    """Run a copy of a job already running elsewhere on ``cluster`` (finalize): the first copy to end wins."""

    cluster: str
    job_id: int


@dataclass(frozen=True)
class Decision:
    launches: tuple[Assignment, ...] = ()
    stops: tuple[Stop, ...] = ()
    replicas: tuple[Replica, ...] = ()
    state: State = field(default_factory=dict)  # the strategy's state for the next pass


class MetaScheduler(Protocol):
    name: str

    def decide(self, snapshot: Snapshot, state: State) -> Decision: ...


def place_tests(snapshot: Snapshot) -> tuple[list[Assignment], Snapshot]:
    """CiGri's rule, under every strategy: each test campaign gets its one job per cluster ahead of every
    budget, even on a full cluster (a test waits for each of its clusters to run one job; the cycle ends it on
    a cluster where that job does not start). Returns those launches and the snapshot the strategy then sees:
    budgets spent (free slots first), test campaigns gone."""
    budgets = {c.name: [c.free, c.queue] for c in snapshot.clusters}
    launches = []
    for campaign in sorted(snapshot.campaigns, key=lambda c: (c.submitted_at, c.id)):
        if campaign.type != CampaignType.TEST:
            continue
        waiting = campaign.waiting
        for cluster, demand in campaign.demands.items():
            n = min(waiting, demand.limit)
            if cluster in budgets and n > 0:
                launches.append(Assignment(cluster, campaign.id, n))
                waiting -= n
                spent = n * demand.slots_per_job
                from_free = min(spent, budgets[cluster][0])
                budgets[cluster][0] -= from_free
                budgets[cluster][1] = max(0, budgets[cluster][1] - (spent - from_free))
    if not launches and not any(c.type == CampaignType.TEST for c in snapshot.campaigns):
        return [], snapshot
    rest = replace(
        snapshot,
        clusters=tuple(replace(c, free=budgets[c.name][0], queue=budgets[c.name][1]) for c in snapshot.clusters),
        campaigns=tuple(c for c in snapshot.campaigns if c.type != CampaignType.TEST),
    )
    return launches, rest


def decide(strategy: MetaScheduler, snapshot: Snapshot, state: State) -> Decision:
    """Test campaigns first, then the strategy on what is left. (The cycle then asks
    :func:`cigri.scheduling.finalize.replicas` for the replicas of finalizing campaigns, once every strategy
    of the pass has decided.)"""
    tests, rest = place_tests(snapshot)
    decision = strategy.decide(rest, state)
    return replace(decision, launches=(*tests, *decision.launches)) if tests else decision


SLOWER = 1.1  # a full queue holds jobs back from a cluster with room where they would end this many times later
# (with the drain rates, x the offline reference, trace.yaml / small.yaml: 1.25 gave 1.056 / 1.18, 1.15 gave
# 1.054 / 1.20, 1.1 gives 1.033 / 1.23: the only margin meeting issue 21's targets on both)
RISKY = 1.5  # a job keeps off a cluster where it would take this many times its duration, restarts included,
SAFE = 1.2  # when another of its clusters would take at most this many
TOO_SLOW = 1.5  # a cluster whose slots run jobs this many times longer than the grid's average slot is slow
SWALLOWS = 5.0  # a cluster ending jobs this many times sooner than their campaigns' mean: not a speed to trust


def slowdown(cluster: ClusterView, estimate: float | None) -> float:
    """How many times its duration a job of ``estimate`` seconds takes to run to its end on the cluster, the
    runs its kills cut short included: (e^(h d) - 1) / (h d) for the cluster's hazard h (1: it kills none)."""
    x = cluster.hazard * (estimate or 0.0)
    return 1.0 if x <= 0 else math.expm1(min(x, 50.0)) / x


def shunned(campaign: CampaignView, clusters: Sequence[ClusterView]) -> frozenset[str]:
    """The clusters the campaign's jobs keep off: those that would likely kill them (a slowdown over
    :data:`RISKY`) while another of its clusters would likely not (:data:`SAFE`), may still take its jobs
    (they do not all avoid it, its ``max_jobs`` is not reached) and would start one soon
    enough to end it sooner (its free slots now, else the jobs queued there over its slots, each of the
    campaign's duration). Short jobs keep none. A campaign none of whose jobs ended yet is judged on how long
    its running ones have run: its jobs last at least that."""
    estimate = campaign.floor
    mine = [c for c in clusters if c.name in campaign.demands]
    if estimate is None or not mine:
        return frozenset()

    def wait(cluster: ClusterView) -> float:
        return 0.0 if cluster.free > 0 else (cluster.queued + 1) * estimate / cluster.drain_slots

    # a safe cluster counts only where the campaign may still send jobs (not all of them avoid it, max_jobs)
    safe = [wait(c) for c in mine if slowdown(c, estimate) <= SAFE and campaign.demands[c.name].limit > 0]
    if not safe:
        return frozenset()
    soonest = min(safe) + estimate
    return frozenset(
        c.name for c in mine if slowdown(c, estimate) > RISKY and estimate * slowdown(c, estimate) > soonest
    )


def fill(
    order: Sequence[CampaignView], clusters: Sequence[ClusterView], taken: dict[tuple[str, int], int] | None = None
) -> dict[tuple[str, int], int]:
    """Spend the clusters' budgets on campaigns in ``order``: every cluster's free slots first, then the queue
    allowances, so that jobs do not wait in one cluster's queue while another has idle slots. A cluster's
    free slots go to the first campaign of ``order`` that can use them and does not keep off it
    (:func:`shunned`, :func:`too_slow`); a campaign's jobs to queue go one by one where they are expected to
    start first (:func:`_queue`). Returns jobs per (cluster, campaign id), adding to ``taken``."""
    taken = {} if taken is None else taken
    waiting = {c.id: c.waiting - sum(n for (_, cid), n in taken.items() if cid == c.id) for c in order}
    avoid = {c.id: shunned(c, clusters) for c in order} if any(c.hazard for c in clusters) else {}
    speeds = learned(order, clusters)
    if speeds:
        drained = horizon(order, clusters)
        for campaign in order:
            slow = too_slow(campaign, clusters, speeds, drained)
            if slow:
                avoid[campaign.id] = avoid.get(campaign.id, frozenset()) | slow
    for cluster in clusters:
        budget = cluster.free
        for campaign in order:
            if budget <= 0:
                break
            if cluster.name not in avoid.get(campaign.id, ()):
                budget -= _give(taken, waiting, campaign, cluster, budget)
    queues = {cluster.name: cluster.queue for cluster in clusters}
    ahead = {cluster.name: cluster.queued for cluster in clusters}
    known = _drains(order, clusters, speeds)
    for campaign in order:
        kept = avoid.get(campaign.id, ())
        allowed = [c for c in clusters if c.name not in kept] if kept else clusters
        _queue(taken, waiting, campaign, allowed, queues, ahead, speeds, known)
    return taken


def _drains(
    campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView], speeds: Mapping[str, float]
) -> dict[str, tuple[float, int]]:
    """Per cluster, (slots freed per second, slots) of cigri's running jobs there whose campaign's mean there
    is known: each campaign's running jobs over its mean there (:func:`expected_mean`)."""
    views = {c.id: c for c in campaigns}
    out = {}
    for cluster in clusters:
        rate, slots = 0.0, 0
        for campaign_id, n in cluster.running.items():
            view = views.get(campaign_id)
            if view is None or view.estimate is None:
                continue
            mean = expected_mean(view, cluster.name, speeds, view.estimate)
            if mean > 0:
                rate += n / mean
                slots += n
        out[cluster.name] = (rate, slots)
    return out


def horizon(campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView]) -> float:
    """Seconds until the grid drains the campaigns' remaining work (waiting jobs and half the active ones, at
    their floor) on all its slots: about when the last of them ends."""
    work = sum((c.waiting + c.active / 2) * (c.floor or 0.0) for c in campaigns)
    return work / max(1, sum(c.slots for c in clusters))


def too_slow(
    campaign: CampaignView, clusters: Sequence[ClusterView], speeds: Mapping[str, float], horizon: float
) -> frozenset[str]:
    """The clusters the campaign keeps off as too slow for it (issue 21, never slower with more clusters):
    those whose slots run jobs :data:`TOO_SLOW` times longer than the grid's average slot (the clusters'
    :func:`slowness`, weighted by their slots, those ending jobs :data:`SWALLOWS` times sooner than their
    campaigns' mean left out: likely a black hole), before any of its jobs ended (they may be the longest), or
    where its mean there would end a job past the ``horizon`` (the grid drains its work by then: a job there
    would end after the rest). A margin of 1.5, not 1.25: a cluster's learned speed is noisy (on small.yaml a
    64-slot cluster looked 1.25 times slower than the average after its jobs drew long durations). Only
    while another of its clusters takes jobs: free slots, room in its queue, or cigri's jobs queued or running
    there."""
    mine = [c for c in clusters if c.name in campaign.demands and campaign.demands[c.name].limit > 0]
    if len(mine) < 2:
        return frozenset()
    # a cluster ending jobs in a fifth of their campaigns' mean likely swallows them (a black hole): no speed
    plausible = [c for c in clusters if speeds.get(c.name, 1.0) >= 1 / SWALLOWS]
    slots = sum(c.slots for c in plausible)
    if not slots:
        return frozenset()
    average = slots / sum(c.slots / speeds.get(c.name, 1.0) for c in plausible)
    estimate = campaign.estimate
    slow = set()
    for c in mine:
        speed = speeds.get(c.name, 1.0)
        if speed < TOO_SLOW * average:
            continue
        mean = expected_mean(campaign, c.name, speeds, estimate or 0.0)
        if estimate is None or mean > horizon:
            slow.add(c.name)
    # the others must take jobs: room there, jobs queued, or cigri's jobs running there that will free their
    # slots (a closed queue with nothing of cigri's there takes none)
    if not any(c.free > 0 or c.queue > 0 or c.queued > 0 or c.used > c.others for c in mine if c.name not in slow):
        return frozenset()
    return frozenset(slow)


def off_slow(snapshot: Snapshot) -> tuple[Stop, ...]:
    """The jobs queued (not started) on a cluster their campaign keeps off as too slow for it (:func:`too_slow`):
    they go back to the bag, to be placed again on a faster cluster (a queued job costs only its cancel)."""
    speeds = learned(snapshot.campaigns, snapshot.clusters)
    if not speeds:
        return ()
    drained = horizon(snapshot.campaigns, snapshot.clusters)
    off = {c.id: slow for c in snapshot.campaigns if (slow := too_slow(c, snapshot.clusters, speeds, drained))}
    if not off:
        return ()
    return tuple(
        Stop(cluster.name, job.job_id, "kept off a cluster too slow for its campaign")
        for cluster in snapshot.clusters
        if any(cluster.name in slow for slow in off.values())
        for job in cluster.jobs
        if not job.running and not job.replica and cluster.name in off.get(job.campaign_id, ())
    )


def _give(taken, waiting, campaign: CampaignView, cluster: ClusterView, budget: int, most: int | None = None) -> int:
    """Give the campaign as many jobs on the cluster as the budget, its demand there and ``most`` allow; the
    slots they take."""
    demand = campaign.demands.get(cluster.name)
    if demand is None or budget < demand.slots_per_job or waiting[campaign.id] <= 0:
        return 0
    n = min(
        waiting[campaign.id], demand.limit - taken.get((cluster.name, campaign.id), 0), budget // demand.slots_per_job
    )
    if most is not None:
        n = min(n, most)
    if n <= 0:
        return 0
    taken[cluster.name, campaign.id] = taken.get((cluster.name, campaign.id), 0) + n
    waiting[campaign.id] -= n
    return n * demand.slots_per_job


def _queue(
    taken,
    waiting,
    campaign: CampaignView,
    clusters: Sequence[ClusterView],
    queues,
    ahead,
    speeds: Mapping[str, float],
    drains: Mapping[str, tuple[float, int]] | None = None,
) -> None:
    """The campaign's jobs to queue, each on the cluster where it is expected to start first: the jobs ahead of
    it there over the rate the cluster frees slots. The cluster with the earliest start takes jobs until its
    next start is later than the runner-up's (ties: list order).

    The campaign's mean on a cluster is :func:`expected_mean`: Spritz's where some of its jobs ended there,
    else from its means where they did and the clusters' :func:`slowness` (before any ended, how long its
    running jobs have run, a floor: they last at least that), the same everywhere when nothing is known. A
    cluster frees slots at the pace of the jobs it runs (``drains``, from :func:`_drains`): cigri's running
    jobs there over their campaigns' means there, and its other slots at this campaign's mean. (On trace.yaml
    a 200-slot cluster running mostly 2,500-s jobs was priced at the 17,300-s jobs of the campaign to place, a
    start 5 times too late: they went to a slower cluster and set the makespan.)

    A full queue still counts once some of the campaign's jobs ran: it starts a job at its next pass at the
    earliest (its period), after the jobs ahead and those already held for it. A cluster with room where the
    campaign's next job would end :data:`SLOWER` times later (its expected start plus its mean there) than on
    a full one loses that job to it, and the next ones that would still end that much sooner there: they wait
    in the bag for it. A cluster with room takes jobs until they would end that much later than on a full one.
    So a slow cluster, or a small busy one, that has room does not take the jobs a full one would end sooner.
    A full cluster the campaign may send no more jobs to (its jobs there avoid it, its ``max_jobs``) holds
    none back."""

    known = campaign.floor
    fallback = known if known is not None else 1.0
    means = {c.name: expected_mean(campaign, c.name, speeds, fallback) for c in clusters}
    held = dict.fromkeys(ahead, 0)  # the campaign's jobs left in the bag for each full cluster
    # slots each cluster frees per second: its running jobs' over their campaigns' means, the rest at this one's
    rates = {}
    for c in clusters:
        rate, slots = (drains or {}).get(c.name, (0.0, 0))
        mean = max(means[c.name], 1e-6)
        rates[c.name] = (rate + max(0, c.drain_slots - slots) / mean) or c.drain_slots / mean

    def behind(cluster: ClusterView) -> float:  # the start of its next job, queued behind the others
        return (ahead[cluster.name] + held[cluster.name] + 1) / rates[cluster.name]

    def start(cluster: ClusterView) -> float:
        return behind(cluster) if queues[cluster.name] > 0 else max(cluster.period, behind(cluster))

    def end(cluster: ClusterView) -> float:  # the end of its next job
        return start(cluster) + means[cluster.name]

    def counted(cluster: ClusterView) -> bool:  # room in its queue, or a full queue that moves, jobs that ran
        return queues[cluster.name] > 0 or (known is not None and ahead[cluster.name] > 0)

    mine = [(i, c) for i, c in enumerate(clusters) if c.name in campaign.demands]
    # a full queue the campaign may send no more jobs to (its jobs there avoid it, max_jobs) holds none back
    full = [
        c
        for _, c in mine
        if queues[c.name] <= 0 and counted(c) and campaign.demands[c.name].limit > taken.get((c.name, campaign.id), 0)
    ]
    # the clusters with room in a heap by expected start (ties: list order); only the one that took jobs changes
    ranked = [(start(c), i, c) for i, c in mine if queues[c.name] > 0]
    heapq.heapify(ranked)
    left = waiting[campaign.id]  # the jobs neither given nor held yet
    while left > 0 and ranked:
        first, i, best = heapq.heappop(ranked)
        finish = first + means[best.name]  # when its next job there would end
        faster = [c for c in full if SLOWER * end(c) <= finish]
        rival = min(faster, key=end, default=None)  # the full queue it loses its next job to, if any
        if rival is not None:  # that job waits in the bag for it, and those after that still end sooner there
            latest = finish / SLOWER - means[rival.name]  # the latest start there that ends sooner
            n = min(left, max(1, math.floor((latest - behind(rival)) * rates[rival.name]) + 1))
            held[rival.name] += n
            left -= n
            heapq.heappush(ranked, (first, i, best))
            continue
        # jobs there until their start passes the next cluster with room's, or their end a full one's
        limit = min([ranked[0][0]] if ranked else [], default=math.inf)
        limit = min([limit] + [SLOWER * end(c) - means[best.name] for c in full])
        most = None if math.isinf(limit) else max(1, math.floor((limit - first) * rates[best.name]) + 1)
        before = waiting[campaign.id]
        used = _give(taken, waiting, campaign, best, queues[best.name], most)
        if used == 0:
            continue
        left -= before - waiting[campaign.id]
        queues[best.name] -= used
        ahead[best.name] += used // campaign.demands[best.name].slots_per_job
        if queues[best.name] > 0:
            heapq.heappush(ranked, (start(best), i, best))
        elif counted(best):
            full.append(best)


def slowness(records: Iterable[Record]) -> dict[str, float]:
    """How many times a campaign's mean duration its jobs take on each cluster: what a cluster's speed says of
    a campaign none of whose jobs ended there yet (:func:`expected_mean`), from what campaigns' ended jobs
    said (:class:`Record`: the cycle gives those of the pass's campaigns and of the latest ended ones).

    Learned from each campaign's means on its clusters against one another, not against its mean anywhere: a
    campaign whose jobs ran mostly on a slow cluster has a mean close to its mean there, and said that cluster
    was about as fast as any (on long-first.yaml with a half-speed cluster added, the slowness learned there
    fell from 1.6 to 1.2, and a long campaign's last jobs went there and ended 2,100 s after the rest).

    In logarithms, each campaign's mean on a cluster is its own base plus the cluster's slowness, solved by
    weighed least squares (:func:`_fit`) over the campaigns that ran on two clusters or more, each mean
    weighed by the seconds of work it stands on (its jobs there times their mean: the few jobs that ended early
    on a slow cluster are its short draws, and a short campaign's means say little of a long one's). That
    fixes the slowness of the clusters such campaigns link up to one factor per linked group, set so that
    the group's slowness is counted in the campaigns' means anywhere (weighed the same way), as its name
    says. A cluster that only campaigns of one cluster ran on: their means there over their means anywhere
    (about 1)."""
    known = []  # (log of its mean anywhere, {cluster: (log of its mean there, weight)})
    for record in records:
        there = {name: (math.log(mean), n * mean) for name, (mean, n) in record.there.items() if mean > 0 and n > 0}
        if there and record.mean > 0:
            known.append((math.log(record.mean), there))
    out: dict[str, float] = {}
    for group, fitted in _fit([there for _, there in known if len(there) > 1]):
        pairs = [
            (w, value - overall - fitted[name])
            for overall, there in known
            for name, (value, w) in there.items()
            if name in group
        ]
        shift = sum(w * gap for w, gap in pairs) / sum(w for w, _ in pairs)
        out.update((name, math.exp(value + shift)) for name, value in fitted.items())
    ratios: dict[str, list[float]] = defaultdict(list)
    for overall, there in known:
        for name, (value, _) in there.items():
            if name not in out:
                ratios[name].append(math.exp(value - overall))
    out.update({name: sum(r) / len(r) for name, r in ratios.items()})
    return out


def _fit(campaigns: Sequence[Mapping[str, tuple[float, float]]]) -> list[tuple[set[str], dict[str, float]]]:
    """The log slowness s of each cluster minimizing the sum over campaigns c and their clusters k of
    w_ck (v_ck - b_c - s_k)^2, ``campaigns`` giving each one's {cluster: (v, w)}. Each base b_c taken out,
    the normal equations are L s = r with L_kl = sum_c w_ck (delta_kl - w_cl / W_c) and r_k = sum_c w_ck
    (v_ck - the campaign's weighed mean of v), W_c its weights' sum. L fixes s only up to one constant per
    group of clusters the campaigns link: each group is solved with its first cluster at 0. Returns (the
    group's clusters, their s) per group."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for there in campaigns:
        first, *rest = there
        for name in rest:
            parent[root(name)] = root(first)
    groups: dict[str, list[str]] = defaultdict(list)
    for name in sorted(parent):
        groups[root(name)].append(name)
    out = []
    for names in groups.values():
        index = {name: i for i, name in enumerate(names[1:])}  # the first is fixed at 0
        size = len(index)
        lhs = [[0.0] * size for _ in range(size)]
        rhs = [0.0] * size
        for there in campaigns:
            if names[0] not in there and not index.keys() & there.keys():
                continue
            total = sum(w for _, w in there.values())
            mean = sum(w * v for v, w in there.values()) / total
            for name, (value, weight) in there.items():
                if name not in index:
                    continue
                i = index[name]
                rhs[i] += weight * (value - mean)
                lhs[i][i] += weight
                for other, (_, w) in there.items():
                    if other in index:
                        lhs[i][index[other]] -= weight * w / total
        solved = _solve(lhs, rhs)
        out.append((set(names), {names[0]: 0.0, **{name: solved[i] for name, i in index.items()}}))
    return out


def _solve(lhs: list[list[float]], rhs: list[float]) -> list[float]:
    """x with lhs x = rhs, by Gauss elimination with partial pivoting (a few dozen clusters at most)."""
    size = len(rhs)
    rows = [[*row, value] for row, value in zip(lhs, rhs, strict=True)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col][col]
        if head == 0:
            continue
        for r in range(col + 1, size):
            factor = rows[r][col] / head
            if factor:
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    x = [0.0] * size
    for col in reversed(range(size)):
        head = rows[col][col]
        tail = sum(rows[col][k] * x[k] for k in range(col + 1, size))
        x[col] = (rows[col][size] - tail) / head if head else 0.0
    return x


def learned(campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView]) -> dict[str, float]:
    """The clusters' :func:`slowness`: the cycle's (:attr:`ClusterView.slowness`, from every campaign of the
    pass and the latest ended ones), else what ``campaigns`` say (clusters shown without it)."""
    kept = {c.name: c.slowness for c in clusters if c.slowness is not None}
    return kept or slowness(record for c in campaigns if (record := c.record) is not None)


def expected_mean(campaign: CampaignView, cluster: str, speeds: Mapping[str, float], fallback: float) -> float:
    """The campaign's mean job duration on the cluster: Spritz's where some of its jobs ended there; else its
    mean where they ended, each over that cluster's :func:`slowness` (weighed by the seconds of work it stands
    on), times this one's; with none ended on a cluster of known slowness, ``fallback`` (its estimate or
    floor) times this cluster's."""
    if cluster in campaign.estimates:
        return campaign.estimates[cluster]
    speed = speeds.get(cluster, 1.0)
    weight = total = 0.0
    for name, mean in campaign.estimates.items():
        other = speeds.get(name)
        if other and mean > 0:
            w = max(1, campaign.samples.get(name, 1)) * mean
            total += w * math.log(mean / other)
            weight += w
    return math.exp(total / weight) * speed if weight else fallback * speed


def launches(taken: Mapping[tuple[str, int], int]) -> tuple[Assignment, ...]:
    return tuple(Assignment(cluster, campaign_id, n) for (cluster, campaign_id), n in taken.items() if n > 0)


class TestFirstFifo:
    """CiGri's order: test campaigns first (one job per cluster each, see :func:`place_tests`), then default
    campaigns by JDL priority (higher first) and age, each cluster's budget to the first of them that can
    use it (see :func:`fill`)."""

    name = "fifo"

    def decide(self, snapshot: Snapshot, state: State) -> Decision:
        return Decision(launches=tuple(self.plan(snapshot.campaigns, snapshot.clusters)), stops=off_slow(snapshot))

    def plan(self, campaigns: Sequence[CampaignView], clusters: Sequence[ClusterView]) -> list[Assignment]:
        order = sorted(campaigns, key=lambda c: (-c.priority, c.submitted_at, c.id))
        return list(launches(fill(order, clusters)))


_REGISTRY: dict[str, type] = {TestFirstFifo.name: TestFirstFifo}
_EVALUATORS: dict[str, Callable[[Mapping[str, Any]], dict]] = {}


def register(strategy: type) -> type:
    """Make a metascheduler class available by its ``name`` (usable as a class decorator)."""
    _REGISTRY[strategy.name] = strategy
    return strategy


def registry() -> dict[str, type]:
    return dict(_REGISTRY)


def metascheduler(name: str = "fifo", options: Mapping[str, Any] | None = None) -> MetaScheduler:
    """The strategy ``name``, built from its options (a class with options has a ``configure`` classmethod
    that checks them and raises ConfigError naming a bad one; a class without refuses any)."""
    strategies = registry()
    if name not in strategies:
        raise ConfigError(f"unknown metascheduler {name!r} (valid: {', '.join(sorted(strategies))})")
    cls = strategies[name]
    if hasattr(cls, "configure"):
        return cls.configure(dict(options or {}))
    if options:
        raise ConfigError(f"metasched.{name}.{sorted(options)[0]}: {name} has no such option")
    return cls()


def evaluates(name: str) -> Callable[[Callable], Callable]:
    """Register the function that ``grid policy NAME SCENARIO.json`` runs: scenario dict in, JSON-able out;
    a malformed scenario raises ConfigError naming the field (see :mod:`cigri.scheduling.inputs`)."""

    def wrap(function: Callable[[Mapping[str, Any]], dict]) -> Callable[[Mapping[str, Any]], dict]:
        _EVALUATORS[name] = function
        return function

    return wrap


def evaluator(name: str) -> Callable[[Mapping[str, Any]], dict]:
    if name not in _EVALUATORS:
        raise ConfigError(f"unknown policy {name!r} (valid: {', '.join(sorted(_EVALUATORS))})")
    return _EVALUATORS[name]


def evaluators() -> list[str]:
    return sorted(_EVALUATORS)


# strategies register themselves on import:
# (each module below adds its class with @register and its ``grid policy`` function with @evaluates)
from . import affinity, classload, cursors, fairshare, locality, lpt, srpt  # noqa: E402, F401
