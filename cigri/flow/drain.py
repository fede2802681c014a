"""``drain``: what the cluster starts in a few passes may wait in its queue (issue 21, item 2).

The queue allowance follows the cluster's drain rate rather than a constant: ``passes`` times one pass's
starts (:func:`~cigri.flow.ratio.one_pass_starts`: the slots of cigri's queued jobs the cluster started since
the previous pass, or the running slots expected to end in one period if more), rounded up, at least one
slot, never above a set ``queue_depth``. A cluster running long jobs then holds few of cigri's jobs waiting,
and they wait in cigri where any cluster can start them; one running short jobs holds enough to stay busy
until the next pass. Until the drain can be told (the first reading, or jobs running there with no duration
known yet) it lets ``queue_depth`` wait, as ``constant`` does; nothing on a stalled cluster.

It never falls below what waits there now (within ``queue_depth``): the jobs already queued stay and start in
their turn, and nikita kills none of them for flooding when the drain slows (a deep queue it lets drain
away, queueing no more until it is short enough). Jobs placed better elsewhere are the metascheduler's
take-back to move.

Options: ``passes`` (a number > 0, default 3: the queue covers the next pass and the RM's delay to start
what it is sent). The sensor is not used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..scheduling import inputs
from . import Allowance, Reading, State, register, within_depth
from .ratio import one_pass_starts

PASSES = 3.0  # the passes of starts that may wait: on the bench scenarios, 3 ended small.yaml sooner than 1 or 2


@register
class Drain:
    name = "drain"

    def __init__(self, passes: float = PASSES):
        self.passes = passes

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> Drain:
        path = f"flow.{cls.name}"
        inputs.known(options, ("passes",), path, "option")
        return cls(inputs.positive(options, "passes", path, PASSES))

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]:
        if reading.stalled:
            return Allowance(0), state
        if reading.period <= 0 or (reading.running and not reading.expected_ends):
            return Allowance(reading.depth), state
        starts = math.ceil(round(self.passes * one_pass_starts(reading), 9))
        return Allowance(within_depth(max(1, starts, reading.waiting), reading.depth)), state
