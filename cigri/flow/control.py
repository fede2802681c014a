"""What the feedback controllers (``pi``, ``ip``) share: the actuator, its ceiling, the queue they let wait,
and the safe answer when they cannot read their sensor.

The actuator ``u`` is the slots cigri sends to the cluster this pass (``Allowance.submit``), clamped to
``[0, ceiling]``; ``ceiling`` defaults to the cluster's slots the grid may use. The queue allowance (nikita's
threshold for taking back waiting excess) is the ``queue`` option, or else the sensor's reference rounded
up (right for a grid-waiting-jobs sensor; set ``queue`` with another sensor), or else the cluster's
``queue_depth``; never above ``queue_depth`` when that is set.

A pass without a sensor value or a reference, or on a cluster whose queued jobs do not start (``stalled``),
sends nothing and leaves the controller's state as it was: it resumes where it stopped, and an error it
cannot act on is not integrated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..scheduling import inputs
from . import Allowance, Reading, State, within_depth

CONTROLLER_OPTIONS = ("ceiling", "queue")


class Controller:
    """A controller of the slots sent per pass; a subclass computes ``u`` in :meth:`control`."""

    name = ""

    def __init__(self, ceiling: int | None = None, queue: int | None = None):
        self.ceiling = ceiling
        self.queue = queue

    @classmethod
    def common_options(cls, options: Mapping[str, Any], own: Iterable[str]) -> dict[str, int | None]:
        """Refuse an unknown key, read ``ceiling`` (slots > 0) and ``queue`` (slots >= 0)."""
        path = cls.path()
        inputs.known(options, (*own, *CONTROLLER_OPTIONS), path, "option")
        return {
            "ceiling": inputs.integer(options, "ceiling", path, minimum=1) if "ceiling" in options else None,
            "queue": inputs.integer(options, "queue", path) if "queue" in options else None,
        }

    @classmethod
    def path(cls) -> str:
        return f"flow.{cls.name}"

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]:
        queue = self.queue_allowance(reading)
        if reading.sensor is None or reading.reference is None or reading.stalled:
            return Allowance(0 if reading.stalled else queue, submit=0), state
        ceiling = self.ceiling if self.ceiling is not None else reading.slots
        u, state = self.control(reading.reference - reading.sensor, float(max(0, ceiling)), state)
        return Allowance(queue, submit=round(u)), state

    def queue_allowance(self, reading: Reading) -> int:
        if self.queue is not None:
            wanted = self.queue
        elif reading.reference is not None:
            wanted = max(0, math.ceil(reading.reference))
        else:
            wanted = reading.depth
        return within_depth(wanted, reading.depth)

    def control(self, error: float, ceiling: float, state: State) -> tuple[float, State]:
        """The actuator for this pass's error (reference - sensor) and the next state."""
        raise NotImplementedError
