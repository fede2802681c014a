"""Progress predictors (Spritz): throughput and estimated end of each campaign, and of its jobs on each cluster.

Spritz gathers, at each pass, what cigri knows of a campaign (or of its jobs on one cluster) into a
:class:`Sample`; a predictor turns it into a :class:`Forecast` (throughput, estimated end, and an interval
around it when the predictor gives one). Predictors are classes behind :class:`Predictor`, named in
:func:`registry`: ``ewma`` (a smoothed throughput, cigri's first) and ``window`` (the default: the jobs'
durations and the slots the campaign holds, see :class:`Windowed`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import ConfigError

WINDOW = 3600.0  # seconds of terminations the throughput is measured over
BUCKETS = 12  # the window is kept as this many buckets of terminations
PRIOR_JOBS = 100  # a campaign's failed fraction starts as the state's, as much as if observed on this many jobs


@dataclass(frozen=True)
class Spread:
    """The durations of the jobs that terminated, from running sums (n, sum, sum of squares, longest)."""

    n: int
    mean: float | None
    std: float | None
    longest: float | None

    @classmethod
    def of(cls, n: int | None, total: float | None, squares: float | None, longest: float | None = None) -> Spread:
        """Mean and (population) standard deviation from the sums kept as jobs end: sqrt(sq/n - mean^2),
        never negative (rounding)."""
        if not n:
            return cls(0, None, None, longest)
        mean = total / n
        return cls(n, mean, math.sqrt(max(0.0, squares / n - mean * mean)), longest)

    @classmethod
    def kept(cls, figures: Mapping[str, Any]) -> Spread:
        """From Spritz's stored figures (``duration_n``, ``duration_sum``, ``duration_sq``, ``duration_max``)."""
        return cls.of(*(figures.get(f"duration_{key}") for key in ("n", "sum", "sq", "max")))


@dataclass(frozen=True)
class Sample:
    """What Spritz knows of a campaign (or of its jobs on one cluster) at one pass."""

    now: float
    done: int  # jobs terminated so far
    remaining: int  # jobs still to run: not started (to launch, queued) and running
    previous_at: float | None = None  # when the previous forecast was made
    previous_done: int = 0
    previous_throughput: float | None = None  # jobs per second, as the previous forecast had it
    running: int = 0  # of the remaining, the jobs running now
    queued: int = 0  # of the remaining, the jobs handed to clusters that have not started yet
    elapsed: float = 0.0  # the seconds the running jobs have run so far, summed
    oldest: float = 0.0  # the seconds the longest-running of them has run
    durations: Spread = Spread(0, None, None, None)
    rate: float | None = None  # terminations per second over the sliding window (None: nothing to measure yet)
    failures: int = 0  # jobs that failed so far (each waits for its user to fix it)
    failed_prior: float = 0.0  # the fraction of the state's jobs that failed in the window (stands in early on)
    fix_delay: float | None = None  # mean seconds a failed job waited for its fix (None: none fixed yet)
    awaiting_since: float | None = None  # when the latest failed job still waiting for its fix failed


@dataclass(frozen=True)
class Forecast:
    throughput: float | None  # jobs per second
    eta: float | None  # epoch seconds
    low: float | None = None  # the interval around the estimated end, when the predictor gives one
    high: float | None = None


class Predictor(Protocol):
    name: str
    min_interval: float  # seconds: a campaign forecast more recently than this is not forecast again
    window: float  # seconds of terminations the throughput is measured over

    def forecast(self, sample: Sample) -> Forecast: ...


class SmoothedThroughput:
    """Throughput as an exponentially weighted rate of terminations (time constant ``tau`` seconds);
    the end is what remains over that rate. No interval."""

    name = "ewma"
    min_interval = 1.0

    def __init__(self, tau: float = 300.0, window: float = WINDOW):
        self.tau = tau
        self.window = window

    def forecast(self, sample: Sample) -> Forecast:
        if sample.previous_at is None:
            return Forecast(sample.previous_throughput, None)
        elapsed = sample.now - sample.previous_at
        rate = max(0, sample.done - sample.previous_done) / elapsed
        if sample.previous_throughput is None:
            throughput = rate
        else:
            weight = 1 - math.exp(-elapsed / self.tau)
            throughput = sample.previous_throughput + weight * (rate - sample.previous_throughput)
        eta = sample.now + sample.remaining / throughput if throughput > 0 and sample.remaining else None
        return Forecast(throughput, eta if sample.remaining else sample.now)


def harmonic(n: int) -> float:
    """H(n) = 1 + 1/2 + ... + 1/n (the expected longest of n exponential durations, in means)."""
    if n < 50:
        return sum(1.0 / k for k in range(1, n + 1))
    return math.log(n) + 0.5772156649 + 1 / (2 * n)


class Windowed:
    """The end from the slots the campaign holds and its jobs' durations; the throughput over a sliding window.

    With ``slots`` jobs running, ``left`` jobs remaining and a mean duration ``d`` (std ``s``, taken as
    ``d`` until two jobs ended), the running jobs' slots take the ``left - slots`` jobs not started yet one
    after another: they drain in ``(left - slots) x d / slots``; then the last ``slots`` jobs end with the
    longest of them, expected at ``d + s x (H(slots) - 1)`` (exact for exponential durations, whose residual
    life is again ``d``: the longest of ``n`` is ``d x H(n)``). That tail is never later than the longest
    duration seen when as many jobs ended as run and none of the running ones has run that long yet (jobs
    that started together end up to their current age whatever their law: then the longest seen bounds
    nothing). So ``eta = now + (left - slots) x d / slots + tail``. While none of its jobs runs, the jobs it
    has on clusters stand for its slots (they were sent there to start); with none there either, the end
    is what remains over the window's throughput (none without it).

    The mean duration counts the running jobs too, as censored observations (the exponential's maximum
    likelihood: (sum of ended durations + sum of running jobs' elapsed times) / jobs ended): early in a
    campaign the first jobs to end are its short ones. Before any job ends it is twice the running jobs'
    mean elapsed time (seen at a random moment, a job is half way through on average). Failed jobs push the
    end (:meth:`fixes`).

    The interval is ``eta +- 2 sigma``, its low end not before now, with sigma^2 the sum of: the durations'
    spread over the drain (``s x sqrt(left - slots) / slots``: the work left has std ``s x sqrt(n)``), the
    spread of the longest job (``s x pi / sqrt(6)``, Gumbel's, the limit for exponential durations), and the
    throughput's spread: the drain times how far the window's throughput is from the slots' (``slots / d``),
    relatively (the slots a campaign holds change when the window says so).
    """

    name = "window"
    min_interval = 1.0

    def __init__(self, window: float = WINDOW):
        self.window = window

    @staticmethod
    def duration(sample: Sample) -> tuple[float | None, float | None]:
        """The mean duration the end is computed with, and its std (None: not measured yet). The jobs that
        ended first are the short ones (all the more when a campaign's jobs started together): the running
        jobs count as censored observations in the mean, and the spread is taken as at least the mean (the
        exponential's; the longest duration seen caps the tail where durations vary less)."""
        spread = sample.durations
        if not spread.n:
            return (2 * sample.elapsed / sample.running, None) if sample.running else (None, None)
        mean = (spread.mean * spread.n + sample.elapsed) / spread.n
        return mean, max(mean, spread.std)

    @staticmethod
    def fixes(sample: Sample, eta: float, last_end: float, mean: float) -> float:
        """The end pushed by failed jobs, which run again once their user fixes them (``fix_delay`` after
        cigri saw them fail, as measured), cigri having seen the failure at the pass after it and sending
        them again at the pass after the fix (two pass intervals: the time since the previous forecast). The
        latest failed job still waiting is fixed, then runs. Of the ``left`` jobs, ``f x left`` are expected
        to fail too (``f`` the campaign's failed fraction so far, starting from the state's over the window as
        if it came from PRIOR_JOBS jobs), some, with probability
        ``1 - (1 - f)^left``, at the latest when the last ones end (``last_end``); once fixed they run
        again, the longest of them ``mean x H(f x left)``, and so on, round after round, each by the
        probability that some of the previous round fail again. The end is the later of ``eta`` and that
        chain's expected end."""
        interval = sample.now - sample.previous_at if sample.previous_at is not None else 0.0
        delay = sample.fix_delay + 2 * interval
        if sample.awaiting_since is not None:
            eta = max(eta, sample.awaiting_since + delay + mean)
        tried = sample.done + sample.failures
        failed = (sample.failures + PRIOR_JOBS * sample.failed_prior) / (tried + PRIOR_JOBS)
        if not failed:
            return eta
        chain, likely, jobs = last_end, 1.0, float(sample.remaining)
        while jobs > 0 and likely > 0.01:
            likely *= 1 - (1 - failed) ** jobs
            jobs *= failed
            chain += likely * (delay + mean * harmonic(max(1, math.ceil(jobs))))
        return max(eta, chain)

    def forecast(self, sample: Sample) -> Forecast:
        now, left, rate = sample.now, sample.remaining, sample.rate
        slots = sample.running or sample.queued
        mean, std = self.duration(sample)
        if not left:
            if sample.awaiting_since is None:
                return Forecast(rate, now, now, now)
            if sample.fix_delay is None or mean is None:
                return Forecast(rate, None)  # it waits for its user to fix its failed jobs: when, nobody knows
            return Forecast(rate, self.fixes(sample, now, now, mean))
        if not slots or not mean:
            if not rate:
                return Forecast(rate, None)
            eta = now + left / rate
            return Forecast(rate, eta)
        std = mean if std is None else std  # no spread measured yet: the exponential's
        beyond = left - slots
        drain = beyond * mean / slots
        tail = mean + std * (harmonic(slots) - 1)
        longest = sample.durations.longest
        if longest is not None and sample.durations.n >= slots and longest > sample.oldest:
            tail = min(tail, max(mean, longest))
        eta = now + drain + tail
        if sample.fix_delay is not None:
            eta = self.fixes(sample, eta, now + drain + mean, mean)
        variance = (std * math.sqrt(beyond) / slots) ** 2 + (std * math.pi / math.sqrt(6)) ** 2
        if rate:
            variance += (drain * (rate * mean / slots - 1)) ** 2
        sigma = math.sqrt(variance)
        return Forecast(rate, eta, max(now, eta - 2 * sigma), eta + 2 * sigma)


def within(part: Forecast, whole: Forecast) -> Forecast:
    """The forecast of a campaign's jobs on one cluster (``part``) made consistent with the campaign's
    (``whole``): those jobs are some of the campaign's, so they end by its end. The estimate is no later than
    the campaign's, the interval ends by the campaign's, and it is no wider: a wider one is narrowed around
    the estimate, each side in proportion. Unchanged when either has no estimate."""
    if part.eta is None or whole.eta is None:
        return part
    eta = min(part.eta, whole.eta)
    if part.low is None or part.high is None:
        return Forecast(part.throughput, eta)
    low = min(part.low, eta)
    if whole.low is None or whole.high is None:
        return Forecast(part.throughput, eta, low, part.high)
    high = min(part.high, whole.high)  # both at or after eta
    width, allowed = high - low, whole.high - whole.low
    if width > allowed:
        low, high = eta - (eta - low) * allowed / width, eta + (high - eta) * allowed / width
    return Forecast(part.throughput, eta, low, high)


def registry() -> dict[str, type]:
    return {cls.name: cls for cls in (SmoothedThroughput, Windowed)}


def predictor(name: str = "window", window: object = WINDOW) -> Predictor:
    """The predictor ``name`` (the configuration's ``spritz``) measuring throughput over ``window`` seconds
    (``spritz.window``); a ConfigError naming the key for an unknown name or a window that is not a
    positive number."""
    strategies = registry()
    if name not in strategies:
        raise ConfigError(f"spritz: unknown predictor {name!r} (valid: {', '.join(sorted(strategies))})")
    if not isinstance(window, int | float) or isinstance(window, bool) or window <= 0:
        raise ConfigError(f"spritz.window: expected a positive number of seconds, got {window!r}")
    return strategies[name](window=float(window))
