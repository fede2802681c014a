"""The updator: collect job states from each cluster (one bulk query each), requeue what must run again
(:func:`resubmit`: attempts, preemptions and checkpoints, each bounded), open events for failures, pause the
campaigns whose jobs fail too often (:func:`watch_failures`), blacklist black holes (:mod:`.blackhole`), and
settle campaigns (tests done, epilogues due, campaigns terminated)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter

from .. import config, events
from ..errors import AdapterError
from ..model import (
    CampaignState,
    CampaignType,
    EventClass,
    EventCode,
    JobState,
    KillCause,
    RemoteState,
    RemoteStatus,
)
from ..stages import RETRY, stage_remote
from ..wording import counted
from . import blackhole, replicas
from .context import STDERR_LINES, Context, log
from .health import cluster_failed, usable

SUBMITTED = JobState.SUBMITTED.value  # read once: an enum's value is a property, and collect asks it per job
# and so are its members, each a lookup through the enum's class (as slow as a small function call)
UNKNOWN, PENDING, RUNNING, EXITED, KILLED = (
    RemoteState.UNKNOWN,
    RemoteState.PENDING,
    RemoteState.RUNNING,
    RemoteState.EXITED,
    RemoteState.KILLED,
)
TERMINATED, EVENT = JobState.TERMINATED, JobState.EVENT
OTHER, MEMORY = KillCause.OTHER, KillCause.MEMORY
RESUBMIT, RESUBMIT_AT_END = 66, 67  # CiGri's exit statuses: run me again, run me again after the others
RESUBMIT_EXIT = (RESUBMIT, RESUBMIT_AT_END)
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
    # the prologues and epilogues running, read once: a cluster's collection changes only its own; and
    # whether a replica runs anywhere (none is made while the clusters are read)
    stages = ctx.store.stages_in(("submitted",)) if answering else []
    following = bool(answering) and ctx.store.has_live_replicas()
    for name in answering:
        try:
            collect(ctx, name)
            collected.add(name)
            _collect_stages(ctx, name, [s for s in stages if s[1] == name])
            if following:
                replicas.follow(ctx, name)
        except AdapterError as exc:
            cluster_failed(ctx, name, exc)
    blackhole.judge(ctx, collected)
    replicas.mark_stale(ctx)
    _settle_campaigns(ctx)


def _rerun_elsewhere(ctx: Context, cluster: str) -> None:
    """The jobs of a cluster unreachable for too long go back to their campaigns' bags (no resubmission
    counted: they did nothing wrong): those of campaigns with no job left to launch after
    ``updator.unreachable_tail`` (no other job of theirs would use the slots elsewhere meanwhile: waiting would
    cost their campaigns' ends what it waits), its running ones after ``updator.unreachable_running`` (an
    outage may have killed them), all of them after ``updator.unreachable``. Their copies there are cancelled
    once it answers, unread: each job's result is the one of the copy cigri still follows."""
    event = ctx.store.open_cluster_event(cluster)
    if event is None:
        return
    silent = ctx.clock.now() - event.created_at
    settings = ctx.store.settings()
    everything = config.seconds(settings, config.UNREACHABLE, ctx.patience.unreachable)
    running = min(everything, config.seconds(settings, config.UNREACHABLE_RUNNING, ctx.patience.unreachable_running))
    tails = min(everything, config.seconds(settings, config.UNREACHABLE_TAIL, ctx.patience.unreachable_tail))
    if silent < min(running, tails):
        return
    jobs = ctx.store.cluster_jobs(
        cluster, running=silent >= running, queued=silent >= everything, tails=silent >= tails
    )
    if not jobs:
        return
    remote_ids = [(remote, campaign) for _, remote, _, campaign, _ in jobs if remote is not None]
    # a batch still being submitted may have reached the RM: found by its key when the cluster answers
    batches = {(campaign, batch) for _, remote, batch, campaign, _ in jobs if remote is None and batch is not None}
    lost = sum(state == JobState.RUNNING.value for *_, state in jobs)  # its kills, as far as cigri can tell
    with ctx.store.transaction():
        ctx.store.add_orphans(cluster, remote_ids, [(ctx.batch_key(c, "b", b), c) for c, b in sorted(batches)])
        ctx.store.requeue([job_id for job_id, *_ in jobs], count_resubmit=False, avoid=ctx.avoiding(cluster))
        ctx.store.add_kills(cluster, lost)
    ctx.report.add("rerun elsewhere", len(jobs))
    log.warning("updator: %s unreachable since %s: its %d jobs run elsewhere", cluster, event.created_at, len(jobs))


def collect(ctx: Context, cluster: str) -> None:
    """Read the states of the cluster's jobs (one bulk query) and act on them: started, ended, failed, to run
    again. Nikita reads them again before it kills there."""
    adapter = ctx.adapter(cluster)
    if getattr(adapter, "reports_changes", False):  # it says which jobs changed: only those are read and asked
        if not ctx.store.has_active_jobs(cluster):
            return
        ctx.look(cluster)
        active = ctx.store.active_jobs_of(cluster, adapter.changed_ids())
    else:
        active = ctx.store.active_jobs(cluster)
        if not active:
            return
        ctx.look(cluster)
    statuses = adapter.states([remote for _, _, _, remote, _ in active])
    # a job its RM says nothing of is left as it is: the jobs it reports, running ones first, each by id
    reported = sorted((row for row in active if row[3] in statuses), key=itemgetter(2, 0))
    if not reported:
        return
    now = ctx.clock.now()
    started, ended, requeue, failed, durations = [], [], [], [], []
    exited = []  # (job, campaign, started, ended) of the jobs that exited, whatever their status
    unknown, known_again = [], []
    outcomes: dict[int, str] = defaultdict(str)  # each campaign's ends: 1 failed, 0 succeeded
    checkpoint_exit = config.resubmit_value(ctx.store.settings(), config.CHECKPOINT_EXIT)
    held = []  # (campaign, seconds) of each job that ended after holding its slots there
    stopping = ctx.store.stopping(cluster)  # killed: the runner's cancel, its pass died before recording it
    preempted = []
    memory = set()  # the failed jobs that ran out of memory
    began = False  # did one of cigri's queued jobs start there (its queue moves)
    for job_id, campaign_id, state, remote, unknown_since in reported:
        status = statuses[remote]
        if status is not None and status.state == UNKNOWN:
            if unknown_since is None:
                unknown.append(job_id)
            elif now - unknown_since > LOST_AFTER:  # never assumed done: taken as lost, run again
                why = f"unknown to {cluster} for {LOST_AFTER // 60} minutes"
                requeue.append(Again(job_id, campaign_id, why, OTHER, remote=remote, ended=now))
            continue
        if unknown_since is not None and status is not None:
            known_again.append(job_id)
        if status is None or status.state == PENDING:
            continue
        if state == SUBMITTED and (status.state == RUNNING or status.started_at is not None):
            began = True
            ctx.started[cluster] += ctx.settings(campaign_id)[cluster]["_slots"]  # the flow's observed starts
        if status.state == RUNNING:
            if state == SUBMITTED:
                started.append((job_id, now if status.started_at is None else status.started_at))
            continue
        # a start or an end at t=0.0 (a simulation's first second) is a time, not "none"
        start, end = status.started_at, now if status.ended_at is None else status.ended_at
        if start is not None:
            held.append((campaign_id, max(0.0, end - start)))
        if status.state == KILLED and (job_id in stopping or status.returned):
            preempted.append(job_id)
        elif (
            status.state == KILLED
            or status.exit_code in RESUBMIT_EXIT
            or checkpointed(ctx.settings(campaign_id)[cluster], status, checkpoint_exit)
        ):
            why = status.reason or f"exit status {status.exit_code}"
            # a kill its adapter gives no cause for is a kill all the same
            cause = (status.cause or OTHER) if status.state == KILLED else None
            requeue.append(Again(job_id, campaign_id, why, cause, status.exit_code, remote, end))
        elif status.exit_code == 0:
            exited.append((job_id, campaign_id, start, end))
            ended.append((job_id, TERMINATED, 0, start, end))
            durations.append((campaign_id, cluster, max(0.0, end - (end if start is None else start)), end))
            outcomes[campaign_id] += "0"
        else:
            if status.state == EXITED:
                exited.append((job_id, campaign_id, start, end))
            outcomes[campaign_id] += "1"
            ended.append((job_id, EVENT, status.exit_code, start, end))
            how = f"exited with status {status.exit_code}" if status.exit_code is not None else status.reason
            if status.cause == MEMORY:  # the JDL asks no memory: an event for the user, not a retry
                how += " (out of memory)"
                memory.add(job_id)
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
        ctx.store.add_failures([(again.job_id, again.campaign_id, cluster) for again in requeue])
        ctx.store.add_failures([(job_id, campaign_id, cluster) for job_id, campaign_id, *_ in failed])
        closing = events.too_many_errors(ctx.store, cluster, outcomes)
        retried = retry_errors(ctx, cluster, [f for f in failed if f[0] not in memory], closing)
        for job_id, campaign_id, _remote, how in failed:
            tail = tails[job_id]
            message = f"job {job_id} {how}" + (f"; stderr ends with:\n{tail}" if tail else "")
            event_id = events.job_error(
                ctx.store,
                EventCode.EXIT_ERROR,
                message,
                now,
                cluster=cluster,
                campaign_id=campaign_id,
                job_id=job_id,
                close=campaign_id in closing,
            )
            if job_id in retried:
                ctx.store.close_events([event_id], now, RETRIED)
        again = resubmit(ctx, cluster, requeue) + len(retried)
        watch_failures(ctx, outcomes)
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


RETRIED = "run again at once (resubmit.error_retries)"


def retry_errors(
    ctx: Context, cluster: str, failed: Sequence[tuple[int, int, str | None, str]], closing: set[int]
) -> set[int]:
    """Run again at once, on another cluster, the jobs whose error may be the cluster's, in the caller's
    transaction; their ids. Such a job's campaign has another cluster to go to, its errors on this one stay
    below the blacklist's threshold (none ``closing`` it, no blacklist open there), the job ran again after
    an error fewer than ``resubmit.error_retries`` times and has an attempt left (``max_attempts``): it goes
    back to its bag as an attempt and keeps off this cluster for a while. Any other error waits for the
    user (CiGri's rule)."""
    retries = int(config.resubmit_value(ctx.store.settings(), config.ERROR_RETRIES))
    candidates = [
        (job_id, campaign_id, remote, how)
        for job_id, campaign_id, remote, how in failed
        if retries
        and campaign_id in ctx.choosy
        and campaign_id not in closing
        and ctx.store.blacklist(campaign_id, cluster) is None
    ]
    if not candidates:
        return set()
    ids = [job_id for job_id, *_ in candidates]
    done, attempts = ctx.store.errors_retried(ids), ctx.store.attempts(ids)
    chosen = [
        (job_id, remote, how)
        for job_id, campaign_id, remote, how in candidates
        if done.get(job_id, 0) < retries and attempts.get(job_id, (0, 0))[0] + 1 < ctx.max_attempts(campaign_id)
    ]
    if not chosen:
        return set()
    now = ctx.clock.now()
    ctx.store.add_ends((job_id, cluster, remote, now, None, None, how) for job_id, remote, how in chosen)
    ids = [job_id for job_id, _, _ in chosen]
    ctx.store.retry_errors(ids, ctx.avoiding(cluster))
    return set(ids)


CLUSTER_KILLS = (KillCause.PREEMPTED, KillCause.OTHER)  # the cluster's doing, not the job's nor a user's


@dataclass(frozen=True)
class Again:
    """A job that ended on a cluster asking to run again: killed by its RM (``cause`` says why) or by nikita,
    exit 66 or 67, or checkpointed."""

    job_id: int
    campaign_id: int
    reason: str
    cause: KillCause | None = None  # None: it ended by its exit status
    exit_code: int | None = None
    remote: str | None = None
    ended: float | None = None


def checkpointed(settings: Mapping, status: RemoteStatus, default_exit: int) -> bool:
    """Did the job end checkpointed, to be resumed where its checkpoint is? It exited with its campaign's
    checkpoint code there (``checkpointing_exit_code``, else the configured one), or, checkpointing by signal,
    it was killed at its walltime (its signal came a grace before it: it had the time to checkpoint)."""
    kind = settings.get("checkpointing_type")
    if not kind:
        return False
    if status.state == RemoteState.EXITED:
        return status.exit_code == (settings.get("checkpointing_exit_code") or default_exit)
    return kind == "signal" and status.state == RemoteState.KILLED and status.cause == KillCause.WALLTIME


def resubmit(ctx: Context, cluster: str, ends: Sequence[Again]) -> int:
    """Send back to their bags jobs that must run again (in the caller's transaction); returns how many.

    - A checkpointed job goes back to resume on this cluster (its checkpoint is there), before the fresh
      jobs of its campaign: no failure, no attempt.
    - A job its RM preempted (a best-effort kill) is no failure of the job: not an attempt either, and it
      avoids the cluster for a while. Checkpoints and preemptions are bounded together, apart from attempts
      (``resubmit.max_resumes``, 20 by default): a job preempted for ever on a busy best-effort cluster does
      not become an event the user must fix after 3 tries, nor loop for ever.
    - Any other end is an attempt: exit 66, exit 67 (run again once no other job of the campaign waits),
      a kill by the RM at the walltime (with more walltime when the campaign's retry_resources say so), by
      an administrator, by nikita; a kill also avoids the cluster for a while; a walltime kill
      counts as a failure in the campaign's failure rate (an outage's or an admin's kill does not: it says
      nothing of the campaign). A job's ``max_attempts`` (the JDL's, else
      ``resubmit.max_attempts``, 3 by default) replace CiGri's unbounded resubmissions.

    A job past its limit is a RESUBMIT_LIMIT event quoting each of its ends."""
    if not ends:
        return 0
    now = ctx.clock.now()
    settings = ctx.store.settings()
    max_resumes = config.resubmit_value(settings, config.MAX_RESUMES)
    checkpoint_exit = config.resubmit_value(settings, config.CHECKPOINT_EXIT)
    counts = ctx.store.attempts([again.job_id for again in ends])
    ctx.store.add_ends(
        (a.job_id, cluster, a.remote, now if a.ended is None else a.ended, a.exit_code, a.cause, a.reason) for a in ends
    )
    ctx.store.add_kills(cluster, sum(1 for a in ends if a.cause in CLUSTER_KILLS))
    groups: dict[str, list[int]] = defaultdict(list)
    longer: dict[float, list[int]] = defaultdict(list)  # walltime kills to retry with more walltime
    outcomes: dict[int, str] = defaultdict(str)
    over: list[tuple[Again, str]] = []
    allowed_of: dict[int, int] = {}  # each campaign's max_attempts, read once
    for again in ends:
        resubmits, resumes = counts.get(again.job_id, (0, 0))
        there = ctx.settings(again.campaign_id)[cluster]
        status = RemoteStatus(
            "", RemoteState.KILLED if again.cause else RemoteState.EXITED, again.exit_code, cause=again.cause
        )
        if checkpointed(there, status, checkpoint_exit) or again.cause == KillCause.PREEMPTED:
            kind = "checkpointed" if again.cause != KillCause.PREEMPTED else "preempted"
            if resumes >= max_resumes:
                over.append(
                    (
                        again,
                        f"went back {resumes + 1} times without failing, last {kind} (the limit is "
                        f"{max_resumes}, resubmit.max_resumes)",
                    )
                )
            else:
                groups[kind].append(again.job_id)
            continue
        if again.cause == KillCause.WALLTIME:  # the job's own doing; an outage or an admin's kill is not
            outcomes[again.campaign_id] += "1"
        if again.campaign_id not in allowed_of:
            allowed_of[again.campaign_id] = ctx.max_attempts(again.campaign_id)
        allowed = allowed_of[again.campaign_id]
        if resubmits + 1 >= allowed:
            over.append((again, f"used its {counted(allowed, 'attempt')}"))
        elif again.exit_code == RESUBMIT_AT_END and again.cause is None:
            groups["deferred"].append(again.job_id)
        else:
            groups["killed" if again.cause else "again"].append(again.job_id)
            retry = there.get("retry_resources")
            if again.cause == KillCause.WALLTIME and retry:
                longer[retry["walltime"]].append(again.job_id)
    for factor, ids in longer.items():
        ctx.store.scale_walltime(ids, factor)
    ctx.store.requeue(groups["again"])
    ctx.store.requeue(groups["deferred"], deferred=True)
    ctx.store.requeue(groups["killed"], avoid=ctx.avoiding(cluster))  # not straight back where it was killed
    ctx.store.requeue(groups["preempted"], count_resubmit=False, resumed=True, avoid=ctx.avoiding(cluster))
    ctx.store.requeue(groups["checkpointed"], count_resubmit=False, resumed=True, checkpoint=cluster)
    for again, why in over:  # a job that used its attempts there closes the cluster to its campaign at once
        ctx.store.mark_ended([(again.job_id, JobState.EVENT, again.exit_code, None, now)])
        events.job_error(
            ctx.store,
            EventCode.RESUBMIT_LIMIT,
            f"job {again.job_id} {why}; its ends:\n{_history(ctx, again.job_id)}",
            now,
            cluster=cluster,
            campaign_id=again.campaign_id,
            job_id=again.job_id,
        )
    watch_failures(ctx, outcomes)
    again = sum(map(len, groups.values()))
    ctx.report.add("resubmitted", again)
    return again


def _history(ctx: Context, job_id: int) -> str:
    """One line per recorded end of a job: when, where, why."""
    lines = []
    for number, (cluster, remote, ended, _code, cause, reason) in enumerate(ctx.store.job_ends(job_id), 1):
        when = datetime.fromtimestamp(ended, UTC).strftime("%Y-%m-%d %H:%M:%S")
        why = reason + (f" ({cause})" if cause and cause not in reason else "")
        lines.append(f"  {number}. {when} on {cluster}" + (f" (job {remote})" if remote else "") + f": {why}")
    return "\n".join(lines)


def watch_failures(ctx: Context, outcomes: Mapping[int, str]) -> None:
    """Add the ends of this pass to each campaign's failure window; a running campaign more than
    ``resubmit.failure_rate`` of whose last ``resubmit.failure_window`` ends failed is paused with a
    FAILURE_RATE event (fixing it, or griddel -r, resumes it). In the caller's transaction."""
    if not outcomes:
        return
    settings = ctx.store.settings()
    window = int(config.resubmit_value(settings, config.FAILURE_WINDOW))
    rate = config.resubmit_value(settings, config.FAILURE_RATE)
    for campaign_id, ends in outcomes.items():
        recent = ctx.store.note_ends(campaign_id, ends, window)
        failed = recent.count("1")
        if len(recent) < window or failed <= rate * window:
            continue
        if ctx.store.campaign(campaign_id).state != CampaignState.IN_TREATMENT:
            continue
        ctx.store.set_campaign_state(campaign_id, CampaignState.PAUSED)
        ctx.store.forget_ends(campaign_id)
        ctx.store.open_event(
            EventClass.CAMPAIGN,
            EventCode.FAILURE_RATE,
            f"campaign {campaign_id} paused: {failed} of its last {window} ends failed (more than {rate:.0%}); "
            "fix this event (gridevents -f) or resume it (griddel -r) once the cause is fixed",
            ctx.clock.now(),
            campaign_id=campaign_id,
        )
        log.warning("updator: campaign %d paused: %d of its last %d ends failed", campaign_id, failed, window)


def _collect_stages(ctx: Context, cluster: str, pending: Sequence[tuple[int, str, str, str, str | None]]) -> None:
    """Prologues and epilogues running on the cluster (``pending``: those submitted there)."""
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
            allowed = ctx.max_attempts(campaign_id)
            if status.state == RemoteState.KILLED and attempt + 1 < allowed:  # again, under a key of its own
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
                        else f"{stage} killed {counted(allowed, 'time')}, last: {status.reason}"
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
    # a campaign is over once its outputs are where the user asked: one missing is an event that holds it
    gathering = (
        {campaign_id for campaign_id, _, _ in ctx.store.outputs_waiting()} if ctx.store.has_outputs_due() else set()
    )
    for campaign in ctx.store.campaigns(states=[CampaignState.IN_TREATMENT]):
        counts = ctx.store.counts(campaign.id)
        busy = sum(counts[s] for s in (JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING))
        held = busy or open_events.get(campaign.id) or campaign.id in gathering
        if campaign.type != CampaignType.TEST and (held or counts[JobState.TO_LAUNCH]):
            continue  # nothing to settle yet: nothing read further, no transaction
        clusters = ctx.store.campaign_clusters(campaign.id, settings=False)
        test_done = (
            campaign.type == CampaignType.TEST
            and busy == 0
            and counts[JobState.TO_LAUNCH]
            and all(info["launched"] > 0 for info in clusters.values())
        )
        if not test_done and (held or counts[JobState.TO_LAUNCH]):
            continue
        with ctx.store.transaction():
            if test_done:
                skipped = ctx.store.drop_waiting(campaign.id, JobState.SKIPPED)
                counts[JobState.TO_LAUNCH] = 0
                log.info("campaign %d: test done, %d jobs skipped", campaign.id, skipped)
            if held or counts[JobState.TO_LAUNCH]:
                continue
            epilogues = {name: info["epilogue_state"] for name, info in clusters.items()}
            for name, state in epilogues.items():
                if state == "todo":
                    ran = clusters[name]["launched"] > 0
                    # a new attempt's key (a reopened campaign's) goes with it (cigri.campaigns._reopen)
                    previous = clusters[name]["epilogue_remote"] if ran else None
                    ctx.store.set_stage(campaign.id, name, "epilogue", "due" if ran else "none", previous)
                    epilogues[name] = "due" if ran else "none"
            if all(state in ("none", "done", "failed") for state in epilogues.values()):
                ctx.store.set_campaign_state(campaign.id, CampaignState.TERMINATED, now)
                ctx.report.add("campaigns terminated")
                log.info("campaign %d terminated", campaign.id)
