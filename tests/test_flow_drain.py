"""The drain allowance (issue 21, item 2) against values computed by hand: what the cluster starts in
``passes`` passes, starts = max(started, ceil(expected_ends)), may wait beyond its free slots; at least one
slot, and at least what waits there now; never above a set queue_depth; the depth itself until the cluster's
drain can be told."""

import re

import pytest

from cigri.errors import ConfigError
from cigri.flow import Reading, flow
from cigri.sim.run import simulate
from cigri.sim.scenario import parse

from .test_sim_flow import scenario


def reading(started, ends, *, period=30.0, running=90, waiting=0, depth=0, stalled=False):
    return Reading(
        cluster="c",
        now=0.0,
        period=period,
        slots=100,
        free=100 - running,
        waiting=waiting,
        running=running,
        started=started,
        expected_ends=ends,
        depth=depth,
        stalled=stalled,
    )


def queue(strategy, r) -> int:
    allowance, state = strategy.allow(r, {})
    assert state == {} and allowance.submit is None and not allowance.campaigns
    return allowance.queue


def test_what_the_cluster_starts_in_a_few_passes_may_wait():
    one = flow("drain", {"passes": 1})
    assert queue(one, reading(started=12, ends=5.0)) == 12  # it started more than it was expected to
    assert queue(one, reading(started=3, ends=4.2)) == 5  # expected to free 4.2 slots: 5
    assert queue(one, reading(started=0, ends=0.0, running=0)) == 1  # an idle cluster: one slot beyond
    assert queue(one, reading(started=12, ends=5.0, depth=8)) == 8  # queue_depth is the ceiling
    assert queue(flow("drain", {"passes": 2}), reading(started=3, ends=4.2)) == 10
    assert queue(flow("drain", {"passes": 0.5}), reading(started=3, ends=4.2)) == 3  # ceil(2.5)
    assert queue(flow("drain"), reading(started=3, ends=4.2)) == 15  # 3 passes by default


def test_what_waits_already_stays_allowed_within_the_depth():
    one = flow("drain", {"passes": 1})
    assert queue(one, reading(started=3, ends=4.2, waiting=20)) == 20  # the drain slowed: no kill for it
    assert queue(one, reading(started=3, ends=4.2, waiting=20, depth=16)) == 16  # but never above the depth


def test_nothing_waits_on_a_stalled_cluster_and_the_depth_before_the_drain_is_known():
    drain = flow("drain")
    assert queue(drain, reading(started=12, ends=5.0, depth=16, stalled=True)) == 0
    assert queue(drain, reading(started=0, ends=0.0, period=0.0, depth=16)) == 16  # the first reading
    assert queue(drain, reading(started=2, ends=0.0, depth=16)) == 16  # jobs run, no duration known yet


def test_in_the_simulator_long_jobs_after_short_ones_wait_in_cigri_and_none_is_killed_for_flooding():
    """Short jobs first (the cluster drains 24 slots a pass), then long ones (under one): the queue follows,
    and what waits when the drain slows is let start, not killed. From the simulated cluster's records."""
    data = scenario(
        max_time=40000,
        clusters=[{"name": "a", "slots": 8, "queue_depth": 32}],
        campaigns=[
            {"name": "short", "arrival": 0, "jobs": 300, "duration": 10},
            {"name": "long", "arrival": 0, "jobs": 60, "duration": 600},
        ],
    )
    constant, drain = (simulate(parse(data), flow=name) for name in ("constant", "drain"))
    assert drain["jobs_done"] == constant["jobs_done"] == 360 and drain["makespan"] <= constant["makespan"]
    assert drain["cancelled_queued"] == 0
    queued = {r["flow"]["strategy"]: r["flow"]["clusters"]["a"]["waiting_mean"] for r in (constant, drain)}
    assert queued["drain"] < 0.7 * queued["constant"]  # 19.3 against 29.7 slots


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"passes": 0}, "flow.drain.passes: must be > 0, got 0"),
        ({"passes": -1.5}, "flow.drain.passes: must be > 0, got -1.5"),
        ({"passes": True}, "flow.drain.passes: must be a number, got True"),
        ({"passes": "2"}, "flow.drain.passes: must be a number, got '2'"),
        ({"depth": 3}, "flow.drain.depth: unknown option (valid: passes)"),
    ],
)
def test_bad_options_name_themselves(options, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$"):
        flow("drain", options)
