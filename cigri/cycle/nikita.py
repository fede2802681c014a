"""Nikita: every kill of the pass, one ``cancel`` per cluster; then hold paused campaigns' queued jobs and
release resumed ones; last, gather the outputs of the jobs that terminated and delete from the clusters' caches
the input files no remaining job uses (:mod:`.files`).

What it kills, each job once and for one reason:

- the jobs users cancelled (griddel): cancelled;
- the copies left on a cluster that was unreachable while their jobs ran again elsewhere (orphans: each one
  counted as its campaign's waste, shown by ``gridstat -c``), and the replicas that lost (:mod:`.replicas`);
- **walltime**: a job running longer than its walltime plus ``walltime_grace`` (an RM that does not enforce
  walltimes, or missed one; CiGri's nikita gives 30 minutes) is killed and counted as its RM's walltime kill
  would be: resubmitted, not sent back to that cluster for a while, an event after its max_attempts;
- **timeout**: a job waiting in a cluster's queue longer than ``queue_timeout`` is killed and returned to its
  bag, neither a failure nor a resubmission, no event, and avoids that cluster for a while (earlier, after
  ``queue_wait``, the metascheduler takes back a pending job another cluster can start now);
- **flooding**: when the slots of cigri's jobs waiting in a cluster's queue exceed what its flow allows this
  pass (``ctx.allowed``), the newest of them until the others fit are killed and returned to their bags the
  same way (without avoiding the cluster). Never a running job.

Timeouts and flooding take queued jobs back: as the metascheduler's take-back, they close the cluster's queue
allowance until one of cigri's jobs starts there. They concern the queued jobs of running default campaigns
only (a paused campaign's are held there on purpose; a test job ends its test after ``queue_wait``; a packed
job waits its turn inside its pack, an RM job that flooding and timeouts leave alone). Before
killing anything for its own reasons on a cluster, nikita reads the cluster's job states again (the updator's
bulk query and bookkeeping), so that a job that started or ended since the pass began is seen as it is.

On each cluster: gather every kill, record nikita's own (``jobs.nikita``) before the RM is called, one
``cancel`` with every remote id, then record what each reason does in one transaction. A cluster whose cancel
fails gets its event and keeps its kills for the next pass, which asks them again when they still hold (a job
now running is not killed for flooding or a timeout; one that ended or is back in its bag is not killed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from .. import config
from ..adapters import packing
from ..errors import AdapterError
from ..model import CampaignState, JobState, KillCause
from ..store import Store
from . import files, replicas, updator
from .context import Context, log
from .health import cluster_failed, cluster_usable


class Reason(StrEnum):
    """Why nikita kills a job of its own accord (the value is what ``jobs.nikita`` records)."""

    FLOODING = "flooding"
    TIMEOUT = "timeout"
    WALLTIME = "walltime"


RUNNING = JobState.RUNNING.value

REPORTED = {
    Reason.FLOODING: "killed for flooding",
    Reason.TIMEOUT: "killed after waiting",
    Reason.WALLTIME: "killed past walltime",
}


@dataclass(frozen=True)
class Limits:
    """Seconds a job may wait in a queue, and run past its walltime, before nikita kills it."""

    queue_timeout: float
    walltime_grace: float


@dataclass(frozen=True)
class Active:
    """One of cigri's jobs queued or running on a cluster, as nikita judges it."""

    job_id: int
    slots: int
    running: bool
    submitted_at: float | None
    started_at: float | None
    walltime: float
    free: bool  # no other kill, take-back or stop asked for it
    movable: bool = True  # a running default campaign's job, not held: one nikita may take back from a queue

    @property
    def since(self) -> float:
        """When it started, as far as cigri can tell: its RM's start time, but never before cigri submitted it
        (an RM whose clock is behind cigri's would make it look older than it is)."""
        return max(t for t in (self.started_at, self.submitted_at, 0.0) if t is not None)


def choose(jobs: Sequence[Active], now: float, allowed: int | None, limits: Limits) -> dict[int, Reason]:
    """The free jobs to kill for nikita's own reasons, one reason each: running past their walltime and the
    grace; queued (and movable) past the timeout; then, when the cluster's ``allowed`` slots are known, the
    newest of the other movable queued ones until the slots of those left fit in it."""
    chosen: dict[int, Reason] = {}
    for job in jobs:
        if not job.free:
            continue
        if job.running:
            if now - job.since > job.walltime + limits.walltime_grace:
                chosen[job.job_id] = Reason.WALLTIME
        elif job.movable and job.submitted_at is not None and now - job.submitted_at > limits.queue_timeout:
            chosen[job.job_id] = Reason.TIMEOUT
    if allowed is None:
        return chosen
    waiting = sorted(
        (job for job in jobs if job.free and job.movable and not job.running and job.job_id not in chosen),
        key=lambda job: (job.submitted_at or 0.0, job.job_id),
    )
    slots = sum(job.slots for job in waiting)
    while waiting and slots > allowed:
        newest = waiting.pop()
        slots -= newest.slots
        chosen[newest.job_id] = Reason.FLOODING
    return chosen


@dataclass(frozen=True)
class Own:
    """A kill nikita asks of its own accord."""

    reason: Reason
    campaign_id: int
    remote: str
    started_at: float | None  # as :attr:`Active.since`: the slot-seconds charged to its user start there


@dataclass
class Kills:
    """What one cluster is asked to kill in this pass."""

    cancelled: list[tuple[int, str]] = field(default_factory=list)  # (job, remote id): users' cancels
    # (orphan, remote, key, campaign)
    orphans: list[tuple[int, str | None, str | None, int | None]] = field(default_factory=list)
    copies: list[replicas.Copy] = field(default_factory=list)
    own: dict[int, Own] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.cancelled or self.orphans or self.copies or self.own)


def run(ctx: Context) -> None:
    """Kill, with one cancel per cluster, what users cancelled, copies and replicas to drop, and the jobs
    flooding a queue, waiting too long or running past their walltime; then hold paused campaigns' queued jobs
    and release resumed ones."""
    settings = ctx.store.settings()
    limits = Limits(
        config.seconds(settings, config.QUEUE_TIMEOUT, ctx.patience.queue_timeout),
        config.seconds(settings, config.WALLTIME_GRACE, ctx.patience.walltime_grace),
    )
    if ctx.store.kills_to_clear():
        with ctx.store.transaction():
            ctx.store.clear_kills()  # asked in a pass that died, and the job is no longer there: nothing to kill
    per_cluster: dict[str, Kills] = defaultdict(Kills)
    for job_id, _, cluster, state, remote in ctx.store.jobs_to_kill():
        if state == JobState.LAUNCHING.value or remote is None:
            continue  # still being submitted: killed next pass, once it has a remote id
        per_cluster[cluster].cancelled.append((job_id, remote))
    for orphan_id, cluster, remote, key, campaign_id in ctx.store.orphans():
        per_cluster[cluster].orphans.append((orphan_id, remote, key, campaign_id))
    for cluster, copies in replicas.doomed(ctx).items():
        per_cluster[cluster].copies.extend(copies)
    for cluster in [c.name for c in ctx.store.clusters()]:
        per_cluster[cluster].own = _own(ctx, cluster, limits)
    for cluster, kills in per_cluster.items():
        if kills and cluster_usable(ctx, cluster):
            _kill_on(ctx, cluster, kills, limits)
    _hold_paused(ctx)
    files.gather(ctx)
    files.clean(ctx)


def _own(ctx: Context, cluster: str, limits: Limits) -> dict[int, Own]:
    """The kills nikita asks of its own accord on the cluster: those asked by an earlier pass that still hold,
    and the jobs :func:`choose` picks now. Read from the state only (no RM call): the queued jobs, and of the
    running ones only those that started early enough to be past the shortest walltime there (a pass reads
    what it may kill, not every job the cluster runs)."""
    jobs, where, asked, stale = [], {}, {}, []
    now, allowed = ctx.clock.now(), ctx.allowed.get(cluster)
    shortest = _shortest_walltime(ctx, cluster)
    started_before = None if shortest is None else now - shortest - limits.walltime_grace
    # with no more queued there than allowed, no queue floods: only the jobs past the queue timeout matter
    queued = sum(
        n * ctx.settings(campaign_id)[cluster]["_slots"] for campaign_id, n in ctx.store.queued_counts(cluster)
    )
    submitted_before = None if allowed is not None and queued > allowed else now - limits.queue_timeout
    for row in ctx.store.nikita_jobs(cluster, started_before=started_before, submitted_before=submitted_before):
        job_id, campaign_id, state, remote, submitted_at, started_at, reason, free, movable = row
        running = state == RUNNING  # read once: an enum's value is a property, asked here per job
        where[job_id] = (campaign_id, remote, None if started_at is None else max(started_at, submitted_at or 0.0))
        if reason is None:
            settings = ctx.settings(campaign_id)[cluster]
            walltime = settings["walltime"]
            movable = movable and not (remote and packing.is_packed(remote))  # in a pack, it waits its turn there
            jobs.append(Active(job_id, settings["_slots"], running, submitted_at, started_at, walltime, free, movable))
        elif (running or not movable) and reason != Reason.WALLTIME.value:
            stale.append(job_id)  # it started, or its campaign was paused: not taken back from the queue
        else:
            asked[job_id] = Reason(reason)
    if stale:
        with ctx.store.transaction():
            ctx.store.clear_kills(stale)
    chosen = choose(jobs, now, allowed, limits)
    return {job_id: Own(reason, *where[job_id]) for job_id, reason in {**asked, **chosen}.items()}


def _shortest_walltime(ctx: Context, cluster: str) -> float | None:
    """The shortest walltime on the cluster of the campaigns whose jobs may run there unasked to stop (running
    or paused ones: a cancelled campaign's jobs all have a kill asked), None when there is none. Read once a
    pass for every cluster."""
    if ctx.walltimes is None:
        shortest: dict[str, float] = {}
        for campaign_id in ctx.store.campaign_ids([CampaignState.IN_TREATMENT, CampaignState.PAUSED]):
            for name, settings in ctx.settings(campaign_id).items():
                shortest[name] = min(settings["walltime"], shortest.get(name, settings["walltime"]))
        ctx.walltimes = shortest
    return ctx.walltimes.get(cluster)


def _kill_on(ctx: Context, cluster: str, kills: Kills, limits: Limits) -> None:
    """One cluster's kills: its job states read again when nikita kills of its own accord there, its own kills
    recorded, one cancel, then what each kill means, in one transaction. A failure is the cluster's: an event,
    and everything is asked again next pass."""
    adapter = ctx.adapter(cluster)
    try:
        if kills.own:
            updator.collect(ctx, cluster)  # a job may have started or ended since the pass began
            kills.own = _own(ctx, cluster, limits)
        users = {job_id for job_id, _ in kills.cancelled}
        kills.own = {job_id: own for job_id, own in kills.own.items() if job_id not in users}
        if kills.own:
            with ctx.store.transaction():
                ctx.store.ask_kills([(job_id, own.reason.value) for job_id, own in kills.own.items()])
        remote_ids = [remote for _, remote in kills.cancelled]
        remote_ids += [own.remote for own in kills.own.values()]
        orphans, waste = [], defaultdict(int)  # the copies, and how many are each campaign's
        for _, remote, key, campaign_id in kills.orphans:
            copies_there = [remote] if remote is not None else (adapter.find_batch(key) or []) if key else []
            orphans.extend(copies_there)
            if campaign_id is not None:
                waste[campaign_id] += len(copies_there)
        copies = replicas.remote_ids(ctx, cluster, kills.copies)
        remote_ids = list(dict.fromkeys([*remote_ids, *orphans, *copies]))
        if remote_ids:
            adapter.cancel(remote_ids)
    except AdapterError as exc:
        cluster_failed(ctx, cluster, exc)
        return
    with ctx.store.transaction():
        _killed(ctx, cluster, kills)
        if kills.orphans:
            ctx.store.drop_orphans([orphan_id for orphan_id, *_ in kills.orphans])
            ctx.store.add_waste(waste)
            ctx.report.add("copies that lost killed", len(orphans))
            log.info("nikita: %d copies of jobs that ran elsewhere cancelled on %s (waste)", len(orphans), cluster)
        if kills.copies:
            replicas.killed(ctx, cluster, kills.copies, len(copies))
        _own_killed(ctx, cluster, kills.own)


def _killed(ctx: Context, cluster: str, kills: Kills) -> None:
    """The jobs users cancelled are cancelled."""
    if not kills.cancelled:
        return
    ids = [job_id for job_id, _ in kills.cancelled]
    ctx.store.set_job_state(ids, JobState.CANCELLED, only_from=(JobState.SUBMITTED, JobState.RUNNING))
    ctx.store.clear_kill(ids)
    ctx.report.add("killed", len(ids))
    log.info("nikita: %d jobs killed on %s", len(ids), cluster)


def _own_killed(ctx: Context, cluster: str, own: dict[int, Own]) -> None:
    """What nikita's own kills mean: queued jobs back to their bags (neither a failure nor a resubmission; after
    a timeout, avoiding the cluster), the cluster's queue closed until one of cigri's jobs starts there; jobs
    past their walltime resubmitted as their RM's walltime kill would be."""
    if not own:
        return
    now = ctx.clock.now()
    by_reason: dict[Reason, list[int]] = defaultdict(list)
    for job_id, kill in own.items():
        by_reason[kill.reason].append(job_id)
    ctx.store.requeue(by_reason[Reason.FLOODING], count_resubmit=False)
    ctx.store.requeue(by_reason[Reason.TIMEOUT], count_resubmit=False, avoid=ctx.avoiding(cluster))
    if by_reason[Reason.FLOODING] or by_reason[Reason.TIMEOUT]:
        ctx.store.took_back(cluster, now)
    overran = [(job_id, own[job_id]) for job_id in by_reason[Reason.WALLTIME]]
    ctx.charge(cluster, [(k.campaign_id, max(0.0, now - k.started_at)) for _, k in overran if k.started_at is not None])
    ctx.store.add_failures([(job_id, k.campaign_id, cluster) for job_id, k in overran])
    why = "killed by nikita: past its walltime and the grace"
    updator.resubmit(
        ctx,
        cluster,
        [updator.Again(job_id, k.campaign_id, why, KillCause.WALLTIME, ended=now) for job_id, k in overran],
    )
    ctx.store.clear_kills(list(own))
    for reason, ids in by_reason.items():
        ctx.report.add(REPORTED[reason], len(ids))
        if ids:
            log.info("nikita: %d jobs %s on %s", len(ids), REPORTED[reason], cluster)


def _hold_paused(ctx: Context) -> None:
    """Hold paused campaigns' queued jobs on their RM, release those of resumed campaigns.

    A hold is recorded as asked before the RM call and as done after it, a release is recorded after
    it: a pass killed in between leaves the job to be asked again (both calls are idempotent), never
    held on a cluster with nothing in cigri's state to release it."""
    to_hold: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for job_id, cluster, remote in ctx.store.jobs_to_hold():
        to_hold[cluster].append((job_id, remote))
    to_release: dict[str, list[tuple[int, str]]] = defaultdict(list)
    gone = []  # no longer queued or running: nothing left to release on the RM
    for job_id, cluster, state, remote in ctx.store.jobs_to_release():
        if state in (JobState.SUBMITTED.value, JobState.RUNNING.value) and remote is not None:
            to_release[cluster].append((job_id, remote))
        else:
            gone.append(job_id)
    if gone:
        with ctx.store.transaction():
            ctx.store.set_hold(gone, Store.HOLD_NONE)
    for cluster, jobs in to_hold.items():
        _hold_on(ctx, cluster, jobs, hold=True)
    for cluster, jobs in to_release.items():
        _hold_on(ctx, cluster, jobs, hold=False)


def _hold_on(ctx: Context, cluster: str, jobs: list[tuple[int, str]], *, hold: bool) -> None:
    """Hold or release jobs on one cluster; a cluster that fails gets an event and is asked next pass."""
    if not cluster_usable(ctx, cluster):
        return
    ids = [job_id for job_id, _ in jobs]
    if hold:
        with ctx.store.transaction():
            ctx.store.set_hold(ids, Store.HOLD_ASKED)
    adapter = ctx.adapter(cluster)
    try:
        (adapter.hold if hold else adapter.release)([remote for _, remote in jobs])
    except AdapterError as exc:
        cluster_failed(ctx, cluster, exc)
        return
    with ctx.store.transaction():
        ctx.store.set_hold(ids, Store.HOLD_DONE if hold else Store.HOLD_NONE)
    what = "held" if hold else "released"
    ctx.report.add(what, len(ids))
    log.info("nikita: %d jobs %s on %s", len(ids), what, cluster)
