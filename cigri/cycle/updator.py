"""The updator: collect job states from each cluster (one bulk query each), requeue what must run again,
open events for failures, blacklist black holes (:mod:`.blackhole`), and settle campaigns (tests done,
epilogues due, campaigns terminated)."""

from __future__ import annotations

from collections.abc import Sequence, Set

from .. import config, events
from ..errors import AdapterError
from ..model import CampaignState, CampaignType, EventClass, EventCode, JobState, RemoteState
from . import blackhole, replicas
from .context import MAX_RESUBMITS, RETRY, STDERR_LINES, Context, log, stage_remote
from .health import cluster_failed, usable

RESUBMIT_EXIT = (66, 67)  # CiGri: 66 resubmit, 67 resubmit at the end (both resubmitted here)
LOST_AFTER = 3600  # seconds a job may stay unknown to its RM (and accounting) before it is run again


def run(ctx: Context) -> None:
    """Collect job states from each cluster (one bulk query each) and settle campaigns."""
    names = [cluster.name for cluster in ctx.store.clusters()]
    answering = usable(ctx, names)
    for name in names:
        if name not in answering:
            _rerun_elsewhere(ctx, name)
    for name in answering:  # the bulk query of each cluster runs while the others are asked
        if ctx.adapter(name).concurrent() and (active := ctx.store.active_jobs(name)):
            ctx.adapter(name).ahead("states", [remote for _, _, _, remote, _ in active])
    collected = set()  # the clusters whose RM told the states of their jobs in this pass
    for name in answering:
        try:
            collect(ctx, name)
            collected.add(name)
            _collect_stages(ctx, name)
            replicas.follow(ctx, name)
        except AdapterError as exc:
            cluster_failed(ctx, name, exc)
    blackhole.judge(ctx, collected)
    replicas.mark_stale(ctx)
    _settle_campaigns(ctx)


def _rerun_elsewhere(ctx: Context, cluster: str) -> None:
    """The jobs of a cluster unreachable for too long go back to their campaigns' bags (no resubmission
    counted: they did nothing wrong). Their copies there are cancelled once it answers, unread: each job's
    result is the one of the copy cigri still follows."""
    event = ctx.store.open_cluster_event(cluster)
    now = ctx.clock.now()
    patience = config.seconds(ctx.store.settings(), config.UNREACHABLE, ctx.patience.unreachable)
    if event is None or now - event.created_at < patience:
        return
    jobs = ctx.store.cluster_jobs(cluster)
    if not jobs:
        return
    remote_ids = [(remote, campaign) for _, remote, _, campaign in jobs if remote is not None]
    # a batch still being submitted may have reached the RM: found by its key when the cluster answers
    batches = {(campaign, batch) for _, remote, batch, campaign in jobs if remote is None and batch is not None}
    with ctx.store.transaction():
        ctx.store.add_orphans(cluster, remote_ids, [(ctx.batch_key(c, "b", b), c) for c, b in sorted(batches)])
        ctx.store.requeue([job_id for job_id, *_ in jobs], count_resubmit=False, avoid=ctx.avoiding(cluster))
    ctx.report.add("rerun elsewhere", len(jobs))
    log.warning("updator: %s unreachable since %s: its %d jobs run elsewhere", cluster, event.created_at, len(jobs))


def collect(ctx: Context, cluster: str) -> None:
    """Read the states of the cluster's jobs (one bulk query) and act on them: started, ended, failed, to run
    again. Nikita reads them again before it kills there."""
    active = ctx.store.active_jobs(cluster)
    if not active:
        return
    adapter = ctx.adapter(cluster)
    ctx.look(cluster)
    statuses = adapter.states([remote for _, _, _, remote, _ in active])
    now = ctx.clock.now()
    started, ended, requeue, failed, durations = [], [], [], [], []
    exited = []  # (job, campaign, started, ended) of the jobs that exited, whatever their status
    unknown, known_again, avoid = [], [], set()
    held = []  # (campaign, seconds) of each job that ended after holding its slots there
    stopping = ctx.store.stopping(cluster)  # killed: the runner's cancel, its pass died before recording it
    preempted = []
    began = False  # did one of cigri's queued jobs start there (its queue moves)
    for job_id, campaign_id, state, remote, unknown_since in active:
        status = statuses.get(remote)
        if status is not None and status.state == RemoteState.UNKNOWN:
            if unknown_since is None:
                unknown.append(job_id)
            elif now - unknown_since > LOST_AFTER:  # never assumed done: taken as lost, run again
                requeue.append((job_id, campaign_id, f"unknown to {cluster} for {LOST_AFTER // 60} minutes"))
                avoid.add(job_id)
            continue
        if unknown_since is not None and status is not None:
            known_again.append(job_id)
        if status is None or status.state == RemoteState.PENDING:
            continue
        if state == JobState.SUBMITTED.value and (status.state == RemoteState.RUNNING or status.started_at is not None):
            began = True
            ctx.started[cluster] += ctx.settings(campaign_id)[cluster]["_slots"]  # the flow's observed starts
        if status.state == RemoteState.RUNNING:
            if state == JobState.SUBMITTED.value:
                started.append((job_id, now if status.started_at is None else status.started_at))
            continue
        # a start or an end at t=0.0 (a simulation's first second) is a time, not "none"
        start, end = status.started_at, now if status.ended_at is None else status.ended_at
        if start is not None:
            held.append((campaign_id, max(0.0, end - start)))
        if status.state == RemoteState.KILLED and (job_id in stopping or status.returned):
            preempted.append(job_id)
        elif status.state == RemoteState.KILLED or status.exit_code in RESUBMIT_EXIT:
            requeue.append((job_id, campaign_id, status.reason or f"exit status {status.exit_code}"))
            if status.state == RemoteState.KILLED:  # preempted, walltime: not straight back there
                avoid.add(job_id)
        elif status.exit_code == 0:
            exited.append((job_id, campaign_id, start, end))
            ended.append((job_id, JobState.TERMINATED, 0, start, end))
            durations.append((campaign_id, cluster, max(0.0, end - (end if start is None else start)), end))
        else:
            if status.state == RemoteState.EXITED:
                exited.append((job_id, campaign_id, start, end))
            ended.append((job_id, JobState.EVENT, status.exit_code, start, end))
            how = f"exited with status {status.exit_code}" if status.exit_code is not None else status.reason
            failed.append((job_id, campaign_id, remote, how))
    tails = {job_id: adapter.tail(remote, "stderr", STDERR_LINES) for job_id, _, remote, _ in failed}
    with ctx.store.transaction():
        if began:
            ctx.store.set_last_start(cluster, now)
        ctx.store.set_unknown_since(unknown, now)
        ctx.store.set_unknown_since(known_again, None)
        ctx.store.mark_running(started)
        ctx.store.mark_ended(ended)
        ctx.store.add_durations(durations, ctx.bucket)
        blackhole.note(ctx, cluster, exited)
        ctx.store.requeue(preempted, count_resubmit=False, preempted=True)
        ctx.charge(cluster, held)
        ctx.store.add_failures([(job_id, campaign_id, cluster) for job_id, campaign_id, *_ in (*requeue, *failed)])
        for job_id, campaign_id, _remote, how in failed:
            tail = tails[job_id]
            message = f"job {job_id} {how}" + (f"; stderr ends with:\n{tail}" if tail else "")
            events.job_error(
                ctx.store, EventCode.EXIT_ERROR, message, now, cluster=cluster, campaign_id=campaign_id, job_id=job_id
            )
        again = resubmit(ctx, cluster, requeue, avoid)
    ctx.report.add("started", len(started))
    ctx.report.add("terminated", len(durations))
    ctx.report.add("failed", len(failed))
    ctx.report.add("preempted", len(preempted))
    if ended or requeue:
        log.info(
            "updator: %s: %d running, %d terminated, %d failed, %d resubmitted",
            cluster,
            len(started),
            len(durations),
            len(failed),
            again,
        )


def resubmit(ctx: Context, cluster: str, requeue: Sequence[tuple[int, int, str]], avoid: Set[int]) -> int:
    """Send back to their bags, as resubmissions, jobs that must run again ((job, campaign, reason) each: killed
    by their RM or by nikita, or asking for it by their exit status); those in ``avoid`` are not sent back to
    the cluster for a while. A job resubmitted MAX_RESUBMITS times ends with an event instead. In the
    caller's transaction; returns how many were resubmitted."""
    if not requeue:
        return 0
    now = ctx.clock.now()
    counts = ctx.store.resubmit_counts([job_id for job_id, _, _ in requeue])
    again = [job_id for job_id, _, _ in requeue if counts.get(job_id, 0) < MAX_RESUBMITS]
    ctx.store.requeue([job_id for job_id in again if job_id not in avoid])
    ctx.store.requeue([job_id for job_id in again if job_id in avoid], avoid=ctx.avoiding(cluster))
    for job_id, campaign_id, reason in requeue:
        if counts.get(job_id, 0) >= MAX_RESUBMITS:
            ctx.store.mark_ended([(job_id, JobState.EVENT, None, None, now)])
            events.job_error(
                ctx.store,
                EventCode.RESUBMIT_LIMIT,
                f"job {job_id} was resubmitted {MAX_RESUBMITS} times; last end: {reason}",
                now,
                cluster=cluster,
                campaign_id=campaign_id,
                job_id=job_id,
            )
    ctx.report.add("resubmitted", len(again))
    return len(again)


def _collect_stages(ctx: Context, cluster: str) -> None:
    """Prologues and epilogues running on the cluster."""
    pending = [s for s in ctx.store.stages_in(("submitted",)) if s[1] == cluster]
    if not pending:
        return
    adapter = ctx.adapter(cluster)
    ctx.look(cluster)
    statuses = adapter.states([stage_remote(value)[0] for *_, value in pending])
    now = ctx.clock.now()
    with ctx.store.transaction():
        for campaign_id, _, stage, _, value in pending:
            remote, attempt = stage_remote(value)
            status = statuses.get(remote)
            if status is None or status.state in (RemoteState.PENDING, RemoteState.RUNNING, RemoteState.UNKNOWN):
                continue
            if status.state == RemoteState.KILLED and attempt < MAX_RESUBMITS:  # again, under a key of its own
                again = "due" if stage == "epilogue" else "todo"
                ctx.store.set_stage(campaign_id, cluster, stage, again, f"{RETRY}{attempt + 1}:{remote}")
            elif status.state == RemoteState.EXITED and status.exit_code == 0:
                ctx.store.set_stage(campaign_id, cluster, stage, "done", remote)
            else:  # exited non-zero, or killed too often
                ctx.store.set_stage(campaign_id, cluster, stage, "failed", remote)
                tail = adapter.tail(remote, "stderr", STDERR_LINES)
                code = EventCode.PROLOGUE_ERROR if stage == "prologue" else EventCode.EPILOGUE_ERROR
                ctx.store.open_event(
                    EventClass.CAMPAIGN,
                    code,
                    (
                        f"{stage} exited with status {status.exit_code}"
                        if status.state == RemoteState.EXITED
                        else f"{stage} killed {MAX_RESUBMITS + 1} times, last: {status.reason}"
                    )
                    + (f"; stderr ends with:\n{tail}" if tail else ""),
                    now,
                    cluster=cluster,
                    campaign_id=campaign_id,
                )


def _settle_campaigns(ctx: Context) -> None:
    """End test campaigns that ran their one job per cluster, start epilogues, mark campaigns terminated."""
    now = ctx.clock.now()
    # a test that could not start on a cluster ends there: that event informs, it does not hold the campaign
    # nor does a black hole's blacklist hold a campaign whose jobs ran elsewhere
    open_events = ctx.store.open_event_counts(ignore=(EventCode.TEST_NOT_STARTED, EventCode.BLACK_HOLE))
    for campaign in ctx.store.campaigns(states=[CampaignState.IN_TREATMENT]):
        counts = ctx.store.counts(campaign.id)
        clusters = ctx.store.campaign_clusters(campaign.id, settings=False)
        busy = sum(counts[s] for s in (JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING))
        with ctx.store.transaction():
            if (
                campaign.type == CampaignType.TEST
                and busy == 0
                and counts[JobState.TO_LAUNCH]
                and all(info["launched"] > 0 for info in clusters.values())
            ):
                skipped = ctx.store.drop_waiting(campaign.id, JobState.SKIPPED)
                counts[JobState.TO_LAUNCH] = 0
                log.info("campaign %d: test done, %d jobs skipped", campaign.id, skipped)
            if busy or counts[JobState.TO_LAUNCH] or open_events.get(campaign.id):
                continue
            epilogues = {name: info["epilogue_state"] for name, info in clusters.items()}
            for name, state in epilogues.items():
                if state == "todo":
                    ran = clusters[name]["launched"] > 0
                    ctx.store.set_stage(campaign.id, name, "epilogue", "due" if ran else "none")
                    epilogues[name] = "due" if ran else "none"
            if all(state in ("none", "done", "failed") for state in epilogues.values()):
                ctx.store.set_campaign_state(campaign.id, CampaignState.TERMINATED, now)
                ctx.report.add("campaigns terminated")
                log.info("campaign %d terminated", campaign.id)
