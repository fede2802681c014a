"""``ip``: the model-free intelligent proportional controller, closed loop on a tiny plant."""

import pytest

from cigri.errors import ConfigError
from cigri.flow import flow
from cigri.flow.ip import ip_step

from .flowplant import closed_loop, reading

# a file server's load: each slot sent adds 0.01 to the next pass's load, 90 % of the load stays one more pass
A, B, REFERENCE = 0.9, 0.01, 3.0


def test_step_follows_the_ultra_local_model():
    # u(k) = u(k-1) + (e(k) - e(k-1)) / (alpha.h) + Kp.e(k) / alpha, h = 1 pass, e = reference - sensor
    # 10 + (2 - 1)/0.5 + 0.1*2/0.5 = 10 + 2 + 0.4 = 12.4
    assert ip_step(10.0, 2.0, 1.0, 0.5, 0.1, 100.0) == pytest.approx(12.4)
    # the sensor rose above the reference: 10 + (-1 - 1)/0.5 + 0.1*(-1)/0.5 = 10 - 4 - 0.2 = 5.8
    assert ip_step(10.0, -1.0, 1.0, 0.5, 0.1, 100.0) == pytest.approx(5.8)
    # clamped to [0, ceiling]: 10 + 20 + 2 = 32 -> 30; 10 - 40 - 2 = -32 -> 0
    assert ip_step(10.0, 10.0, 0.0, 0.5, 0.1, 30.0) == 30.0
    assert ip_step(10.0, -10.0, 0.0, 0.5, 0.1, 30.0) == 0.0


def test_sensor_above_the_reference_sends_less():
    strategy = flow("ip")
    _, state = strategy.allow(reading(sensor=3.0, reference=3.0), {"u": 20.0, "error": 0.0})
    assert strategy.allow(reading(sensor=3.5, reference=3.0), state)[0].submit < 20
    assert strategy.allow(reading(sensor=2.5, reference=3.0), state)[0].submit > 20


def test_reference_step_settles_with_the_published_gains():
    ys, _ = closed_loop(flow("ip"), A, B, passes=80, reference=REFERENCE)
    assert max(ys) <= REFERENCE * 1.02  # overshoot within 2 %
    assert all(abs(y - REFERENCE) <= 0.05 * REFERENCE for y in ys[40:])  # within 5 % from pass 40 on


def test_disturbance_step_is_rejected():
    # other users' I/O adds 0.1 to the load each pass from pass 100 (1.0 more at equilibrium without control)
    ys, us = closed_loop(
        flow("ip"), A, B, passes=200, reference=REFERENCE, disturbance=lambda k: 0.1 if k >= 100 else 0.0
    )
    after = ys[101:]
    assert max(after) <= REFERENCE + 0.5
    assert all(abs(y - REFERENCE) <= 0.05 * REFERENCE for y in after[40:])  # back within 5 % in 40 passes
    assert us[-1] < us[99]


def test_no_windup_after_a_long_saturation():
    # 100 passes where the load stays at 0 (u stays at its 50-slot ceiling), then it follows the jobs again
    strategy = flow("ip", {"ceiling": 50})
    ys, us = closed_loop(
        strategy, A, B, passes=200, reference=REFERENCE, disturbance=lambda k: -1.0 if k < 100 else 0.0
    )
    assert all(u == 50 for u in us[30:100])
    first_moved = next(k for k in range(100, 200) if ys[k] > 0)
    assert us[first_moved] < 50  # a wound-up actuator would stay at the ceiling and overshoot
    assert max(ys[100:]) <= REFERENCE * 1.02
    assert all(abs(y - REFERENCE) <= 0.05 * REFERENCE for y in ys[160:])


def test_unread_sensor_or_stalled_cluster_sends_nothing_and_keeps_the_state():
    strategy = flow("ip")
    state = {"u": 20.0, "error": 1.0}
    for unsafe in (reading(sensor=None), reading(sensor=1.0, stalled=True)):
        allowance, after = strategy.allow(unsafe, state)
        assert allowance.submit == 0
        assert after == state


@pytest.mark.parametrize(
    "options, key",
    [
        ({"alpha": 0}, "alpha"),
        ({"kp": "x"}, "kp"),
        ({"ceiling": 1.5}, "ceiling"),
        ({"reference": "high"}, "reference"),
        ({"h": 1}, "h"),
    ],
)
def test_bad_options_name_the_key(options, key):
    with pytest.raises(ConfigError, match=rf"^flow\.ip\.{key}: [^\n]+$"):
        flow("ip", options)
