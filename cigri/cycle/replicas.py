"""finalize in the cycle: replicas, second copies of a job on other clusters (see
:mod:`cigri.scheduling.finalize` for where they go).

A replica is recorded (``launching``) before its RM is called and submitted under a batch key of its own,
``cigri.<instance>.<campaign>.r.<replica>``, which the runner looks up before submitting: a pass killed in
between submits it once. The updator follows replicas as it follows jobs: the first copy to end successfully
makes the job terminated (when it is a replica, the job takes its cluster, remote id and times: its result is
kept once, and read from there); every other copy is cancelled and counted as waste ("replicas killed"). A
replica that fails is dropped (no event: the original still runs). When the job's own copy is sent back to
the bag (killed by its cluster, taken back), a live replica becomes the job's copy instead. Any other replica is
killed as soon as its job leaves the copy it doubles (the job ended or was cancelled) or its campaign is
paused, cancelled or over.

The stages call :func:`place` (metasched), :func:`follow` (updator, for each
cluster that answers, then :func:`mark_stale`), :func:`submit` (runner) and :func:`doomed`, :func:`remote_ids`
and :func:`killed` (nikita, which cancels them with the cluster's other kills).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

from .. import staging
from ..errors import AdapterError, SubmitError
from ..jdl import split_params
from ..model import Campaign, CampaignType, JobSpec, RemoteState
from ..scheduling import Assignment, CampaignView, Decision, GridJob, Replica, Snapshot, finalize
from . import blackhole
from .context import Context, log
from .health import cluster_failed, cluster_usable


def key(ctx: Context, campaign_id: int, replica_id: int) -> str:
    """A replica's name on its RM: its own batch key, never a batch's (``.b.``) nor a stage's."""
    return ctx.batch_key(campaign_id, "r", replica_id)


# ---- metasched ----------------------------------------------------------------------------------


def place(ctx: Context, snapshot: Snapshot, launches: Sequence[Assignment]) -> None:
    """Once the strategies launched theirs: the replicas of finalizing campaigns, recorded for the runner."""
    _record(ctx, finalize.replicas(_with_copies(ctx, snapshot), Decision(launches=tuple(launches))))


def _with_copies(ctx: Context, snapshot: Snapshot) -> Snapshot:
    """The pass's snapshot as finalize needs it (strategies never see replicas: they would stop the job
    they copy): every live replica on its cluster, the jobs that had theirs flagged, and the demands of the
    running campaigns that finalize with no job left to launch, one replica per active job at most (within
    the campaign's max_jobs on each cluster)."""
    copies = ctx.store.replica_copies()
    finalizing = {
        c.id for c in snapshot.campaigns if c.finalize and not c.waiting and c.active and c.type != CampaignType.TEST
    }
    if not finalizing and not copies:
        return snapshot
    replicated = set().union(*(ctx.store.replicated(campaign_id) for campaign_id in finalizing))
    extra: dict[str, list[GridJob]] = defaultdict(list)
    for job_id, campaign_id, cluster, submitted_at, started_at in copies:
        slots = ctx.settings(campaign_id)[cluster]["_slots"]
        extra[cluster].append(GridJob(job_id, campaign_id, slots, submitted_at, started_at, replica=True))
    clusters = tuple(
        replace(
            c,
            jobs=(*(replace(j, replicated=j.job_id in replicated) for j in c.jobs), *extra.get(c.name, ())),
        )
        for c in snapshot.clusters
    )
    campaigns = tuple(
        replace(c, demands={name: replace(d, limit=_limit(ctx, c, name)) for name, d in c.demands.items()})
        if c.id in finalizing
        else c
        for c in snapshot.campaigns
    )
    return replace(snapshot, clusters=clusters, campaigns=campaigns)


def _limit(ctx: Context, campaign: CampaignView, cluster: str) -> int:
    """Replicas the campaign may send to the cluster: one per active job, within its max_jobs there."""
    max_jobs = ctx.settings(campaign.id)[cluster].get("max_jobs")
    if not max_jobs:
        return campaign.active
    return max(0, min(campaign.active, max_jobs - ctx.store.active_by_campaign(cluster).get(campaign.id, 0)))


def _record(ctx: Context, replicas: Sequence[Replica]) -> None:
    """Record the replicas (before any RM is called); the runner submits them."""
    if not replicas:
        return
    with ctx.store.transaction():
        ids = ctx.store.add_replicas([(r.job_id, r.cluster) for r in replicas], ctx.clock.now())
    ctx.report.add("replicas scheduled", len(ids))
    log.info("metasched: %d replicas of finalizing campaigns' jobs", len(ids))


# ---- runner -------------------------------------------------------------------------------------


def submit(ctx: Context, spec_of: Callable[..., JobSpec]) -> None:
    """Submit the recorded replicas, each under its own key (found on the RM, it is not submitted again).
    ``spec_of(campaign, settings, job_id, name, argv)`` builds a job's description, as for a batch. A cluster
    that refuses a replica, or whose cache quota cannot take its input files, gets no event: the replica is
    dropped, the job runs on."""
    campaigns: dict[int, Campaign] = {}
    for replica_id, campaign_id, cluster, job_id, name, params in ctx.store.replicas_to_submit():
        if not cluster_usable(ctx, cluster):
            continue
        campaign = campaigns.setdefault(campaign_id, ctx.store.campaign(campaign_id))
        settings = ctx.settings(campaign_id)[cluster]
        spec = spec_of(
            campaign, settings, job_id, name, [settings["exec_file"], *split_params(params, f"job {job_id}")]
        )
        adapter = ctx.adapter(cluster)
        name_on_rm = key(ctx, campaign_id, replica_id)
        try:
            ctx.watch(cluster)
            spec = staging.staged_spec(ctx, cluster, campaign, spec)  # its input files there first
            remote = adapter.find_batch(name_on_rm) or adapter.submit(name_on_rm, [spec])
        except (SubmitError, staging.QuotaFull, staging.InputChanged):
            with ctx.store.transaction():
                ctx.store.end_replicas([replica_id], "failed")
            continue
        except AdapterError as exc:
            cluster_failed(ctx, cluster, exc)
            continue
        with ctx.store.transaction():
            ctx.store.submitted_replica(replica_id, remote[0], ctx.clock.now())
        ctx.report.add("replicas submitted")
        log.info("runner: a replica of job %d submitted to %s", job_id, cluster)


# ---- updator ------------------------------------------------------------------------------------


def follow(ctx: Context, cluster: str) -> None:
    """Read the states of the cluster's replicas: started, won (the job terminates with the replica's
    result), failed (dropped), or late (their job ended first)."""
    live = ctx.store.live_replicas(cluster)
    if not live:
        return
    adapter = ctx.adapter(cluster)
    ctx.look(cluster)
    statuses = adapter.states([remote for *_, remote in live])
    now = ctx.clock.now()
    started, failed, won, late = [], [], [], []
    held = []  # (campaign, seconds) of each replica that ended after holding its slots there
    with ctx.store.transaction():
        for replica_id, campaign_id, state, remote in live:
            status = statuses.get(remote)
            if status is None or status.state in (RemoteState.PENDING, RemoteState.UNKNOWN):
                continue
            if status.state == RemoteState.RUNNING:
                if state == "submitted":
                    started.append((replica_id, now if status.started_at is None else status.started_at))
                continue
            end = now if status.ended_at is None else status.ended_at
            if status.started_at is not None:
                held.append((campaign_id, max(0.0, end - status.started_at)))
            if status.state == RemoteState.EXITED and status.exit_code == 0:
                job_id = ctx.store.replica_won(replica_id, status.started_at, end)
                if job_id is not None:
                    won.append(job_id)
                else:
                    late.append(replica_id)
            else:
                failed.append(replica_id)
        ctx.store.replicas_running(started)
        ctx.store.end_replicas(failed, "failed")
        ctx.store.end_replicas(late, "late")
        jobs = [ctx.store.job(job_id) for job_id in won]
        # a replica's win is the job's end there: a black hole's wins are suspects too
        blackhole.note(ctx, cluster, [(job.id, job.campaign_id, job.started_at, job.ended_at) for job in jobs])
        ctx.store.add_durations(
            [
                (
                    job.campaign_id,
                    cluster,
                    max(0.0, job.ended_at - (job.ended_at if job.started_at is None else job.started_at)),
                    job.ended_at,
                )
                for job in jobs
            ],
            ctx.bucket,
        )
        ctx.charge(cluster, held)
    ctx.report.add("terminated", len(won))
    ctx.report.add("replicas won", len(won))
    ctx.report.add("replicas failed", len(failed))
    if won or failed or late:
        log.info("updator: %s: %d replicas ended first, %d failed, %d late", cluster, len(won), len(failed), len(late))


def mark_stale(ctx: Context) -> None:
    """A job sent back to its bag (killed by its cluster, taken back, run elsewhere) while a replica of it
    is queued or running goes on as that replica. The other replicas whose job ended, was cancelled or runs
    again elsewhere, or whose campaign is paused, cancelled or over: to kill (by :func:`cancel`). With no
    live replica, nothing to do (and no write lock taken for nothing)."""
    if not ctx.store.has_live_replicas():
        return
    with ctx.store.transaction():
        promoted = ctx.store.promote_replicas()
        ctx.store.stale_replicas()
    ctx.report.add("replicas promoted", len(promoted))


# ---- nikita -------------------------------------------------------------------------------------


Copy = tuple[int, int, str | None, float | None]  # (replica, campaign, remote id, started at)


def doomed(ctx: Context) -> dict[str, list[Copy]]:
    """The copies to kill, per cluster."""
    per_cluster: dict[str, list[Copy]] = defaultdict(list)
    for replica_id, campaign_id, cluster, remote, started_at in ctx.store.replicas_to_kill():
        per_cluster[cluster].append((replica_id, campaign_id, remote, started_at))
    return per_cluster


def remote_ids(ctx: Context, cluster: str, copies: Sequence[Copy]) -> list[str]:
    """The remote ids of the copies to cancel there: one with no remote id may be there under its key (a pass
    killed while submitting it), looked up (an AdapterError is the cluster's)."""
    out = []
    for replica_id, campaign_id, remote, _ in copies:
        found = [remote] if remote is not None else ctx.adapter(cluster).find_batch(key(ctx, campaign_id, replica_id))
        out.extend(found or [])
    return out


def killed(ctx: Context, cluster: str, copies: Sequence[Copy], cancelled: int) -> None:
    """Once the cluster cancelled them (in the caller's transaction): each copy that reached its RM is waste,
    "replicas killed"; the slot-seconds the running ones held go to their users' usage."""
    now = ctx.clock.now()
    ctx.store.killed_replicas([replica_id for replica_id, *_ in copies])
    ctx.charge(cluster, [(c, max(0.0, now - started)) for _, c, _, started in copies if started is not None])
    ctx.report.add("replicas killed", cancelled)
    if cancelled:
        log.info("nikita: %d copies of jobs that ended elsewhere cancelled on %s", cancelled, cluster)
