"""Black holes: the seed's "sink effect", jobs that end in near 0 seconds on one cluster (a broken node, a
missing file system, a wrapper that exits at once), whatever their exit status. CiGri has no such detection:
it counts what a black hole swallows as done.

As the updator collects a cluster's ends (:func:`note`, in the transaction that records them), each job of a
campaign that ended there within ``blackhole.seconds`` lengthens the campaign's streak on that cluster; a
longer end breaks it, unless its job started before the streak's first end (it began before the cluster
turned bad). The streak and the jobs that made it are stored with the ends: a pass killed half-way
loses nothing, and the cost follows the pass's ends, not the state's size.

Once every cluster is collected (:func:`judge`, in the same pass), a streak of at least ``blackhole.streak``
ends is judged against the campaign's jobs on each other cluster: the durations of its latest terminated
jobs there, and the time its running jobs there have run so far (a lower bound of their durations; only on
clusters whose RM answered in this pass, so that a job ended since is not taken as still running); and
against its jobs that terminated on the same cluster before the streak began (a cluster that turned into a
black hole, the campaign's only one included). Each of these with at least MIN_SAMPLE figures gives their
median (the lower one), robust to a stuck job.

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
from .context import Context, log

LATEST = 1000  # the campaign's terminated jobs read for the reference: those of the highest ids
MIN_SAMPLE = 5  # figures a cluster needs for its median to count
BY = "a black hole's end: run again elsewhere"  # why their job events were closed


def note(ctx: Context, cluster: str, ends: Sequence[tuple[int, int, float | None, float]]) -> None:
    """(job, campaign, started, ended) of the jobs that exited on the cluster (any status), in the caller's
    transaction: each campaign's streak there grows by its short ends after its last longer one, in the
    order of their ends. A longer end of a job that started before the streak's first end does not break
    it: a cluster that turns into a black hole still ends normally the jobs it began before."""
    if not ends:
        return
    limit = config.black_holes(ctx.store.settings()).seconds
    grown: dict[int, list[tuple[int, str, int, float, float]]] = {}
    broken = set()
    since = ctx.store.streak_starts(cluster)  # each streak's first end there, stored or of this pass
    for job_id, campaign_id, started, ended in sorted(ends, key=lambda end: end[3]):
        if started is None:  # never seen running: how long it ran is unknown
            continue
        seconds = max(0.0, ended - started)
        if seconds < limit:
            grown.setdefault(campaign_id, []).append((campaign_id, cluster, job_id, seconds, ended))
            since.setdefault(campaign_id, ended)
        elif campaign_id in since and started < since[campaign_id]:
            continue  # it began before the streak did: its end says nothing of the cluster since
        else:
            broken.add(campaign_id)
            grown.pop(campaign_id, None)
            since.pop(campaign_id, None)
    ctx.store.break_streaks((campaign_id, cluster) for campaign_id in sorted(broken))
    ctx.store.lengthen_streaks([row for rows in grown.values() for row in rows])


def judge(ctx: Context, collected: Set[str]) -> None:
    """Judge the streaks long enough (see the module), with the running jobs of the ``collected`` clusters."""
    thresholds = config.black_holes(ctx.store.settings())
    now = ctx.clock.now()
    for campaign_id, cluster, n, longest, since, blacklisted, over in ctx.store.streaks(thresholds.streak):
        if over or blacklisted:  # over: nothing runs again; blacklisted: what was queued there goes back
            with ctx.store.transaction():
                if over:
                    ctx.store.break_streaks([(campaign_id, cluster)])
                else:
                    _send_back(ctx, campaign_id, cluster)
            continue
        figures = _figures(ctx, campaign_id, cluster, since, collected, now)
        medians = {where: statistics.median_low(s for s, _ in values) for where, values in figures.items()}
        above = {where: median for where, median in medians.items() if median >= thresholds.reference}
        if above:
            where = max(above, key=above.__getitem__)
            with ctx.store.transaction():
                returned = _send_back(ctx, campaign_id, cluster)
                message = (
                    f"{n} jobs in a row ended within {thresholds.seconds:g} s on {cluster} (the longest "
                    f"{longest:.1f} s) while the campaign's jobs take a median of {above[where]:.0f} s on {where}: "
                    f"a black hole; its {returned} suspect results run again elsewhere"
                )
                ctx.store.open_event(
                    EventClass.CAMPAIGN, EventCode.BLACK_HOLE, message, now, cluster=cluster, campaign_id=campaign_id
                )
            ctx.report.add("black holes")
            log.warning("campaign %d: %s", campaign_id, message)
        elif figures and all(_mostly_shorter(values, thresholds.reference) for values in figures.values()):
            with ctx.store.transaction():  # its jobs are that fast: the results stand
                ctx.store.break_streaks([(campaign_id, cluster)])


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
