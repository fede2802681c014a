"""A campaign's progress: where it stands now (:func:`standing`, for almighty's bar and its ``--progress``
lines), and as series over time, for ``gridstat -c ID --plot``: jobs done, throughput per cluster, and Spritz's
predicted end as it was forecast (the forecast history of :meth:`cigri.store.Store.forecasts`).

Everything comes from the state's own records: the end time of each terminated job and the forecasts the
almighty's passes recorded. A job counts as done when it terminated (exit 0), as in gridstat's progress.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

from .campaigns import blocked_reason
from .model import CampaignState, JobState
from .store import Store

BUCKETS = 30  # throughput bins over the campaign's span, at most: whole minutes
# a throughput over less than this says little: a few jobs ending within a second read as 200,000 jobs/h
MIN_BUCKET = 60.0


@dataclass(frozen=True)
class Standing:
    """Where a campaign stands: its jobs done out of all it has (skipped ones aside), Spritz's throughput and
    estimated end (none while it is blocked: it ends when it is unblocked), and why it is blocked."""

    campaign_id: int
    name: str
    state: CampaignState
    done: int
    total: int
    rate: float | None  # jobs per second, over Spritz's window
    eta: float | None  # epoch seconds
    blocked: str | None

    @property
    def percent(self) -> int:
        return 100 * self.done // self.total if self.total else 100


def standing(store: Store, campaign_id: int) -> Standing:
    """The campaign's standing now, from its job counts and Spritz's latest figures (NotFound if unknown)."""
    campaign = store.campaign(campaign_id)
    counts = store.counts(campaign_id)
    stats = store.stats(campaign_id)
    blocked = blocked_reason(store, campaign)
    going = campaign.state == CampaignState.IN_TREATMENT and blocked is None
    return Standing(
        campaign_id=campaign.id,
        name=campaign.name,
        state=campaign.state,
        done=counts[JobState.TERMINATED],
        total=sum(counts.values()) - counts[JobState.SKIPPED],
        rate=stats["rate"],
        eta=stats["eta"] if going else None,
        blocked=blocked,
    )


@dataclass(frozen=True)
class Forecast:
    at: float  # when it was forecast
    eta: float | None  # the predicted end, and its interval
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Progress:
    campaign_id: int
    name: str
    total: int
    start: float  # the campaign's submission
    now: float  # its end when it ended, else the time asked
    ends: tuple[tuple[float, str], ...]  # (ended_at, cluster) of each terminated job, in time order
    forecasts: tuple[Forecast, ...]  # oldest first

    @property
    def done(self) -> int:
        return len(self.ends)

    def done_over_time(self) -> list[tuple[float, int]]:
        """(time, jobs done by then): a step at each end, from (start, 0) to (now, done)."""
        return [(self.start, 0), *((at, index + 1) for index, (at, _) in enumerate(self.ends)), (self.now, self.done)]

    @property
    def bucket(self) -> float:
        """Seconds per throughput bin: the span in about :data:`BUCKETS` bins, in whole minutes (at least
        :data:`MIN_BUCKET`)."""
        return max(MIN_BUCKET, math.ceil((self.now - self.start) / BUCKETS / 60) * 60)

    def edges(self) -> list[float]:
        """The throughput bins' bounds, from the start to now: bins of :attr:`bucket` seconds, the last one
        stretched to now (so that none is shorter than a bucket); none when the span is shorter than a bucket."""
        full = int((self.now - self.start) // self.bucket)
        if not full:
            return []
        return [*(self.start + i * self.bucket for i in range(full)), self.now]

    def throughput(self) -> dict[str, list[float]]:
        """Jobs per hour in each bin of :meth:`edges`, for each cluster that ended any in them."""
        edges = self.edges()
        if not edges:
            return {}
        counts: dict[str, list[int]] = {}
        for at, cluster in self.ends:
            there = counts.setdefault(cluster, [0] * (len(edges) - 1))
            there[min(len(edges) - 2, max(0, int((at - self.start) // self.bucket)))] += 1
        spans = [high - low for low, high in pairwise(edges)]
        return {
            cluster: [n * 3600 / span for n, span in zip(there, spans, strict=True)]
            for cluster, there in sorted(counts.items())
        }


def progress(store: Store, campaign_id: int, now: float) -> Progress:
    """The campaign's series (NotFound for an unknown campaign)."""
    campaign = store.campaign(campaign_id)
    ends = sorted(
        (job.ended_at, job.cluster or "")
        for job in store.jobs(campaign_id, [JobState.TERMINATED])
        if job.ended_at is not None
    )
    forecasts = tuple(Forecast(f["at"], f["eta"], f["eta_low"], f["eta_high"]) for f in store.forecasts(campaign_id))
    last = max([campaign.submitted_at, *(at for at, _ in ends), *(f.at for f in forecasts)])
    end = campaign.ended_at if campaign.ended_at is not None else max(now, last)
    return Progress(
        campaign_id=campaign.id,
        name=campaign.name,
        total=campaign.nb_jobs,
        start=campaign.submitted_at,
        now=max(end, last),
        ends=tuple(ends),
        forecasts=forecasts,
    )
