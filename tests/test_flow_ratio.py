"""The 2009 seed's job-ratio strategies against sequences computed by hand.

Each pass: capacity = free + expected_ends, starts = max(started, ceil(expected_ends)), excess =
max(0, waiting - starts), S = the slots the previous pass allowed; the ratio moves (up only when S > 0 and no
excess, down on excess), then submit = ceil(ratio x capacity) and queue = max(starts, submit), not
above a set queue_depth (which caps submit at free + queue_depth)."""

import pytest

from cigri.errors import ConfigError
from cigri.flow import Allowance, Reading, flow
from cigri.flow.ratio import ratio_down_adaptive, ratio_up_adaptive


def reading(free, ends, waiting, started, stalled=False, depth=0):
    return Reading(
        cluster="c",
        now=0.0,
        period=30.0,
        slots=100,
        free=free,
        waiting=waiting,
        running=100 - free,
        started=started,
        expected_ends=ends,
        depth=depth,
        stalled=stalled,
    )


def run(strategy, readings):
    state: dict = {}
    allowances = []
    for r in readings:
        allowance, state = strategy.allow(r, state)
        allowances.append(allowance)
    return allowances, state


def test_slow_start_doubles_then_drops_to_one_slot():
    allowances, state = run(
        flow("slow-start"),
        [
            # first pass: ratio 1, ceil(1 x (10 + 5)) = 15; queue max(starts 5, 15) = 15
            reading(free=10, ends=5.0, waiting=0, started=0),
            # starts max(12, 5) = 12, excess 0, S=15: ratio 2, ceil(2 x 5) = 10; queue max(12, 10) = 12
            reading(free=0, ends=5.0, waiting=3, started=12),
            # starts 5, excess 9 - 5 = 4: ratio 1/100, ceil(0.01 x 5) = 1; queue max(5, 1) = 5
            reading(free=0, ends=5.0, waiting=9, started=4),
            # starts 6, excess 0, S=1: 0.02, ceil(0.02 x 6) = 1; queue max(6, 1) = 6
            reading(free=2, ends=4.0, waiting=4, started=6),
            # starts 4, excess 0, S=1: 0.04, ceil(0.04 x 4) = 1; queue 4
            reading(free=0, ends=4.0, waiting=0, started=3),
        ],
    )
    assert allowances == [
        Allowance(15, submit=15),
        Allowance(12, submit=10),
        Allowance(5, submit=1),
        Allowance(6, submit=1),
        Allowance(4, submit=1),
    ]
    assert state == {"ratio": pytest.approx(0.04), "sent": 1}


def test_two_way_adaptive_fits_the_ratio_both_ways():
    allowances, state = run(
        flow("two-way-adaptive"),
        [
            reading(free=10, ends=5.0, waiting=0, started=0),  # ratio 1: 15, queue 15
            # starts 12, no excess, up: 1 x (15 + 3)/15 = 1.2; ceil(1.2 x 8) = 10; queue max(12, 10) = 12
            reading(free=3, ends=5.0, waiting=0, started=12),
            # starts 6, excess 10 - 6 = 4: 1.2 x (10 - 4)/10 = 0.72; ceil(0.72 x 6) = ceil(4.32) = 5; queue 6
            reading(free=0, ends=6.0, waiting=10, started=2),
            # excess 13 - 6 = 7 >= S=5: 1/100; ceil(0.06) = 1; queue 6
            reading(free=0, ends=6.0, waiting=13, started=1),
            reading(free=0, ends=6.0, waiting=13, started=0, stalled=True),  # stalled: nothing, S becomes 0
            # starts 8, excess 0 but S=0: 0.01 kept; ceil(0.01 x 4) = 1; queue max(8, 1) = 8
            reading(free=4, ends=0.0, waiting=0, started=8),
        ],
    )
    assert allowances == [
        Allowance(15, submit=15),
        Allowance(12, submit=10),
        Allowance(6, submit=5),
        Allowance(6, submit=1),
        Allowance(0, submit=0),
        Allowance(8, submit=1),
    ]
    assert state == {"ratio": pytest.approx(0.01), "sent": 1}


def test_adaptive_down_exponential_up_within_the_ceilings():
    allowances, _ = run(
        flow("adaptive-down-exp-up", {"max_ratio": 4}),
        [
            reading(free=10, ends=5.0, waiting=0, started=0),  # ratio 1: 15, queue 15
            # starts 12, up: 2; ceil(2 x 8) = 16; queue max(12, 16) = 16
            reading(free=3, ends=5.0, waiting=0, started=12),
            # starts 6, excess 12 - 6 = 6: 2 x (16 - 6)/16 = 1.25; ceil(1.25 x 6) = ceil(7.5) = 8; queue max(6, 8)
            reading(free=0, ends=6.0, waiting=12, started=4),
            # starts 8, excess 0, up: 2.5; ceil(2.5 x 6) = 15; queue 15
            reading(free=0, ends=6.0, waiting=2, started=8),
            # starts max(6, ceil 2.5) = 6, up: 5 over max_ratio 4; ceil(4 x 2.5) = 10; queue 10
            reading(free=0, ends=2.5, waiting=0, started=6),
            # up: 4; ceil(4 x 3.5) = 14; queue max(6, 14) = 14 over depth 6: 6, submit free 1 + 6 = 7
            reading(free=1, ends=2.5, waiting=0, started=6, depth=6),
        ],
    )
    assert allowances == [
        Allowance(15, submit=15),
        Allowance(16, submit=16),
        Allowance(8, submit=8),
        Allowance(15, submit=15),
        Allowance(10, submit=10),
        Allowance(6, submit=7),
    ]


def test_adaptive_formulas():
    # up: the last pass's S slots all got in and `free` slots are still idle: cover them too
    assert ratio_up_adaptive(1.5, sent=10, free=5) == pytest.approx(2.25)  # 1.5 x 15/10
    # down: send what the last pass sent minus its excess
    assert ratio_down_adaptive(1.5, sent=10, excess=4, floor=0.01) == pytest.approx(0.9)  # 1.5 x 6/10
    assert ratio_down_adaptive(1.5, sent=10, excess=10, floor=0.01) == 0.01
    assert ratio_down_adaptive(1.5, sent=0, excess=3, floor=0.01) == 0.01


def test_a_full_cluster_with_nothing_ending_gets_nothing():
    allowance, _ = flow("slow-start").allow(reading(free=0, ends=0.0, waiting=0, started=0), {})
    assert allowance == Allowance(0, submit=0)


@pytest.mark.parametrize("name", ["slow-start", "two-way-adaptive", "adaptive-down-exp-up"])
@pytest.mark.parametrize(
    "options, key",
    [({"initial": 0}, "initial"), ({"max_ratio": "x"}, "max_ratio"), ({"initial": 9}, "initial"), ({"h": 1}, "h")],
)
def test_bad_options_name_the_key(name, options, key):
    with pytest.raises(ConfigError, match=rf"^flow\.{name}\.{key}: [^\n]+$"):
        flow(name, options)
