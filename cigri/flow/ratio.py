"""The 2009 design's job-ratio strategies: ``slow-start``, ``two-way-adaptive``, ``adaptive-down-exp-up``.

**Origin.** The 2009 scheduler design (``../shared/seeds/cigri-scheduler-design-2009.txt``, "Prediction
Algorithms") had Spritz keep, per cluster, a job ratio JR (jobs per free resource: the pass submitted
JR x FREE jobs) and move it each pass: "if (number of jobs waiting > allowed) reduce job_ratio else increase
job_ratio". Slow-start (like TCP's) doubled JR and dropped it to one job per cluster (1/MAX_RESOURCES) on
excess; two-way adaptive scaled it both ways, up from the free resources left, down by
(NB_JOBS_SUBMITTED - EXCESS) / NB_JOBS_SUBMITTED; adaptive-down, exponential-up doubled it and scaled it down.
Its JR also estimated the resources a job takes; cigri counts slots, so here the ratio only sets the flow.

**In cigri's terms**, at each pass on one cluster:

- capacity = free + expected_ends: the slots that can take a job before the next pass (free now, plus the
  running slots expected to end during one period);
- one pass's starts = max(started, ceil(expected_ends)): the slots of cigri's queued jobs the cluster
  started since the previous pass, or the slots expected to free during one period if more;
- excess = max(0, waiting - one pass's starts): the slots of cigri's jobs waiting in the RM's queue beyond
  what the cluster starts in one pass;
- the ratio: slots sent per slot of capacity; the pass sends at most ceil(ratio x capacity) slots
  (``Allowance.submit``; at least one slot while there is capacity);
- the queue allowance (``Allowance.queue``: what may wait, nikita's threshold) is one pass's starts, or what
  this pass sends if more (a job sent to a free slot may still wait at the next pass): what waits beyond
  that is the excess the ratio answers for (the seed had nikita wipe the excess "due to a bad ratio
  estimation"). Never above a set ``queue_depth``, which then also caps submit at free + queue_depth;
- S: the slots the previous pass allowed to send.

On excess the ratio goes down; without excess it goes up if S > 0 (the last submission got in), and stays
otherwise (nothing was sent, nothing to judge). It stays within [1/slots, ``max_ratio``]: 1/slots sends one
slot per pass (the seed's one job per cluster). A ``stalled`` cluster (its queued jobs do not start) gets
nothing, keeps its ratio, and the next pass judges no submission (S = 0).

- ``slow-start``: up x2, down to 1/slots.
- ``two-way-adaptive``: up x (S + free)/S (the last submission all got in and ``free`` slots are still idle:
  cover them too; unchanged on a full cluster), down x (S - excess)/S (send what the last pass sent minus its
  excess; 1/slots when the excess is S or more).
- ``adaptive-down-exp-up``: up x2, down as two-way-adaptive.

Options: ``initial`` (the first ratio, > 0, default 1: send what the capacity takes, the seed's one resource
per job) and ``max_ratio`` (>= ``initial``, default 8). The sensor is not used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigError
from ..scheduling import inputs
from . import Allowance, Reading, State, register, within_depth

INITIAL, MAX_RATIO = 1.0, 8.0


def one_pass_starts(reading: Reading) -> int:
    """The slots of cigri's queued jobs the cluster starts in one pass: observed, or expected if more."""
    return max(reading.started, math.ceil(round(reading.expected_ends, 9)))


def ratio_double(ratio: float, sent: int, free: int) -> float:
    """Exponential up: twice the ratio."""
    return 2 * ratio


def ratio_to_floor(ratio: float, sent: int, excess: int, floor: float) -> float:
    """Slow-start down: the floor (one slot per pass)."""
    return floor


def ratio_up_adaptive(ratio: float, sent: int, free: int) -> float:
    """Two-way adaptive up: the ratio that would also have filled the ``free`` slots still idle."""
    return ratio * (sent + free) / sent


def ratio_down_adaptive(ratio: float, sent: int, excess: int, floor: float) -> float:
    """Adaptive down: the ratio that would have sent the last ``sent`` slots minus their ``excess``."""
    if sent <= excess:
        return floor
    return ratio * (sent - excess) / sent


class JobRatio:
    """A job-ratio strategy; a subclass says how the ratio goes ``up`` (ratio, sent, free) and ``down``
    (ratio, sent, excess, floor)."""

    name = ""
    up: Callable[[float, int, int], float]
    down: Callable[[float, int, int, float], float]

    def __init__(self, initial: float = INITIAL, max_ratio: float = MAX_RATIO):
        self.initial = initial
        self.max_ratio = max_ratio

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> JobRatio:
        path = f"flow.{cls.name}"
        inputs.known(options, ("initial", "max_ratio"), path, "option")
        initial = inputs.positive(options, "initial", path, INITIAL)
        max_ratio = inputs.positive(options, "max_ratio", path, MAX_RATIO)
        if initial > max_ratio:
            raise ConfigError(f"{path}.initial: must be <= max_ratio ({max_ratio:g}), got {options['initial']!r}")
        return cls(initial, max_ratio)

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]:
        ratio = state.get("ratio", self.initial)
        if reading.stalled:
            return Allowance(0, submit=0), {"ratio": ratio, "sent": 0}
        ratio = self.next_ratio(ratio, reading, state.get("sent", 0))
        capacity = reading.free + reading.expected_ends
        submit = math.ceil(round(ratio * capacity, 9)) if capacity > 0 else 0
        queue = within_depth(max(one_pass_starts(reading), submit), reading.depth)
        submit = min(submit, reading.free + queue)
        return Allowance(queue, submit=submit), {"ratio": ratio, "sent": submit}

    def next_ratio(self, ratio: float, reading: Reading, sent: int) -> float:
        floor = 1 / max(1, reading.slots)
        excess = max(0, reading.waiting - one_pass_starts(reading))
        if excess > 0:
            ratio = self.down(ratio, sent, excess, floor)
        elif sent > 0:
            ratio = self.up(ratio, sent, reading.free)
        return min(max(ratio, floor), self.max_ratio)


@register
class SlowStart(JobRatio):
    name = "slow-start"
    up = staticmethod(ratio_double)
    down = staticmethod(ratio_to_floor)


@register
class TwoWayAdaptive(JobRatio):
    name = "two-way-adaptive"
    up = staticmethod(ratio_up_adaptive)
    down = staticmethod(ratio_down_adaptive)


@register
class AdaptiveDownExpUp(JobRatio):
    name = "adaptive-down-exp-up"
    up = staticmethod(ratio_double)
    down = staticmethod(ratio_down_adaptive)
