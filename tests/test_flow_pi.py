"""``pi``: gains placed from a first-order model, closed loop on a tiny plant, anti-windup, identification."""

import math

import pytest

from cigri.errors import ConfigError
from cigri.flow import Allowance, flow
from cigri.flow.pi import identify, pi_gains, pi_step

from .flowplant import closed_loop, reading


def test_gains_place_the_closed_loop_poles():
    # plant b/(z-a), PI Kp + Ki.z/(z-1): characteristic z^2 + (b(Kp+Ki) - 1 - a) z + (a - b.Kp)
    # a=0.6, b=2, poles 0.5 and 0.4: Kp = (0.6 - 0.2)/2 = 0.2, Ki = (1-0.5)(1-0.4)/2 = 0.15
    kp, ki = pi_gains(0.6, 2.0, (0.5, 0.4))
    assert kp == pytest.approx(0.2)
    assert ki == pytest.approx(0.15)
    # z^2 + (2(0.35) - 1.6) z + (0.6 - 0.4) = z^2 - 0.9 z + 0.2 = (z - 0.5)(z - 0.4)
    assert 2 * (kp + ki) - 1 - 0.6 == pytest.approx(-0.9)
    assert 0.6 - 2 * kp == pytest.approx(0.2)


def test_step_integrates_inside_the_range_and_not_when_saturated():
    # Kp=0.5, Ki=0.25, ceiling 10: e=4 from integral 0 -> integral 4, u = 0.5*4 + 0.25*4 = 3
    assert pi_step(4.0, 0.0, 0.5, 0.25, 10.0) == (3.0, 4.0)
    # integral 40, e=4: 2 + 0.25*44 = 13 > 10 with e > 0: the integral stays 40, u = min(10, 2 + 10) = 10
    assert pi_step(4.0, 40.0, 0.5, 0.25, 10.0) == (10.0, 40.0)
    # integral 40, e=-4: -2 + 0.25*36 = 7 inside: integrates back down
    assert pi_step(-4.0, 40.0, 0.5, 0.25, 10.0) == (7.0, 36.0)
    # integral 0, e=-4: -2 - 1 = -3 < 0 with e < 0: no integration, u = max(0, -2) = 0
    assert pi_step(-4.0, 0.0, 0.5, 0.25, 10.0) == (0.0, 0.0)


def test_reference_step_settles_without_overshoot():
    # default model a=0.6, b=1, settling 10 passes: both poles at e^(-0.4) = 0.67
    ys, _ = closed_loop(flow("pi"), a=0.6, b=1.0, passes=40)
    assert max(ys) <= 10.0 * 1.05  # overshoot within 5 %
    assert all(abs(y - 10.0) <= 0.1 * 10.0 for y in ys[12:])  # within 10 % from pass 12 on
    assert ys[-1] == pytest.approx(10.0, abs=1.0)


def test_disturbance_step_is_rejected():
    # local jobs take the cluster at pass 40: 3 more grid slots wait each pass than the model says
    ys, us = closed_loop(flow("pi"), a=0.6, b=1.0, passes=80, disturbance=lambda k: 3.0 if k >= 40 else 0.0)
    assert all(abs(y - 10.0) <= 1.0 for y in ys[30:41])
    after = ys[41:]
    assert max(after) <= 10.0 + 5.0  # the peak deviation stays under 5 waiting slots
    assert all(abs(y - 10.0) <= 1.0 for y in after[16:])  # back within 1 slot of the reference in 16 passes
    assert us[-1] < us[39]  # it sends less to hold the reference


def test_no_windup_after_a_long_saturation():
    # 100 passes where every job starts at once (the sensor stays at 0, u saturates at the 20-slot ceiling),
    # then the cluster fills: with the integral frozen, u leaves the ceiling as soon as y passes the reference
    strategy = flow("pi", {"ceiling": 20})
    ys, us = closed_loop(strategy, a=0.6, b=1.0, passes=160, disturbance=lambda k: -30.0 if k < 100 else 0.0)
    assert all(u == 20 for u in us[20:100])
    assert max(ys[100:]) <= 35.0  # a wound-up integral holds u at 20 and drives y to 50
    first_above = next(k for k in range(100, 160) if ys[k] > 10.0)
    assert us[first_above + 1] < 20
    assert all(abs(y - 10.0) <= 1.0 for y in ys[125:])


def test_sensor_above_the_reference_sends_less():
    strategy = flow("pi")
    _, state = strategy.allow(reading(sensor=10.0), {})
    low, _ = strategy.allow(reading(sensor=5.0), state)
    high, _ = strategy.allow(reading(sensor=15.0), state)
    assert high.submit < low.submit


def test_unread_sensor_or_stalled_cluster_sends_nothing_and_keeps_the_state():
    strategy = flow("pi")
    _, state = strategy.allow(reading(sensor=0.0), {})
    for unsafe in (reading(sensor=None), reading(sensor=0.0, stalled=True)):
        allowance, after = strategy.allow(unsafe, state)
        assert allowance.submit == 0
        assert after == state
    assert strategy.allow(reading(sensor=0.0, stalled=True), state)[0].queue == 0


def test_queue_is_the_reference_within_the_depth():
    assert flow("pi").allow(reading(sensor=0.0, reference=9.5), {})[0].queue == 10
    assert flow("pi").allow(reading(sensor=0.0, reference=9.5, depth=4), {})[0].queue == 4
    assert flow("pi", {"queue": 25}).allow(reading(sensor=0.0, depth=0), {})[0].queue == 25
    assert flow("pi", {"queue": 25}).allow(reading(sensor=None, depth=6), {})[0] == Allowance(6, submit=0)


def test_the_cluster_reference_else_the_option():
    # at the reference, a first pass sends Kp x 0 + Ki x 0 = 0; below it, something
    assert flow("pi").allow(reading(sensor=10.0, reference=None), {})[0] == Allowance(10, submit=0)
    assert flow("pi", {"reference": 4}).allow(reading(sensor=4.0, reference=None), {})[0] == Allowance(4, submit=0)
    assert flow("pi", {"reference": 4}).allow(reading(sensor=4.0, reference=9.0), {})[0].submit > 0


def test_ceiling_defaults_to_the_cluster_slots():
    allowance, _ = flow("pi").allow(reading(sensor=0.0, reference=1000.0, slots=30), {})
    assert allowance.submit == 30


def test_identify_recovers_a_and_b_from_open_loop_samples():
    a, b = math.exp(-0.5), 0.8
    us = [0, 5, 5, 5, 0, 0, 12, 12, 3, 3, 3, 0]
    ys = [2.0]
    for u in us[:-1]:
        ys.append(a * ys[-1] + b * u)
    assert identify(ys, us) == pytest.approx((a, b))
    with pytest.raises(ConfigError, match=r"^identify: "):
        identify([1.0, 2.0], [0, 0])


@pytest.mark.parametrize(
    "options, key",
    [
        ({"a": "x"}, "a"),
        ({"b": 0}, "b"),
        ({"poles": [1.2]}, "poles"),
        ({"poles": [0.5, 0.5, 0.5]}, "poles"),
        ({"settling": 0}, "settling"),
        ({"poles": [0.5], "settling": 10}, "settling"),
        ({"ceiling": 0}, "ceiling"),
        ({"queue": -1}, "queue"),
        ({"reference": -1}, "reference"),
        ({"gain": 1}, "gain"),
    ],
)
def test_bad_options_name_the_key(options, key):
    with pytest.raises(ConfigError, match=rf"^flow\.pi\.{key}: [^\n]+$"):
        flow("pi", options)
