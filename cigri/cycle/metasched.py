"""The metascheduler stage: take back jobs stuck in queues, build the pass's snapshot, let the strategies
decide on it (the configured ones, or ``--policy``'s), and record their launches as batches and their stops
for the runner, and their states for the next pass."""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from .. import config
from ..adapters import packing
from ..model import ACTIVE_JOB_STATES, Campaign, CampaignState, CampaignType, EventClass, EventCode, JobState
from ..prediction import Spread
from ..scheduling import (
    RISKY,
    SLOWER,
    Assignment,
    CampaignView,
    ClusterView,
    Demand,
    GridJob,
    GridJobs,
    Record,
    Snapshot,
    State,
    Stop,
    decide,
    slowdown,
    slowness,
)
from . import flow, ondemand, picking, replicas
from .context import Context, log
from .health import cancel_each, capacities, usable

HAZARD_PRIOR = 3600.0  # seconds of run time a cluster's first kills are weighed against (one says little)


def run(ctx: Context) -> None:
    """Take back jobs stuck in queues, then let the strategies decide on the pass's snapshot; record their
    launches as batches for the runner, their stops for the runner to carry out, and their states."""
    campaigns = ctx.store.campaigns(states=[CampaignState.IN_TREATMENT])
    if not campaigns:
        return
    clusters = _clusters(ctx, campaigns)
    ondemand.generate(ctx, campaigns, clusters)
    _take_back(ctx, campaigns, clusters)
    recalls = ctx.store.jobs_to_recall()
    if recalls:
        for view in clusters:  # the strategies see the jobs there as they were before the take-backs
            view.jobs.read()
        _recall(ctx, recalls)
    ctx.avoided = ctx.store.avoided(ctx.clock.now())
    ctx.checkpointed = ctx.store.checkpointed()
    snapshot = _snapshot(ctx, campaigns, clusters)
    launches, stops, states = _decide(ctx, snapshot)
    _record(ctx, snapshot, launches, stops, states)
    replicas.place(ctx, snapshot, launches)


def _clusters(ctx: Context, campaigns: Sequence[Campaign]) -> list[ClusterView]:
    """The usable clusters that answer (and whose flow sensor answers): their budgets (free slots not
    promised to jobs already queued or being submitted there; the queue their flow strategy allows, less
    what already waits there; both capped by the strategy's ``submit`` when it sets one), size,
    properties (the cluster's ``properties`` option, a mapping) and cigri's jobs there."""
    configured = {cluster.name: cluster.config for cluster in ctx.store.clusters()}
    answered = capacities(ctx, usable(ctx, list(configured)))
    candidates: dict[str, set[int]] = defaultdict(set)
    for campaign in campaigns:
        for name in ctx.settings(campaign.id):
            candidates[name].add(campaign.id)
    allowances = flow.allow(ctx, answered, lambda name: _queue_stalled(ctx, name), candidates)
    hazards = ctx.store.hazards(HAZARD_PRIOR)
    views = []
    for name, capacity in answered.items():
        if name not in allowances:
            continue
        allowance = allowances[name]
        launching = ctx.store.launching_count(name)
        ctx.slots[name] = capacity.total
        free = max(0, capacity.free - capacity.queued - launching)
        queue = max(0, allowance.queue - max(0, capacity.queued + launching - capacity.free))
        if allowance.submit is not None:
            free = min(free, allowance.submit)
            queue = min(queue, max(0, allowance.submit - free))
        properties = configured[name].get("properties")
        views.append(
            ClusterView(
                name,
                free,
                queue,
                slots=capacity.total,
                used=capacity.used,
                properties={str(k): str(v) for k, v in properties.items()} if isinstance(properties, dict) else {},
                queued=max(0, capacity.queued + launching - capacity.free),
                others=max(0, capacity.used - capacity.grid_used),
                hazard=hazards.get(name, 0.0),
                period=ctx.periods.get(name, 0.0),
                jobs=GridJobs(lambda name=name: _grid_jobs(ctx, name)),
                running=ctx.running.get(name, {}),
            )
        )
    return views


def _grid_jobs(ctx: Context, cluster: str) -> list[GridJob]:
    """cigri's jobs queued or running on the cluster, as the strategies see them (read when one looks)."""
    return [
        GridJob(job_id, campaign_id, ctx.settings(campaign_id)[cluster]["_slots"], submitted_at, started_at)
        for job_id, campaign_id, submitted_at, started_at in ctx.store.grid_jobs(cluster)
    ]


def _snapshot(ctx: Context, campaigns: Sequence[Campaign], clusters: Sequence[ClusterView]) -> Snapshot:
    """What the strategies see: the clusters, every campaign with jobs to launch or on clusters (a paused
    one's jobs are there too; it launches nothing), users' decayed usage at this pass's time."""
    now = ctx.clock.now()
    open_clusters = {c.name for c in clusters}
    paused = ctx.store.campaigns(states=[CampaignState.PAUSED])
    views = [view for c in (*campaigns, *paused) if (view := _campaign_view(ctx, c, open_clusters))]
    usage = ctx.store.usage(now, config.half_life(ctx.store.settings()))
    speeds = _slowness(ctx, views)
    clusters = [replace(c, slowness=speeds[c.name]) if c.name in speeds else c for c in clusters]
    return Snapshot(now, tuple(clusters), tuple(views), usage)


REMEMBERED = 50  # the latest ended campaigns whose jobs' durations still teach the clusters' speeds


def _slowness(ctx: Context, views: Sequence[CampaignView]) -> dict[str, float]:
    """Each cluster's :func:`~cigri.scheduling.slowness`, learned from the pass's campaigns and the
    :data:`REMEMBERED` that ended last: what a campaign taught stays when it ends (the campaigns left may not
    have run anywhere slow yet). Those are read again only when one more ended; one of the pass's (reopened
    since) counts once. Nothing learned with an oracle, whose word is every campaign's duration anywhere."""
    if ctx.oracle is not None:
        return {}
    last = ctx.store.last_end()
    if last != ctx.remembered[0]:
        ended = ctx.store.ended_durations(REMEMBERED) if last is not None else []
        ctx.remembered = (last, [(campaign_id, Record(mean, there)) for campaign_id, mean, there in ended])
    shown = {view.id for view in views}
    records = [record for view in views if (record := view.record) is not None]
    records += [record for campaign_id, record in ctx.remembered[1] if campaign_id not in shown]
    return slowness(records)


def _decide(ctx: Context, snapshot: Snapshot) -> tuple[list[Assignment], list[Stop], dict[str, State]]:
    """The main strategy decides for every cluster without one of its own, then each cluster strategy for
    its clusters, on a snapshot restricted to them where campaigns wait for what is not placed yet. What a
    strategy asks outside its snapshot is ignored: a launch on a cluster or for a campaign it was not shown,
    a stop of a job not on that cluster."""
    chosen = config.strategies(ctx.store, ctx.scheduler)
    kept = ctx.store.strategy_states()
    states: dict[str, State] = {}
    own = {name for _, names in chosen.own.values() for name in names}
    turns = [(chosen.main, [c.name for c in snapshot.clusters if c.name not in own])]
    turns += [(strategy, list(names)) for strategy, names in chosen.own.values()]
    launches: list[Assignment] = []
    stops: list[Stop] = []
    placed: dict[int, int] = defaultdict(int)
    for strategy, names in turns:
        view = _restricted(snapshot, set(names), placed)
        decision = decide(strategy, view, kept.get(strategy.name, {}))
        campaign_ids = {c.id for c in view.campaigns}
        for launch in decision.launches:
            if launch.cluster in names and launch.campaign_id in campaign_ids and launch.jobs > 0:
                launches.append(launch)
                placed[launch.campaign_id] += launch.jobs
        if decision.stops:
            on_cluster = {(c.name, job.job_id) for c in view.clusters for job in c.jobs}
            stops.extend(stop for stop in decision.stops if (stop.cluster, stop.job_id) in on_cluster)
        states[strategy.name] = decision.state
    return launches, stops, states


def _restricted(snapshot: Snapshot, names: set[str], placed: dict[int, int]) -> Snapshot:
    """The snapshot seen by a strategy deciding for the clusters ``names`` only, after ``placed`` jobs of
    campaigns were launched elsewhere in this pass."""
    if names == {c.name for c in snapshot.clusters} and not placed:
        return snapshot
    return replace(
        snapshot,
        clusters=tuple(c for c in snapshot.clusters if c.name in names),
        campaigns=tuple(
            replace(
                c,
                waiting=max(0, c.waiting - placed.get(c.id, 0)),
                demands={name: d for name, d in c.demands.items() if name in names},
            )
            for c in snapshot.campaigns
        ),
    )


def _queue_stalled(ctx: Context, cluster: str) -> bool:
    """Do cigri's jobs queued on the cluster not start? Either none started since the oldest was queued
    (plus a grace), or jobs were taken back from there and none started since: queueing more there would
    park them."""
    last_start, last_recall = ctx.store.cluster_flow(cluster)
    if last_recall is not None and (last_start is None or last_start < last_recall):
        return True
    oldest = ctx.store.oldest_queued(cluster)
    if oldest is None or ctx.clock.now() - oldest < ctx.patience.queue_grace:
        return False
    return last_start is None or last_start < oldest


def _places(ctx: Context, campaign: Campaign, open_clusters: set[str]) -> dict[str, dict]:
    """The clusters where the campaign may send jobs now, with their progress."""
    blocked = ctx.store.blocked_clusters(campaign.id)
    return {
        name: info
        for name, info in ctx.store.campaign_clusters(campaign.id, settings=False).items()
        if name in open_clusters and name not in blocked and info["prologue_state"] in ("none", "done")
    }


def _take_back(ctx: Context, campaigns: Sequence[Campaign], budgets: Sequence[ClusterView]) -> None:
    """Jobs pending past the queue wait. A test job ends its campaign's test on that cluster, with an event
    naming it; another job is taken back when a cluster of its campaign has a free slot for it now (it
    then avoids the cluster it waited on). Sooner, past the queue grace: a job queued on a cluster that
    started none of cigri's jobs in that grace, while another cluster of its campaign did (it would start
    sooner there: local users or a blocked queue hold the first). Sooner still, once it has waited a pass:
    a job of a campaign with no job left to launch, where another of its clusters with room would end it
    much sooner (:func:`_sooner_elsewhere`). Recorded here; :func:`_recall` asks the RMs."""
    now = ctx.clock.now()
    free = {b.name: b.free for b in budgets}
    grace = ctx.patience.queue_grace
    moving = {b.name for b in budgets if (ctx.store.cluster_flow(b.name)[0] or -math.inf) >= now - grace}
    by_id = {c.id: c for c in campaigns}  # running campaigns: a paused one's jobs stay where they are
    places: dict[int, dict[str, dict]] = {}
    means: dict[int, float] = {}
    room = {b.name: b.free + b.queue for b in budgets}
    known: dict[int, dict[str, Spread]] = {}  # campaigns' durations per cluster, when asked
    empty: dict[int, bool] = {}  # campaigns with no job to launch, when asked
    queues = {b.name: Queue(ctx, b, known) for b in budgets}
    tails = [c.id for c in campaigns if _bag_empty(ctx, c.id, empty)]
    for cluster in free:
        recall, stalled_tests = [], []
        quiet = cluster not in moving and bool(moving)
        before = now - (min(grace, ctx.patience.queue_wait) if quiet else ctx.patience.queue_wait)
        overdue = ctx.store.overdue_jobs(cluster, before)
        look = ctx.periods.get(cluster)
        if tails and look and now - look > before:  # the tails' jobs queued for a pass at least, too
            overdue = sorted(overdue + ctx.store.overdue_jobs(cluster, now - look, campaigns=tails, since=before))
        for job_id, campaign_id, remote, submitted in overdue:
            campaign = by_id.get(campaign_id)
            if campaign is None or (remote and packing.is_packed(remote)):
                continue  # a paused campaign's job stays; a packed one waits its turn in its pack
            waited = submitted is None or submitted < now - ctx.patience.queue_wait
            if campaign.type == CampaignType.TEST:
                if waited:
                    stalled_tests.append((job_id, campaign_id))
                continue
            settings = ctx.settings(campaign_id)
            if campaign_id not in places:
                places[campaign_id] = _places(ctx, campaign, set(free))
            elsewhere = next(
                (name for name in places[campaign_id] if name != cluster and free[name] >= settings[name]["_slots"]),
                None,
            )
            if elsewhere is not None and waited:
                free[elsewhere] -= settings[elsewhere]["_slots"]
                recall.append(job_id)
            elif (
                submitted is not None
                and _bag_empty(ctx, campaign_id, empty)
                and (sooner := _sooner_elsewhere(ctx, job_id, campaign_id, cluster, places, room, queues)) is not None
            ):
                room[sooner] -= settings[sooner]["_slots"]
                recall.append(job_id)
            elif (
                quiet
                and submitted is not None
                and submitted < before
                and submitted < now - _mean_duration(ctx, campaign_id, means)
                and any(name in moving for name in places[campaign_id] if name != cluster)
            ):
                recall.append(job_id)  # back to its bag: queued again where jobs start
        if not recall and not stalled_tests:
            continue
        with ctx.store.transaction():
            ctx.store.request_recall(recall + [job_id for job_id, _ in stalled_tests], cluster, now)
            for job_id, campaign_id in stalled_tests:
                ctx.store.open_event(
                    EventClass.CAMPAIGN,
                    EventCode.TEST_NOT_STARTED,
                    f"test job {job_id} did not start on {cluster} within {ctx.patience.queue_wait:g} s: "
                    f"the test ends there",
                    now,
                    cluster=cluster,
                    campaign_id=campaign_id,
                    job_id=job_id,
                )
        log.info("metasched: %s: %d pending jobs taken back", cluster, len(recall) + len(stalled_tests))


def _bag_empty(ctx: Context, campaign_id: int, cache: dict[int, bool]) -> bool:
    """Has the campaign no job left to launch (read once a pass)? Only then may a job of it queued on one
    cluster be taken back for room on another: else that room goes to one of the jobs to launch anyway."""
    if campaign_id not in cache:
        cache[campaign_id] = not ctx.store.counts(campaign_id)[JobState.TO_LAUNCH]
    return cache[campaign_id]


def _sooner_elsewhere(
    ctx: Context,
    job_id: int,
    campaign_id: int,
    cluster: str,
    places: dict[int, dict[str, dict]],
    room: dict[str, int],
    queues: dict[str, Queue],
) -> str | None:
    """Another cluster of the campaign with room for a job now (free slots, or its queue allowance) where the
    job queued on ``cluster`` would end :data:`~cigri.scheduling.SLOWER` times sooner: the expected start of a
    job queued there now plus its campaign's mean duration there, against the job's expected start where it
    waits plus its mean there (:class:`Queue`), each run stretched by the kills the cluster is likely to deal
    (:func:`~cigri.scheduling.slowdown`). Never a cluster that would likely kill it (over
    :data:`~cigri.scheduling.RISKY`). None when there is none, or its durations are not known."""
    queue = queues[cluster]
    start, here = queue.start(job_id), queue.mean(campaign_id)
    if start is None or here is None:
        return None
    now = ctx.clock.now()
    if start - now < ctx.patience.queue_grace:  # about to start: moving it would cost a cancel for little
        return None
    left = start - now + here * slowdown(queue.view, here)  # its time to an end if it stays (kills included)
    settings = ctx.settings(campaign_id)
    best = None
    for name in places[campaign_id]:
        if name == cluster or room.get(name, 0) < settings[name]["_slots"]:
            continue
        there, mean = queues[name].next_start(), queues[name].mean(campaign_id)
        if there is None or mean is None or slowdown(queues[name].view, mean) > RISKY:  # it would likely die there
            continue
        end = there - now + mean * slowdown(queues[name].view, mean) + (ctx.periods.get(name) or 0.0)
        if left > SLOWER * end and (best is None or end < best[0]):
            best = (end, name)
    return None if best is None else best[1]


class Queue:
    """What cigri expects of its jobs on one cluster (read when first asked): when each queued one starts, as
    the slots local users do not hold free (cigri's running jobs after what :func:`_left` gives them, then
    the jobs queued before, in the order they were queued, for their campaign's mean there), and when a job
    queued now would start. Unknown (None) when a campaign of its jobs has no mean there."""

    def __init__(self, ctx: Context, view: ClusterView, known: dict[int, dict[str, Spread]]):
        self.ctx, self.view, self.known = ctx, view, known
        self._starts: dict[int, float] | None = None
        self._next: float | None = None

    def spread(self, campaign_id: int) -> Spread | None:
        return _cluster_spreads(self.ctx, campaign_id, self.known).get(self.view.name)

    def mean(self, campaign_id: int) -> float | None:
        spread = self.spread(campaign_id)
        return None if spread is None else spread.mean

    def start(self, job_id: int) -> float | None:
        if self._starts is None:
            self._expect()
        return self._starts.get(job_id)

    def next_start(self) -> float | None:
        if self._starts is None:
            self._expect()
        return self._next

    def _expect(self) -> None:
        self._starts = {}
        now = self.ctx.clock.now()
        jobs = self.view.jobs.read()
        frees: list[float] = []
        for job in jobs:
            if job.running:
                spread = self.spread(job.campaign_id)
                if spread is None:
                    return
                frees += [now + _left(spread, now - job.started_at)] * job.slots
        frees += [now] * max(0, self.view.drain_slots - len(frees))
        heapq.heapify(frees)
        for job in sorted((job for job in jobs if not job.running), key=lambda job: (job.submitted_at, job.job_id)):
            mean = self.mean(job.campaign_id)
            if mean is None or len(frees) < job.slots:
                return
            start = max(heapq.heappop(frees) for _ in range(job.slots))
            self._starts[job.job_id] = start
            for _ in range(job.slots):
                heapq.heappush(frees, start + mean)
        self._next = frees[0] if frees else None


def _cluster_spreads(ctx: Context, campaign_id: int, cache: dict[int, dict[str, Spread]]) -> dict[str, Spread]:
    """The durations of the campaign's jobs on each cluster where some terminated (Spritz's), read once a pass
    (``cache``)."""
    if campaign_id not in cache:
        cache[campaign_id] = {
            name: there
            for name, figures in ctx.store.cluster_stats(campaign_id).items()
            if (there := Spread.kept(figures)).n and there.mean is not None
        }
    return cache[campaign_id]


def _left(spread: Spread, ran: float) -> float:
    """What a job that has run ``ran`` seconds is expected to run yet: to its campaign's mean there, and
    past it half as long as it has run. The mean of the jobs ended so far is short of the truth while the
    long ones still run (only the short ones could end yet), so a job past it says more of its own length."""
    assert spread.mean is not None
    return max(spread.mean - ran, ran / 2)


def _mean_duration(ctx: Context, campaign_id: int, means: dict[int, float]) -> float:
    """The campaign's mean job duration as far as its ended jobs tell (0 before any ended), read once a pass:
    a job of a queue that stopped moving waits that long too before it is taken back (one that stops for
    less than a job's duration is worth keeping a place in)."""
    if campaign_id not in means:
        means[campaign_id] = Spread.kept(ctx.store.stats(campaign_id)).mean or 0.0
    return means[campaign_id]


def _recall(ctx: Context, recalls: Sequence[tuple[int, str, str, str | None]]) -> None:
    """Cancel on their RMs the pending jobs recorded to be taken back (``recalls``: the store's
    :meth:`~cigri.store.Store.jobs_to_recall`), and return them to their bags, neither a failure nor a
    resubmission. One that started meanwhile stays where it runs."""
    per_cluster: dict[str, list[tuple[int, str]]] = defaultdict(list)
    started = []
    for job_id, cluster, state, remote in recalls:
        if state == JobState.SUBMITTED.value and remote is not None:
            per_cluster[cluster].append((job_id, remote))
        else:
            started.append(job_id)
    if started:
        with ctx.store.transaction():
            ctx.store.clear_recall(started)

    def taken_back(cluster: str, ids: list[int]) -> None:
        ctx.store.clear_recall(ids)
        ctx.store.requeue(ids, count_resubmit=False, avoid=ctx.avoiding(cluster))
        ctx.report.add("taken back", len(ids))

    cancel_each(ctx, per_cluster, taken_back)


def _campaign_view(ctx: Context, campaign: Campaign, open_clusters: set[str]) -> CampaignView | None:
    """A campaign as the strategies see it, None when it has no job to launch nor on a cluster. Its demands
    name every cluster it may use now (limit 0 when it may send nothing more there); a paused campaign has
    none. Its estimate is Spritz's mean duration of its terminated jobs (kept as running sums when they end),
    or the oracle's word; its estimates per cluster, Spritz's mean there and the jobs it stands on (none with
    the oracle)."""
    counts = ctx.store.counts(campaign.id)
    running = campaign.state == CampaignState.IN_TREATMENT
    waiting = counts[JobState.TO_LAUNCH] if running else 0
    active = sum(counts[state] for state in ACTIVE_JOB_STATES)
    if not waiting and not active:
        return None
    demands = {}
    if running:
        failed = ctx.store.failed_waiting(campaign.id) if waiting else {}
        places = _places(ctx, campaign, open_clusters)
        if len(places) > 1:  # a job killed or taken back by a cluster goes elsewhere, when there is an elsewhere
            ctx.choosy.add(campaign.id)
        else:
            ctx.choosy.discard(campaign.id)
        on_clusters = None
        resuming = {name: n for (c, name), n in ctx.checkpointed.items() if c == campaign.id}
        for name, info in places.items():
            settings = ctx.settings(campaign.id)[name]
            # a job resuming from a checkpoint waits for the cluster holding it
            limit = waiting - sum(n for there, n in resuming.items() if there != name)
            if campaign.id in ctx.choosy:
                limit -= ctx.avoided.get((campaign.id, name), 0)
            if campaign.type == CampaignType.TEST:
                limit = min(limit, 0 if info["launched"] else 1)
            tap = ctx.allowances[name].campaigns.get(campaign.id) if name in ctx.allowances else None
            if tap is not None:  # the cluster's flow caps what the campaign sends there this pass
                limit = min(limit, tap)
            if settings.get("max_jobs"):
                if on_clusters is None:
                    on_clusters = {n: ctx.store.active_by_campaign(n).get(campaign.id, 0) for n in places}
                limit = min(limit, settings["max_jobs"] - on_clusters[name])
            demands[name] = Demand(settings["_slots"], max(0, limit), failed.get(name, 0))
    estimates, samples = {}, {}
    ran_for = 0.0
    if ctx.oracle is not None:
        estimate, confidence = ctx.oracle(campaign.id), 0
    else:
        spread = Spread.kept(ctx.store.stats(campaign.id))
        estimate, confidence = spread.mean, spread.n
        spreads = _cluster_spreads(ctx, campaign.id, {})
        estimates = {name: there.mean for name, there in spreads.items()}
        samples = {name: there.n for name, there in spreads.items()}
        if estimate is None and active:
            since = ctx.store.first_running(campaign.id)
            ran_for = 0.0 if since is None else max(0.0, ctx.clock.now() - since)
    jdl = campaign.jdl
    return CampaignView(
        campaign.id,
        campaign.type,
        campaign.user,
        campaign.submitted_at,
        waiting,
        demands,
        priority=jdl.get("priority", 0),
        klass=jdl.get("class", ""),
        total=campaign.nb_jobs,
        active=active,
        estimate=estimate,
        confidence=confidence,
        estimates=estimates,
        finalize=jdl.get("finalize", False),
        ran_for=ran_for,
        samples=samples,
    )


def _record(
    ctx: Context, snapshot: Snapshot, plan: Sequence[Assignment], stops: Sequence[Stop], states: dict[str, State]
) -> None:
    """In one transaction: the launches as batches for the runner (their jobs chosen by the job picker for
    campaigns with input files, see :mod:`.picking`, else the store's next ones), the stops for the runner to
    carry out, each strategy's state for the next pass, and each cluster's flow state with what it was sent."""
    now = ctx.clock.now()
    with ctx.store.transaction():
        picked = picking.pick(ctx, snapshot, plan)
        for assignment in plan:
            avoiding = (assignment.cluster, now) if assignment.campaign_id in ctx.choosy else None
            if assignment.campaign_id in picked.campaigns:
                jobs = picked.jobs.pop((assignment.cluster, assignment.campaign_id), [])
            else:
                jobs = ctx.store.next_jobs(assignment.campaign_id, assignment.jobs, avoiding, assignment.cluster)
            # a batch's jobs share their environment and walltime: those resuming from a checkpoint, and
            # those with a walltime raised by retry_resources, go in batches of their own
            kinds: dict[tuple[bool, float | None], list[int]] = defaultdict(list)
            for job_id, _name, _params, resumes, scale in jobs:
                kinds[resumes, scale].append(job_id)
            size = getattr(ctx.adapter(assignment.cluster), "max_batch", None) or len(jobs) or 1
            for ids in kinds.values():
                for start in range(0, len(ids), size):  # RMs cap array sizes
                    chunk = ids[start : start + size]
                    ctx.fresh.add(ctx.store.create_batch(assignment.cluster, assignment.campaign_id, chunk, now))
            if jobs:
                ctx.report.add("scheduled", len(jobs))
                log.info(
                    "metasched: %d jobs of campaign %d for %s",
                    len(jobs),
                    assignment.campaign_id,
                    assignment.cluster,
                )
        if stops:
            ctx.store.request_stop([stop.job_id for stop in stops])
            for stop in stops:
                log.info(
                    "metasched: job %d to stop on %s%s",
                    stop.job_id,
                    stop.cluster,
                    f": {stop.reason}" * bool(stop.reason),
                )
        for name, state in states.items():
            ctx.store.set_strategy_state(name, state)
        flow.remember(ctx, plan)
