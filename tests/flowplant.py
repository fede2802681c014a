"""A tiny first-order plant y(k+1) = a.y(k) + b.u(k) + d(k) in closed loop with a flow strategy: the sensor is
y, the strategy's ``Allowance.submit`` is u (whole slots, as the cycle sends them)."""

from cigri.flow import Reading


def reading(**given) -> Reading:
    fields = dict(
        cluster="c",
        now=0.0,
        period=30.0,
        slots=100,
        free=0,
        waiting=0,
        running=100,
        started=0,
        expected_ends=0.0,
        depth=0,
        reference=10.0,
    )
    return Reading(**{**fields, **given})


def closed_loop(strategy, a, b, passes, reference=10.0, disturbance=lambda k: 0.0, slots=100, y=0.0):
    """The sensor and the actuator at each pass: ([y(0), y(1), ...], [u(0), u(1), ...]). The sensor never
    goes below 0 (it counts waiting jobs or a load)."""
    state: dict = {}
    ys, us = [], []
    for k in range(passes):
        allowance, state = strategy.allow(reading(sensor=y, reference=reference, slots=slots), state)
        ys.append(y)
        us.append(allowance.submit)
        y = max(0.0, a * y + b * allowance.submit + disturbance(k))
    return ys, us
