"""What the feedback controllers (``pi``, ``ip``) share: the reference, the actuator and its ceiling, the
queue they let wait, and the safe answer when they cannot read their sensor.

The reference is the cluster's configured one (``Reading.reference``), else the strategy's ``reference``
option (each controller has a default: a cluster without a configured reference is still served).

The actuator ``u`` is the slots cigri sends to the cluster this pass (``Allowance.submit``), clamped to
``[0, ceiling]``; ``ceiling`` defaults to the cluster's slots the grid may use. The queue allowance (nikita's
threshold for taking back waiting excess) is the ``queue`` option, or else the reference rounded up (right
for a grid-waiting-jobs sensor; set ``queue`` with another sensor); never above ``queue_depth`` when that is
set.

A pass without a sensor value, or on a cluster whose queued jobs do not start (``stalled``), sends nothing
and leaves the controller's state as it was: it resumes where it stopped, and an error it cannot act on is
not integrated. A stalled cluster lets nothing wait either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..scheduling import inputs
from . import Allowance, Reading, State, within_depth

CONTROLLER_OPTIONS = ("ceiling", "queue", "reference")


class Controller:
    """A controller of the slots sent per pass; a subclass computes ``u`` in :meth:`control`."""

    name = ""
    default_reference = 0.0

    def __init__(self, ceiling: int | None = None, queue: int | None = None, reference: float | None = None):
        self.ceiling = ceiling
        self.queue = queue
        self.reference = self.default_reference if reference is None else reference

    @classmethod
    def common_options(cls, options: Mapping[str, Any], own: Iterable[str]) -> dict[str, Any]:
        """Refuse an unknown key, read ``ceiling`` (slots > 0), ``queue`` (slots >= 0) and ``reference``
        (>= 0)."""
        path = cls.path()
        inputs.known(options, (*own, *CONTROLLER_OPTIONS), path, "option")
        return {
            "ceiling": inputs.integer(options, "ceiling", path, minimum=1) if "ceiling" in options else None,
            "queue": inputs.integer(options, "queue", path) if "queue" in options else None,
            "reference": inputs.number(options, "reference", path, cls.default_reference),
        }

    @classmethod
    def path(cls) -> str:
        return f"flow.{cls.name}"

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]:
        reference = self.reference if reading.reference is None else reading.reference
        queue = within_depth(self.queue if self.queue is not None else max(0, math.ceil(reference)), reading.depth)
        if reading.stalled:
            return Allowance(0, submit=0), state
        if reading.sensor is None:
            return Allowance(queue, submit=0), state
        ceiling = self.ceiling if self.ceiling is not None else reading.slots
        u, state = self.control(reference - reading.sensor, float(max(0, ceiling)), state)
        return Allowance(queue, submit=round(u)), state

    def control(self, error: float, ceiling: float, state: State) -> tuple[float, State]:
        """The actuator for this pass's error (reference - sensor) and the next state."""
        raise NotImplementedError
