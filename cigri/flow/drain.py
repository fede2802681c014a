"""``drain``: what the cluster starts in about one pass may wait in its queue (issue 21, item 2).

The queue allowance follows the cluster's drain rate rather than a constant: ``passes`` times one pass's
starts (:func:`~cigri.flow.ratio.one_pass_starts`: the slots of cigri's queued jobs the cluster started since
the previous pass, or the running slots expected to end in one period if more), rounded up, at least one
slot, never above a set ``queue_depth``. A cluster running long jobs then holds few of cigri's jobs waiting,
and they wait in cigri where any cluster can start them; one running short jobs holds enough to stay busy
until the next pass. Until the drain can be told (the first reading, or jobs running there with no duration
known yet) it lets ``queue_depth`` wait, as ``constant`` does; nothing on a stalled cluster.

The allowance never falls below what the previous pass sent there (jobs sent to free slots may not have
started yet), nor faster than the cluster starts jobs: what the last allowance let wait, less this pass's
starts. The jobs waiting then drain by themselves, and nikita kills none for flooding when the drain slows.

Options: ``passes`` (a number > 0, default 1). The sensor is not used.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ConfigError
from . import Allowance, Reading, State, register, within_depth
from .ratio import one_pass_starts


@register
class Drain:
    name = "drain"

    def __init__(self, passes: float = 1.0):
        self.passes = passes

    @classmethod
    def configure(cls, options: dict[str, Any]) -> Drain:
        unknown = sorted(set(options) - {"passes"})
        if unknown:
            raise ConfigError(f"flow.{cls.name}.{unknown[0]}: {cls.name} has no such option")
        passes = options.get("passes", 1.0)
        if isinstance(passes, bool) or not isinstance(passes, int | float) or not 0 < passes < math.inf:
            raise ConfigError(f"flow.{cls.name}.passes: expected a number > 0, got {passes!r}")
        return cls(float(passes))

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]:
        if reading.stalled:
            return Allowance(0), {"queue": 0}
        if reading.period <= 0 or (reading.running and not reading.expected_ends):
            return Allowance(reading.depth), {"queue": reading.depth}
        starts = one_pass_starts(reading)
        sent = sum(c.sent * c.slots for c in reading.campaigns)  # sent to free slots, they may not have started
        drained = int(state.get("queue", 0)) - starts  # what the last allowance leaves once this pass's starts go
        queue = within_depth(max(1, math.ceil(round(self.passes * starts, 9)), sent, drained), reading.depth)
        return Allowance(queue), {"queue": queue}
