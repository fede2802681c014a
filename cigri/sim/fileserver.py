"""A simulated file server: the shared storage grid jobs read and write (the NFS server of the CiGri
experiments), whose load a flow strategy may keep near a reference.

Its load follows, with a first-order time constant ``tau``, ``base + per_weight x`` the I/O weight of the
grid jobs running on the clusters it serves (each campaign's ``io_weight`` per job): between two changes
of that weight, ``load(t) = target + (load(t0) - target) e^-(t - t0)/tau``, exactly. The clusters report
their weight as their jobs start and stop; clusters advance one after the other on the simulated clock,
so changes are kept until the server is read at a time every cluster has reached, then applied in time
order. The server also integrates, exactly, the time its load spent above its reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class FileServerSpec:
    host: str  # the name a cluster's ``load:HOST`` sensor reads
    tau: float = 60.0  # seconds: the time constant of its load
    per_weight: float = 1.0  # load per unit of running grid jobs' I/O weight
    base: float = 0.0  # its load without grid jobs
    reference: float | None = None  # the load above which it is overloaded (the metric's)
    clusters: tuple[str, ...] = ()  # the clusters whose jobs use it (none given: every cluster)


class FileServer:
    def __init__(self, spec: FileServerSpec):
        self.spec = spec
        self.now = 0.0
        self.load = spec.base
        self.weights: dict[str, float] = {}  # each cluster's running I/O weight, as applied so far
        self.pending: list[tuple[float, int, str, float]] = []  # (when, order, cluster, its weight from then)
        self.seconds_above = 0.0  # time its load spent above the reference
        self.load_seconds = 0.0  # its load integrated over time (for the mean)
        self.peak = spec.base

    def change(self, cluster: str, when: float, weight: float) -> None:
        """From ``when`` on, ``cluster``'s running jobs weigh ``weight``."""
        self.pending.append((when, len(self.pending), cluster, weight))

    def load_at(self, t: float) -> float:
        """Its load at ``t`` (every cluster has reached ``t``): the changes up to then applied in order."""
        self.pending.sort()
        due = [change for change in self.pending if change[0] <= t]
        self.pending = self.pending[len(due) :]
        for when, _, cluster, weight in due:
            self._advance(max(self.now, when))
            self.weights[cluster] = weight
        self._advance(t)
        return self.load

    def _target(self) -> float:
        return self.spec.base + self.spec.per_weight * sum(self.weights.values())

    def _advance(self, t: float) -> None:
        span = t - self.now
        if span <= 0:
            return
        target, start, tau = self._target(), self.load, self.spec.tau
        end = target if tau <= 0 else target + (start - target) * math.exp(-span / tau)
        self.seconds_above += self._above(start, target, span)
        self.load_seconds += target * span + (start - target) * (tau * (1 - math.exp(-span / tau)) if tau > 0 else 0)
        self.peak = max(self.peak, start, end)
        self.load, self.now = end, t

    def _above(self, start: float, target: float, span: float) -> float:
        """How long, of ``span``, the load going from ``start`` towards ``target`` stays above the reference
        (it crosses it at most once: the curve is monotonic)."""
        reference, tau = self.spec.reference, self.spec.tau
        if reference is None:
            return 0.0
        if tau <= 0:
            return span if target > reference else 0.0
        if start > reference and target >= reference:
            return span
        if start > reference:  # falling through the reference
            return min(span, tau * math.log((start - target) / (reference - target)))
        if target > reference:  # rising through it
            return max(0.0, span - tau * math.log((target - start) / (target - reference)))
        return 0.0
