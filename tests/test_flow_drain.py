"""The drain allowance (issue 21, item 2) against values computed by hand: what the cluster starts in
``passes`` passes, starts = max(started, ceil(expected_ends)), may wait beyond its free slots; at least one
slot; never above a set queue_depth; the depth itself until the cluster's drain can be told."""

import pytest

from cigri.errors import ConfigError
from cigri.flow import Allowance, CampaignFlow, Reading, flow


def reading(started, ends, *, period=30.0, running=90, depth=0, stalled=False, sent=0):
    return Reading(
        cluster="c",
        now=0.0,
        period=period,
        slots=100,
        free=100 - running,
        waiting=0,
        running=running,
        started=started,
        expected_ends=ends,
        depth=depth,
        stalled=stalled,
        campaigns=(CampaignFlow(1, waiting=0, running=0, sent=sent, slots=2),),
    )


def queue(strategy, r, state=None) -> int:
    allowance, after = strategy.allow(r, state or {})
    assert after == {"queue": allowance.queue} and allowance.submit is None and not allowance.campaigns
    return allowance.queue


def test_one_pass_of_the_clusters_drain_may_wait():
    drain = flow("drain")
    assert queue(drain, reading(started=12, ends=5.0)) == 12  # it started more than it was expected to
    assert queue(drain, reading(started=3, ends=4.2)) == 5  # expected to free 4.2 slots: 5
    assert queue(drain, reading(started=0, ends=0.0, running=0)) == 1  # an idle cluster: one slot beyond
    assert queue(drain, reading(started=12, ends=5.0, depth=8)) == 8  # queue_depth is the ceiling


def test_passes_scale_the_drain():
    assert queue(flow("drain", {"passes": 2}), reading(started=3, ends=4.2)) == 10
    assert queue(flow("drain", {"passes": 0.5}), reading(started=3, ends=4.2)) == 3  # ceil(2.5)


def test_nothing_waits_on_a_stalled_cluster_and_the_depth_before_the_drain_is_known():
    drain = flow("drain")
    assert queue(drain, reading(started=12, ends=5.0, depth=16, stalled=True)) == 0
    assert queue(drain, reading(started=0, ends=0.0, period=0.0, depth=16)) == 16  # the first reading
    assert queue(drain, reading(started=2, ends=0.0, depth=16)) == 16  # jobs run, no duration known yet


def test_the_allowance_falls_no_faster_than_the_cluster_starts_jobs_nor_below_what_was_just_sent():
    drain = flow("drain")
    assert queue(drain, reading(started=3, ends=4.2), {"queue": 16}) == 11  # 16 - 5 starts: they drain away
    assert queue(drain, reading(started=3, ends=4.2), {"queue": 6}) == 5  # one pass's starts is more
    assert queue(drain, reading(started=3, ends=4.2, sent=4)) == 8  # 4 two-slot jobs sent may wait yet
    assert queue(drain, reading(started=3, ends=4.2, depth=7), {"queue": 16}) == 7  # within queue_depth
    # from queue_depth (no duration known yet) the allowance comes down pass after pass, never at once
    allowances, state = [], {}
    for r in [reading(0, 0.0, depth=16), *[reading(started=3, ends=4.2, depth=16)] * 3]:
        allowance, state = drain.allow(r, state)
        allowances.append(allowance.queue)
    assert allowances == [16, 11, 6, 5]
    assert drain.allow(reading(3, 4.2, stalled=True), {"queue": 16}) == (Allowance(0), {"queue": 0})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"passes": 0}, "flow.drain.passes: expected a number > 0, got 0"),
        ({"passes": True}, "flow.drain.passes: expected a number > 0, got True"),
        ({"passes": "2"}, "flow.drain.passes: expected a number > 0, got '2'"),
        ({"depth": 3}, "flow.drain.depth: drain has no such option"),
    ],
)
def test_bad_options_name_themselves(options, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        flow("drain", options)
