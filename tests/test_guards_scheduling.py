"""Guards of the scheduling rules an audit found unpinned (each fails when its rule is removed or moved): SRPT's
cutoff between short and long campaigns, and the cursors' move rule (never out of a range a cluster alone
serves, and only under half of the largest's time left). scripts/mutations.py holds the mutations they catch."""

from __future__ import annotations

from cigri.model import CampaignType
from cigri.scheduling import CampaignView, ClusterView, Demand, Snapshot, evaluator, metascheduler

cursors = evaluator("cursors")


# ---- SRPT: long iff the estimate is above the cutoff ---------------------------------------------------------


def srpt_launches(estimate: float, **options) -> int:
    """The jobs SRPT sends to an empty cluster of 10 slots for one campaign of that estimate (learned from
    ended jobs). A long campaign stays out of the short share (10% by default): it gets 9, a short one 10."""
    campaign = CampaignView(
        id=1,
        type=CampaignType.DEFAULT,
        user="u",
        submitted_at=0.0,
        waiting=50,
        demands={"c0": Demand(1, 10**6)},
        estimate=estimate,
        confidence=5,
    )
    decision = metascheduler("srpt", options).decide(
        Snapshot(1000.0, (ClusterView("c0", 10, 0, slots=10),), (campaign,)), {}
    )
    return sum(a.jobs for a in decision.launches)


def test_a_campaign_whose_estimate_is_exactly_the_cutoff_is_short():
    assert srpt_launches(600.0) == 10, "at the cutoff: short, every free slot"
    assert srpt_launches(600.5) == 9, "above it: long, the short share kept"
    assert srpt_launches(60.0, cutoff=60) == 10
    assert srpt_launches(60.001, cutoff=60) == 9


# ---- cursors: when a cluster moves ---------------------------------------------------------------------------


def jobs(first: int, last: int) -> list[dict]:
    return [{"id": i} for i in range(first, last + 1)]


def test_a_cluster_never_leaves_a_range_it_alone_serves_while_jobs_wait_there():
    """Z serves jobs 1-10 but has no speed yet (none of its jobs has ended): their time left is infinite. A's
    range has 2 jobs left (2 s at its speed), far under half of that, but A alone serves it: A finishes its range
    (were it to leave, it would join Z and its jobs 13 and 14 would wait for a cluster to come)."""
    result = cursors(
        {
            "jobs": jobs(1, 10) + jobs(13, 14) + jobs(15, 100),
            "clusters": {"Z": {"speed": 0}, "A": {"wants": 1, "speed": 1}, "B": {"speed": 1}},
            "cursors": [
                {"first": 1, "last": 10, "team": ["Z"]},
                {"first": 11, "last": 14, "team": ["A"]},
                {"first": 15, "last": 100, "team": ["B"]},
            ],
        }
    )
    assert result["picks"] == {"Z": [], "A": [13], "B": []}
    assert [c["team"] for c in result["cursors"]] == [["Z"], ["A"], ["B"]]


def test_a_cluster_whose_team_has_a_third_of_the_largest_time_left_moves():
    """A and C share a range of 50 jobs (25 s at 2 jobs/s), B alone has 70 (70 s): 25 is under half of 70 (but
    above a quarter), so A moves onto the upper part of B's range, by its share of speed (half of 70)."""
    result = cursors(
        {
            "jobs": jobs(1, 50) + jobs(51, 120),
            "clusters": {"A": {"wants": 1, "speed": 1}, "B": {"speed": 1}, "C": {"speed": 1}},
            "cursors": [{"first": 1, "last": 50, "team": ["A", "C"]}, {"first": 51, "last": 120, "team": ["B"]}],
        }
    )
    assert result["picks"]["A"] == [86]
    assert result["cursors"] == [
        {"first": 1, "last": 50, "team": ["C"]},
        {"first": 51, "last": 85, "team": ["B"]},
        {"first": 86, "last": 120, "team": ["A"]},
    ]


def test_a_team_with_exactly_half_the_largest_time_left_stays():
    """35 s left against 70 s: not under half, no move."""
    result = cursors(
        {
            "jobs": jobs(1, 70) + jobs(71, 140),
            "clusters": {"A": {"wants": 1, "speed": 1}, "B": {"speed": 1}, "C": {"speed": 1}},
            "cursors": [{"first": 1, "last": 70, "team": ["A", "C"]}, {"first": 71, "last": 140, "team": ["B"]}],
        }
    )
    assert result["picks"]["A"] == [1]
    assert [c["team"] for c in result["cursors"]] == [["A", "C"], ["B"]]
