"""Simulated time: what the cycle reads instead of the wall clock."""

from __future__ import annotations

from collections.abc import Callable


class SimClock:
    def __init__(self, start: float = 0.0, on_advance: Callable[[float], None] | None = None):
        self.t = start
        self.on_advance = on_advance  # the simulated world catching up with the new time

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.advance_to(self.t + max(0.0, seconds))

    def advance_to(self, t: float) -> None:
        if t < self.t:
            raise ValueError(f"time cannot go back from {self.t} to {t}")
        self.t = t
        if self.on_advance:
            self.on_advance(t)
