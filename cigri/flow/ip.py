"""``ip``: the model-free "intelligent proportional" controller of the slots sent per pass.

**Origin.** The research on CiGri (CCTA 2022) regulated a file server's load with model-free control: no
identified model, an ultra-local one dy/dt = F + alpha.u whose unknown part F is estimated anew each pass
from the last move of the sensor and the last actuator; published alpha = 0.01, Kp = 0.1, a reference load of
3 (``../shared/anchors/flow.md``).

**Law.** Asking the sensor to close on the reference at rate Kp (dy/dt = Kp.e) with the estimate
F = (y(k) - y(k-1))/h - alpha.u(k-1) gives, with e(k) = reference - sensor and a constant reference,
u(k) = u(k-1) + (e(k) - e(k-1))/(alpha.h) + Kp.e(k)/alpha (:func:`ip_step`), clamped to [0, ceiling]; h is one
pass (Kp counts per pass). The anchor writes the same law with "- (e(k) - e(k-1))/(alpha.h)", which is this one
when e is taken as sensor - reference in the derivative term; here both terms use reference - sensor, so a
sensor above the reference lowers u through both. The first pass takes e(k-1) = e(k) (no derivative kick).

**Anti-windup.** u(k) builds on the clamped u(k-1): after a long saturation u is at the ceiling, not beyond,
and the first error of the other sign brings it down.

**Options.** ``alpha`` (> 0, default 0.01: the sensor's change per pass per slot sent, as the controller
assumes it; 0.01 suits a load that gains about 0.01 per running grid job) and ``kp`` (> 0, default 0.1: the
share of the error closed per pass). ``reference`` (default 3, the published file-server load), ``ceiling``
and ``queue``: see :mod:`cigri.flow.control`. On a
load y(k+1) = 0.9 y(k) + 0.01 u(k), the defaults bring a step of the reference within 5 % from pass 40 on
with under 2 % overshoot (``tests/test_flow_ip.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..scheduling import inputs
from . import State, register
from .control import Controller

ALPHA, KP, REFERENCE = 0.01, 0.1, 3.0


def ip_step(u: float, error: float, previous_error: float, alpha: float, kp: float, ceiling: float) -> float:
    """The actuator after ``u`` for this pass's error, the previous pass's error and h = 1 pass."""
    return min(max(u + (error - previous_error) / alpha + kp * error / alpha, 0.0), ceiling)


@register
class IP(Controller):
    name = "ip"
    default_reference = REFERENCE

    def __init__(
        self,
        alpha: float = ALPHA,
        kp: float = KP,
        ceiling: int | None = None,
        queue: int | None = None,
        reference: float | None = None,
    ):
        super().__init__(ceiling, queue, reference)
        self.alpha = alpha
        self.kp = kp

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> IP:
        path = cls.path()
        common = cls.common_options(options, ("alpha", "kp"))
        return cls(inputs.positive(options, "alpha", path, ALPHA), inputs.positive(options, "kp", path, KP), **common)

    def control(self, error: float, ceiling: float, state: State) -> tuple[float, State]:
        u = ip_step(state.get("u", 0.0), error, state.get("error", error), self.alpha, self.kp, ceiling)
        return u, {"u": u, "error": error}
