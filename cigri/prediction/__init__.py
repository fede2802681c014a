"""Progress predictors (Spritz): throughput and estimated end of each campaign.

A predictor turns a campaign's figures into a forecast; :func:`registry` names them. The first one is a
smoothed throughput; the job-ratio algorithms of CiGri's 2009 design come later behind the same seam.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from ..errors import ConfigError


@dataclass(frozen=True)
class Sample:
    now: float
    done: int  # jobs terminated so far
    remaining: int  # jobs still to run (to launch, queued, running)
    previous_at: float | None
    previous_done: int
    previous_throughput: float | None  # jobs per second


@dataclass(frozen=True)
class Forecast:
    throughput: float | None  # jobs per second
    eta: float | None  # epoch seconds


class Predictor(Protocol):
    name: str
    min_interval: float

    def forecast(self, sample: Sample) -> Forecast: ...


class SmoothedThroughput:
    """Throughput as an exponentially weighted rate of terminations (time constant ``tau`` seconds);
    the end is what remains over that rate."""

    name = "ewma"
    min_interval = 1.0

    def __init__(self, tau: float = 300.0):
        self.tau = tau

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


def registry() -> dict[str, type]:
    return {SmoothedThroughput.name: SmoothedThroughput}


def predictor(name: str = "ewma") -> Predictor:
    strategies = registry()
    if name not in strategies:
        raise ConfigError(f"unknown predictor {name!r} (valid: {', '.join(sorted(strategies))})")
    return strategies[name]()
