"""Spritz: the throughput and estimated end of every running campaign."""

from __future__ import annotations

from ..model import CampaignState, JobState
from ..prediction import Sample
from .context import Context


def run(ctx: Context) -> None:
    """Throughput and estimated end of every running campaign."""
    now = ctx.clock.now()
    for campaign in ctx.store.campaigns(states=[CampaignState.IN_TREATMENT]):
        stats = ctx.store.stats(campaign.id)
        if stats["sample_at"] is not None and now - stats["sample_at"] < ctx.forecaster.min_interval:
            continue
        counts = ctx.store.counts(campaign.id)
        remaining = sum(
            counts[s] for s in (JobState.TO_LAUNCH, JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING)
        )
        done = counts[JobState.TERMINATED]
        forecast = ctx.forecaster.forecast(
            Sample(now, done, remaining, stats["sample_at"], stats["sample_done"] or 0, stats["throughput"])
        )
        with ctx.store.transaction():
            ctx.store.set_forecast(campaign.id, now, done, forecast.throughput, forecast.eta)
