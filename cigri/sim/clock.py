"""Simulated time: what the cycle reads instead of the wall clock."""

from __future__ import annotations


class SimClock:
    def __init__(self, start: float = 0.0):
        self.t = start

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)

    def advance_to(self, t: float) -> None:
        if t < self.t:
            raise ValueError(f"time cannot go back from {self.t} to {t}")
        self.t = t
