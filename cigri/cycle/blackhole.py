"""Black holes: the seed's "sink effect", jobs that end in near 0 seconds on one cluster (a broken node, a
missing file system, a wrapper that exits at once), whatever their exit status. CiGri has no such detection:
it counts what a black hole swallows as done.

As the updator collects a cluster's ends (:func:`note`, in the transaction that records them), each job of a
campaign that ended there within ``blackhole.seconds`` and started after the latest start of a job of the
campaign that ran longer there (the cluster ran its jobs normally then) is a suspect; such a longer run
clears the suspects started before it. A cluster that turns into a black hole thus keeps as suspects all it
swallowed, whatever the jobs it started before end like; a healthy cluster's short ends are cleared by the
normal runs of jobs started after them (the jobs it starts at one pass, say). The suspects are stored with
the ends: a pass killed half-way loses nothing, and the cost follows the pass's ends, not the state's size.
A job still running there for ``blackhole.seconds`` or more is such a normal run too, when judged (a black
hole runs nothing): a big cluster ends the short jobs it started at one pass before the long ones.

Once every cluster is collected (:func:`judge`, in the same pass), at least ``blackhole.streak`` suspects (the
streak) is a row only if fewer of the campaign's jobs started there since the streak's first start still run
(a black hole ends all it starts; a big healthy cluster ends a few short jobs at every pass while those
started with them run on, for less than ``blackhole.seconds`` yet): otherwise it waits. A row is judged
against the campaign's jobs on each other cluster: the durations of its latest terminated jobs there, and the
time its running jobs there have run so far (a lower bound of their durations; only on clusters whose RM
answered in this pass, so that a job ended since is not taken as still running); and against its jobs that
terminated on the same cluster before the streak began (a cluster that turned into a black hole, the
campaign's only one included). Each of these with at least MIN_SAMPLE figures gives their median (the lower
one), robust to a stuck job.

- Some median is at least ``ratio`` x ``seconds``: a black hole. The campaign gets a campaign event
  BLACK_HOLE on that cluster (the campaign blacklist: nothing more of it goes there until the event is fixed),
  and the streak's jobs still ended there go back to the bag, avoiding that cluster for a while: not counted
  as resubmissions nor as failures, their job events closed (and the blacklist they opened, once none is
  left), their durations taken out of Spritz's figures.
- More than half of the figures of each are ends under that: the campaign's jobs are that fast (e.g. 1 s
  everywhere): the streak is forgotten, its results stand.
- Otherwise (nothing ended nor runs long enough elsewhere yet): it waits, the streak growing, and every job
  it swallowed meanwhile runs again once the cluster is found to be a black hole. So a black hole found at a
  campaign's start is blacklisted once the jobs elsewhere have run ``ratio`` x ``seconds``.

A streak on a cluster already blacklisted for the campaign (jobs that were queued there) goes back at once.
The event does not keep the campaign from ending: its jobs ran elsewhere. Fixing it (``gridevents -f``) lets
the campaign use the cluster again; the suspect jobs were already returned, so ``-r`` has nothing to add.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence, Set

from .. import config, events
from ..model import EventClass, EventCode, JobState
from ..wording import counted
from .context import Context, log

LATEST = 1000  # the campaign's terminated jobs read for the reference: those of the highest ids
# figures a cluster needs for its median to count: the lower median of three is no stuck job's. Not five: lpt's
# probes left a campaign four jobs on the good cluster while the hole swallowed the other 26, never judged
MIN_SAMPLE = 3
BY = "a black hole's end: run again elsewhere"  # why their job events were closed


def note(ctx: Context, cluster: str, ends: Sequence[tuple[int, int, float | None, float]]) -> None:
    """(job, campaign, started, ended) of the jobs that exited on the cluster (any status), in the caller's
    transaction. A job that ran longer than ``blackhole.seconds`` shows the cluster ran the campaign's jobs
    normally when it started: the suspects started at or before it are cleared. A shorter end of a job
    started after the cluster's latest normal run is a suspect. So a cluster that turns into a black hole
    keeps as suspects everything it swallowed, however many jobs it had started before end normally."""
    if not ends:
        return
    limit = config.black_holes(ctx.store.settings()).seconds
    healthy = ctx.store.streak_health(cluster, {campaign_id for _, campaign_id, _, _ in ends})
    latest: dict[int, float] = {}  # campaign -> the latest start of its jobs that ran normally, in this pass
    for _, campaign_id, started, ended in ends:
        if started is not None and ended - started >= limit:
            latest[campaign_id] = max(started, latest.get(campaign_id, started))
    ctx.store.note_health([(campaign_id, cluster, started) for campaign_id, started in sorted(latest.items())])
    for campaign_id, started in latest.items():
        healthy[campaign_id] = max(started, healthy.get(campaign_id, started))
    ctx.store.lengthen_streaks(
        [
            (campaign_id, cluster, job_id, started, max(0.0, ended - started), ended)
            for job_id, campaign_id, started, ended in ends
            # never seen running: how long it ran is unknown
            if started is not None
            and ended - started < limit
            and (campaign_id not in healthy or started > healthy[campaign_id])
        ]
    )


def judge(ctx: Context, collected: Set[str]) -> None:
    """Judge the streaks long enough (see the module), with the running jobs of the ``collected`` clusters."""
    thresholds = config.black_holes(ctx.store.settings())
    now = ctx.clock.now()
    _running_normally(ctx, thresholds.streak, thresholds.seconds, collected, now)
    for campaign_id, cluster, n, longest, since, blacklisted, over in ctx.store.streaks(thresholds.streak):
        if over or blacklisted:  # over: nothing runs again; blacklisted: what was queued there goes back
            with ctx.store.transaction():
                if over:
                    ctx.store.break_streaks([(campaign_id, cluster)])
                else:
                    _send_back(ctx, campaign_id, cluster)
            continue
        if not _in_a_row(ctx, campaign_id, cluster, n):
            continue
        figures = _figures(ctx, campaign_id, cluster, since, collected, now)
        medians = {where: statistics.median_low(s for s, _ in values) for where, values in figures.items()}
        above = {where: median for where, median in medians.items() if median >= thresholds.reference}
        if above:
            where = max(above, key=above.__getitem__)
            with ctx.store.transaction():
                returned = _send_back(ctx, campaign_id, cluster)
                message = (
                    f"{counted(n, 'job')} in a row ended within {thresholds.seconds:g} s on {cluster} (the longest "
                    f"{longest:.1f} s) while the campaign's jobs take a median of {above[where]:.0f} s on {where}: "
                    f"a black hole; its {counted(returned, 'suspect result')} run again elsewhere"
                )
                ctx.store.open_event(
                    EventClass.CAMPAIGN, EventCode.BLACK_HOLE, message, now, cluster=cluster, campaign_id=campaign_id
                )
            ctx.report.add("black holes")
            log.warning("campaign %d: %s", campaign_id, message)
        elif figures and all(_mostly_shorter(values, thresholds.reference) for values in figures.values()):
            with ctx.store.transaction():  # its jobs are that fast: the results stand
                ctx.store.break_streaks([(campaign_id, cluster)])


def _in_a_row(ctx: Context, campaign_id: int, cluster: str, suspects: int) -> bool:
    """Did the cluster end most of what it started since the streak began? Its jobs started at or after the
    streak's first start and still running there must be fewer than the suspects."""
    starts = [started for _, _, started, _ in ctx.store.suspects(campaign_id, cluster) if started is not None]
    if not starts:
        return True
    first = min(starts)
    running = sum(1 for where, s in ctx.store.running_since(campaign_id) if where == cluster and s >= first)
    return running < suspects


def _running_normally(ctx: Context, streak: int, seconds: float, collected: Set[str], now: float) -> None:
    """A black hole runs nothing: a job of the campaign still running on the streak's cluster (which answered
    in this pass) for ``seconds`` or more shows the cluster ran jobs normally when it started, as an end
    would (the short jobs of a big cluster's pass end before the long ones started with them)."""
    seen = []
    for campaign_id, cluster, *_ in ctx.store.streaks(streak):
        if cluster in collected:
            starts = [s for where, s in ctx.store.running_since(campaign_id) if where == cluster and now - s >= seconds]
            if starts:
                seen.append((campaign_id, cluster, max(starts)))
    if seen:
        with ctx.store.transaction():
            ctx.store.note_health(seen)


def _figures(
    ctx: Context, campaign_id: int, cluster: str, since: float, collected: Set[str], now: float
) -> dict[str, list]:
    """Per other cluster, and for the cluster itself before the streak (its first end at ``since``), with at
    least MIN_SAMPLE of them: (seconds, ended) of the campaign's latest terminated jobs there (ended) and of
    its jobs running on the other clusters (not ended: the time they have run so far)."""
    figures: dict[str, list[tuple[float, bool]]] = {}
    before = f"{cluster} before the streak"
    for where, seconds, ended in ctx.store.recent_durations(campaign_id, LATEST):
        if where != cluster:
            figures.setdefault(where, []).append((seconds, True))
        elif ended < since:
            figures.setdefault(before, []).append((seconds, True))
    for where, started in ctx.store.running_since(campaign_id):
        if where != cluster and where in collected:
            figures.setdefault(where, []).append((max(0.0, now - started), False))
    return {where: values for where, values in figures.items() if len(values) >= MIN_SAMPLE}


def _mostly_shorter(values: list[tuple[float, bool]], reference: float) -> bool:
    """Are more than half of a cluster's figures ends under ``reference`` (the median of its jobs' durations is
    under it, however long its running ones take)?"""
    return 2 * sum(1 for seconds, ended in values if ended and seconds < reference) > len(values)


def _send_back(ctx: Context, campaign_id: int, cluster: str) -> int:
    """The streak's jobs still ended on the cluster go back to the bag, avoiding it for a while; not counted
    as resubmissions nor failures; their job events closed (with the blacklist they opened), their durations
    out of Spritz's figures. In the caller's transaction; returns how many."""
    suspects = ctx.store.suspects(campaign_id, cluster)
    job_ids = [job_id for job_id, *_ in suspects]
    terminated = [
        (campaign_id, cluster, max(0.0, ended - started), ended)
        for _, state, started, ended in suspects
        if state == JobState.TERMINATED and started is not None
    ]
    failed = [job_id for job_id, state, *_ in suspects if state == JobState.EVENT]
    ctx.store.remove_durations(terminated, ctx.bucket)
    failures = set(failed)
    their_events = [e for e in ctx.store.events(campaign_id=campaign_id) if e.job_id in failures]
    events.close(ctx.store, their_events, ctx.clock.now(), BY)  # and the blacklist they opened, if none is left
    ctx.store.forget_failures(job_ids)
    ctx.store.requeue(job_ids, count_resubmit=False, avoid=ctx.avoiding(cluster))
    ctx.store.break_streaks([(campaign_id, cluster)])
    ctx.report.add("black-hole ends run again", len(job_ids))
    return len(job_ids)
