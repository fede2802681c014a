"""``pi``: a proportional-integral controller of the slots sent per pass, with anti-windup, its gains placed
from an identified first-order model.

**Origin.** The research on CiGri (CCTA 2019, then 2020 on the OAR waiting queue: reference 10 waiting jobs,
30 s cycles) regulated the jobs submitted per cycle with a PI controller: a first-order model
y(k+1) = a.y(k) + b.u(k) identified from open-loop steps (a = e^-0.5 in one experiment), gains placed from
the wanted closed-loop poles, anti-windup on the integral (``../shared/anchors/flow.md``).

**Law.** With the error e(k) = reference - sensor and the integral I(k) = I(k-1) + e(k),
u(k) = Kp.e(k) + Ki.I(k), clamped to [0, ceiling] (:func:`pi_step`). The plant b/(z - a) in a loop with
Kp + Ki.z/(z - 1) has the characteristic polynomial z^2 + (b(Kp + Ki) - 1 - a).z + (a - b.Kp); matching it
to (z - p1)(z - p2) gives Kp = (a - p1.p2)/b and Ki = (1 - p1)(1 - p2)/b (:func:`pi_gains`).

**Anti-windup.** Conditional integration: when the output would pass the ceiling while the error still
pushes it up (or fall below 0 while the error pushes it down), the integral does not take this pass's
error. After a long saturation (a cluster that starts every job at once keeps the waiting jobs at 0 and u at
its ceiling) the integral is what holds u at the ceiling, not the sum of every error since: u leaves the
ceiling as soon as the sensor passes the reference.

**Options.** ``a`` (default 0.6, about e^-0.5: the share of the waiting slots still waiting one pass later)
and ``b`` (default 1: a slot sent to a full cluster waits) describe the plant; ``poles`` (one or two real
poles in [0, 1); one means a double pole) or ``settling`` (passes, default 10: both poles at e^(-4/settling),
each mode down to 2 % in ``settling`` passes) the wanted closed loop; only one of the two. On the model
itself, the defaults bring a step of the reference within 10 % from pass 12 on with under 5 % overshoot, and
a step of 3 waiting slots per pass in the disturbance back within one slot in 16 passes
(``tests/test_flow_pi.py``).
``reference`` (default 10 waiting slots, the published one), ``ceiling`` and ``queue``: see
:mod:`cigri.flow.control`. :func:`identify` gives a and b from open-loop
samples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..scheduling import inputs
from . import State, register
from .control import Controller

A, B, SETTLING, REFERENCE = 0.6, 1.0, 10.0, 10.0


def pi_gains(a: float, b: float, poles: tuple[float, float]) -> tuple[float, float]:
    """(Kp, Ki) placing the closed-loop poles of the PI loop around y(k+1) = a.y(k) + b.u(k) at ``poles``."""
    p1, p2 = poles
    return (a - p1 * p2) / b, (1 - p1) * (1 - p2) / b


def pi_step(error: float, integral: float, kp: float, ki: float, ceiling: float) -> tuple[float, float]:
    """(u, the next integral) for this pass's error, integrating only when that does not push u further
    into saturation."""
    integrated = integral + error
    unclamped = kp * error + ki * integrated
    if (unclamped > ceiling and error > 0) or (unclamped < 0 and error < 0):
        integrated = integral
    return min(max(kp * error + ki * integrated, 0.0), ceiling), integrated


def identify(ys: Sequence[float], us: Sequence[float]) -> tuple[float, float]:
    """(a, b) of y(k+1) = a.y(k) + b.u(k) fitting the open-loop samples ``ys``/``us`` (the sensor and the
    actuator at each pass) by least squares."""
    if len(ys) != len(us) or len(ys) < 3:
        raise ConfigError(f"identify: needs as many sensor as actuator samples, at least 3 (got {len(ys)}, {len(us)})")
    x, u, y = ys[:-1], us[:-1], ys[1:]
    sxx = sum(v * v for v in x)
    suu = sum(v * v for v in u)
    sxu = sum(p * q for p, q in zip(x, u, strict=True))
    sxy = sum(p * q for p, q in zip(x, y, strict=True))
    suy = sum(p * q for p, q in zip(u, y, strict=True))
    determinant = sxx * suu - sxu * sxu
    if abs(determinant) <= 1e-12 * max(1.0, sxx * suu):
        raise ConfigError("identify: the samples cannot tell a from b (vary the actuator during the experiment)")
    return (sxy * suu - suy * sxu) / determinant, (suy * sxx - sxy * sxu) / determinant


@register
class PI(Controller):
    name = "pi"
    default_reference = REFERENCE

    def __init__(
        self,
        a: float = A,
        b: float = B,
        poles: tuple[float, float] | None = None,
        ceiling: int | None = None,
        queue: int | None = None,
        reference: float | None = None,
    ):
        super().__init__(ceiling, queue, reference)
        if poles is None:
            poles = (math.exp(-4 / SETTLING),) * 2
        self.kp, self.ki = pi_gains(a, b, poles)

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> PI:
        path = cls.path()
        common = cls.common_options(options, ("a", "b", "poles", "settling"))
        b = inputs.number(options, "b", path, B, minimum=None)
        if b <= 0:
            raise ConfigError(f"{path}.b: must be > 0 (a slot sent raises the sensor), got {options['b']!r}")
        return cls(inputs.number(options, "a", path, A), b, _poles(options, path), **common)

    def control(self, error: float, ceiling: float, state: State) -> tuple[float, State]:
        u, integral = pi_step(error, state.get("integral", 0.0), self.kp, self.ki, ceiling)
        return u, {"integral": integral}


def _poles(options: Mapping[str, Any], path: str) -> tuple[float, float]:
    if "poles" in options:
        if "settling" in options:
            raise ConfigError(f"{path}.settling: give either poles or settling, not both")
        poles = inputs.sequence(options, "poles", path)
        if not 1 <= len(poles) <= 2 or any(
            isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p < 1 for p in poles
        ):
            raise ConfigError(f"{path}.poles: expected one or two numbers in [0, 1), got {poles!r}")
        return (float(poles[0]), float(poles[-1]))
    settling = inputs.positive(options, "settling", path, SETTLING)
    return (math.exp(-4 / settling),) * 2
