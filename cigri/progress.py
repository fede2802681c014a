"""A campaign's progress as series over time, for ``gridstat -c ID --plot``: jobs done, throughput per cluster,
and Spritz's predicted end as it was forecast (the forecast history of :meth:`cigri.store.Store.forecasts`).

Everything comes from the state's own records: the end time of each terminated job and the forecasts the
almighty's passes recorded. A job counts as done when it terminated (exit 0), as in gridstat's progress.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import JobState
from .store import Store

BUCKETS = 30  # throughput bins over the campaign's span: whole seconds below a minute, whole minutes above


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
        """Seconds per throughput bin: the span in about :data:`BUCKETS` bins, in whole seconds up to a minute,
        in whole minutes beyond."""
        seconds = max(1, math.ceil((self.now - self.start) / BUCKETS))
        return float(seconds if seconds <= 60 else math.ceil(seconds / 60) * 60)

    def throughput(self) -> dict[str, list[int]]:
        """Jobs ended per bin, for each cluster that ended any (bins of :attr:`bucket` from the start)."""
        bins = max(1, math.ceil((self.now - self.start) / self.bucket))
        out: dict[str, list[int]] = {}
        for at, cluster in self.ends:
            counts = out.setdefault(cluster, [0] * bins)
            counts[min(bins - 1, max(0, int((at - self.start) // self.bucket)))] += 1
        return dict(sorted(out.items()))


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
