"""``taps``: CiGri v3's per campaign x cluster taps against a sequence computed by hand."""

import json

import pytest

from cigri.errors import ConfigError
from cigri.flow import Allowance, CampaignFlow, Reading, flow
from cigri.flow.taps import tap_increase, tap_reopen


def reading(now, *campaigns, stalled=False, depth=0):
    return Reading(
        cluster="c",
        now=now,
        period=30.0,
        slots=100,
        free=10,
        waiting=sum(c.waiting * c.slots for c in campaigns),
        running=0,
        started=0,
        expected_ends=0.0,
        depth=depth,
        stalled=stalled,
        campaigns=campaigns,
    )


def test_rates_grow_by_half_close_on_waiting_jobs_and_reopen_lower():
    strategy = flow("taps")
    passes = [
        # (reading, campaign 7's cap, campaign 8's cap, queue)
        (reading(0, CampaignFlow(7, 0, 0, 0)), 3, None, 3),  # new tap: 3 jobs
        (reading(30, CampaignFlow(7, 0, 3, 3)), 4, None, 4),  # 3 sent, none waits: int(3 x 1.5) = 4
        (reading(60, CampaignFlow(7, 0, 7, 4)), 6, None, 6),  # int(4 x 1.5) = 6
        # 2 of its jobs wait: closed at t=90 (rate kept: 6); campaign 8 arrives with 2-slot jobs: 3 jobs, 6 slots
        (reading(90, CampaignFlow(7, 2, 11, 6), CampaignFlow(8, 0, 0, 0, slots=2)), 0, 3, 12),
        # nothing waits: reopened after 30 s, within the 60 s grace: rate kept; 8: int(3 x 1.5) = 4 jobs, 8 slots
        (reading(120, CampaignFlow(7, 0, 13, 0), CampaignFlow(8, 0, 3, 3, slots=2)), 6, 4, 14),
        (reading(150, CampaignFlow(7, 1, 18, 6), CampaignFlow(8, 0, 7, 4, slots=2)), 0, 6, 18),  # 7 closed at 150
        (reading(180, CampaignFlow(7, 1, 18, 0), CampaignFlow(8, 0, 7, 0, slots=2)), 0, 6, 18),  # nothing sent
        # reopened after 60 s: int(6 / 1.5) = 4; 8 has left the cluster's campaigns: its tap is dropped
        (reading(210, CampaignFlow(7, 0, 19, 0)), 4, None, 4),
        (reading(240, CampaignFlow(7, 0, 21, 2)), 4, None, 4),  # only 2 jobs sent: 4 < 2 x 1.5 + 1 is false
    ]
    state: dict = {}
    for index, (r, cap7, cap8, queue) in enumerate(passes):
        allowance, state = strategy.allow(r, state)
        caps = {7: cap7} if cap8 is None else {7: cap7, 8: cap8}
        assert allowance == Allowance(queue, campaigns=caps), f"pass {index}"
        assert json.loads(json.dumps(state)) == state
    assert set(state["taps"]) == {"7"}


def test_a_stressed_cluster_gets_nothing_and_keeps_its_taps():
    strategy = flow("taps")
    _, state = strategy.allow(reading(0, CampaignFlow(7, 0, 0, 0)), {})
    allowance, after = strategy.allow(reading(30, CampaignFlow(7, 0, 3, 3), stalled=True), state)
    assert allowance == Allowance(0, campaigns={7: 0})
    assert after == state


def test_queue_within_the_depth():
    allowance, _ = flow("taps", {"initial": 10}).allow(reading(0, CampaignFlow(7, 0, 0, 0), depth=4), {})
    assert allowance == Allowance(4, campaigns={7: 10})


def test_rate_formulas():
    assert tap_increase(68, 1.5, 100) == 100  # int(102) capped
    assert tap_increase(7, 1.5, 100) == 10  # int(10.5)
    assert tap_reopen(10, 1.5, 3) == 6  # int(6.67)
    assert tap_reopen(4, 1.5, 3) == 3  # int(2.67), not below the initial rate


@pytest.mark.parametrize(
    "options, key",
    [
        ({"initial": 0}, "initial"),
        ({"factor": 1}, "factor"),
        ({"max": 2}, "max"),
        ({"grace": -1}, "grace"),
        ({"rate": 3}, "rate"),
    ],
)
def test_bad_options_name_the_key(options, key):
    with pytest.raises(ConfigError, match=rf"^flow\.taps\.{key}: [^\n]+$"):
        flow("taps", options)
