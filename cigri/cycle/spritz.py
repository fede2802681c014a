"""Spritz: each running campaign's figures (throughput over a sliding window, job durations, jobs left) and
its estimated end with an interval, for the whole campaign and for its jobs on each cluster, recorded as the
latest forecast and in the forecast history.

The durations' running sums and the termination buckets are kept by the updator as jobs end
(:meth:`cigri.store.Store.add_durations`); this stage reads a few rows per campaign and cluster, and the
campaign's active jobs (indexed by campaign and state), so its cost follows the running campaigns and their
jobs on the clusters, not the jobs ever recorded.
"""

from __future__ import annotations

import math

from ..model import CampaignState, JobState
from ..prediction import Forecast, Sample, Spread, within
from .context import Context


def window_rate(ends: int, now: float, since: float, started: float | None) -> float | None:
    """Terminations per second over the window: ``ends`` counted in the buckets from ``since`` on, over the
    time from ``since`` (or from when the first job was seen running, ``started``, if later) to now."""
    if started is None:
        return None
    span = now - max(since, started)
    return ends / span if span > 0 else None


def _row(campaign_id: int, cluster: str, sample: Sample, forecast: Forecast) -> tuple:
    """A row of the forecast history (see :meth:`cigri.store.Store.add_forecasts`)."""
    spread = sample.durations
    head = (campaign_id, cluster, sample.now, sample.done, sample.remaining, sample.rate, spread.mean, spread.std)
    return (*head, *_ends(forecast))


def _ends(forecast: Forecast) -> tuple[float | None, float | None, float | None]:
    return forecast.eta, forecast.low, forecast.high


def _first_start(kept: float | None, on_clusters, ends, submitted: float | None) -> float | None:
    """When the campaign's (or a cluster's) first job was seen running: as kept, else the earliest start of
    its running jobs, else (jobs ended unseen between two passes) ``submitted``; None while none ran."""
    if kept is not None:
        return kept
    starts = [figures[3] for figures in on_clusters if figures[3] is not None]
    if starts:
        return min(starts)
    return submitted if ends else None


def _age(now: float, on_clusters) -> float:
    """How long the longest-running of the jobs has run (0 when none runs)."""
    starts = [figures[3] for figures in on_clusters if figures[3] is not None]
    return now - min(starts) if starts else 0.0


def run(ctx: Context) -> None:
    """Forecast every running campaign, and its jobs on each cluster where it has some or had ends lately."""
    now = ctx.clock.now()
    forecaster = ctx.forecaster
    since = math.ceil((now - forecaster.window) / ctx.bucket) * ctx.bucket  # the first bucket inside the window
    history = []
    latest = []  # each campaign's forecasts, written with the history
    campaigns = ctx.store.campaigns(states=[CampaignState.IN_TREATMENT])
    if not campaigns:
        return
    # the state's: how long users took to fix failed jobs lately, and the fraction of jobs that failed in the window
    recent_fix_delay, failed_prior = ctx.store.recent_fix_delay(), ctx.store.failed_fraction(since) or 0.0
    for campaign in campaigns:
        stats = ctx.store.stats(campaign.id)
        if stats["sample_at"] is not None and now - stats["sample_at"] < forecaster.min_interval:
            continue
        counts = ctx.store.counts(campaign.id)
        remaining = sum(
            counts[s] for s in (JobState.TO_LAUNCH, JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING)
        )
        done = counts[JobState.TERMINATED]
        ends = ctx.store.window_ends(campaign.id, since)
        on_clusters = ctx.store.on_clusters(campaign.id, now)
        failures, fix_delay, awaiting_since = ctx.store.job_failures(campaign.id)
        if fix_delay is None:  # none of its own fixed yet: as the state's users fixed lately
            fix_delay = recent_fix_delay
        first_start = _first_start(stats["first_start"], on_clusters.values(), ends, campaign.submitted_at)
        sample = Sample(
            now,
            done,
            remaining,
            stats["sample_at"],
            stats["sample_done"] or 0,
            stats["throughput"],
            running=sum(figures[1] for figures in on_clusters.values()),
            queued=sum(figures[0] for figures in on_clusters.values()),
            elapsed=sum(figures[2] for figures in on_clusters.values()),
            oldest=_age(now, on_clusters.values()),
            durations=Spread.kept(stats),
            rate=window_rate(sum(ends.values()), now, since, first_start),
            failures=failures,
            failed_prior=failed_prior,
            fix_delay=fix_delay,
            awaiting_since=awaiting_since,
        )
        forecast = forecaster.forecast(sample)
        history.append(_row(campaign.id, "", sample, forecast))
        per_cluster = []
        cluster_stats = ctx.store.cluster_stats(campaign.id)
        for cluster in sorted(set(on_clusters) | set(ends)):
            figures = on_clusters.get(cluster, (0, 0, 0.0, None))
            kept = cluster_stats.get(cluster, {})
            started_there = _first_start(kept.get("first_start"), [figures], ends.get(cluster, 0), first_start)
            spread = Spread.kept(kept)
            there = Sample(
                now,
                spread.n,
                figures[0] + figures[1],
                running=figures[1],
                queued=figures[0],
                elapsed=figures[2],
                oldest=_age(now, [figures]),
                durations=spread,
                # over the campaign's span, not since its first start there: the clusters' throughputs add up
                # to the campaign's (a cluster that started late would show its few ends over a short span)
                rate=window_rate(ends.get(cluster, 0), now, since, first_start),
            )
            forecast_there = within(forecaster.forecast(there), forecast)
            per_cluster.append(
                (campaign.id, cluster, started_there, there.rate, there.remaining, *_ends(forecast_there))
            )
            history.append(_row(campaign.id, cluster, there, forecast_there))
        latest.append((campaign.id, done, forecast, first_start, sample.rate, remaining, per_cluster))
    with ctx.store.transaction():  # one for the pass: no campaign's forecast reads another's
        for campaign_id, done, forecast, first_start, rate, remaining, per_cluster in latest:
            ctx.store.set_forecast(
                campaign_id,
                now,
                done,
                forecast.throughput,
                forecast.eta,
                first_start=first_start,
                rate=rate,
                left=remaining,
                eta_low=forecast.low,
                eta_high=forecast.high,
            )
            ctx.store.set_cluster_forecasts(per_cluster)
        ctx.store.add_forecasts(history, now)
        ctx.store.prune_ends(since - ctx.bucket)
