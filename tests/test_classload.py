"""classload: Scoot's load-based class scheduler, its exact arithmetic, its ``grid policy`` form and its
strategy over campaigns and clusters."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cigri.cli import grid
from cigri.errors import ConfigError
from cigri.model import CampaignType
from cigri.scheduling import (
    Assignment,
    CampaignView,
    ClusterView,
    Demand,
    GridJob,
    Snapshot,
    Stop,
    decide,
    evaluators,
    metascheduler,
)
from cigri.scheduling.classload import ClassCounts, ClassLoad, Rebalance, allocate, class_order, percent_spread

# ---- the pure core: Scoot's own figures ----------------------------------------------------------------


def counts(table: dict[str, tuple[int, int, int]]) -> dict[str, ClassCounts]:
    return {name: ClassCounts(pct, running, waiting) for name, (pct, running, waiting) in table.items()}


SEED_1 = {
    "c0": (30, 200, 290),
    "c1": (25, 300, 230),
    "c2": (20, 0, 150),
    "c3": (15, 100, 150),
    "c4": (10, 110, 90),
    "c5": (0, 0, 328),
}
SEED_2 = {"c0": (30, 200, 10), "c1": (25, 300, 230), "c2": (20, 0, 0), "c3": (15, 100, 50), "c4": (10, 110, 90)}


def test_seed_example_1_entitlement_in_two_iterations():
    result = allocate(1000, counts(SEED_1))
    assert result.start == {"c0": 94, "c2": 150, "c3": 46}
    assert result.stop == {}


def test_seed_example_2_entitlement_then_loan():
    result = allocate(1000, counts(SEED_2))
    assert result.start == {"c0": 10, "c1": 157, "c3": 50, "c4": 73}
    assert result.stop == {}


# Scoot's larger tables, which its scenarios vary: 8 classes on 10,000 workers, and its staging classes
LARGE = {
    "c0": (30, 1660, 14220),
    "c1": (25, 101, 9401),
    "c2": (16, 420, 16542),
    "c3": (14, 14, 4194),
    "c4": (6, 404, 15944),
    "c5": (4, 42, 11136),
    "c6": (3, 977, 9145),
    "c7": (2, 2612, 16781),
}
STAGING = {
    "land": (48, 0, 0),
    "diff": (25, 0, 0),
    "sandbox": (10, 0, 0),
    "regression": (9, 3111, 22121),
    "ktf": (3, 0, 0),
    "coverage": (2, 0, 0),
    "tryout": (2, 146, 24099),
    "unknown": (1, 0, 0),
}

# Scoot's Test_Class_Task_Start_Cnts scenarios 2 and 4-11: workers, {class: (load %, running, waiting)}, starts
SCOOT_START_SCENARIOS = [
    (1000, {**SEED_2, "c0": (30, 200, 290)}, {"c0": 194, "c1": 26, "c3": 50, "c4": 20}),
    (
        1000,
        {"c0": (30, 0, 300), "c1": (25, 0, 230), "c2": (20, 0, 400), "c3": (15, 0, 650), "c4": (10, 700, 800)},
        {"c0": 105, "c1": 81, "c2": 66, "c3": 48},
    ),
    (
        1000,
        {"c0": (35, 200, 100), "c1": (30, 300, 50), "c2": (20, 0, 200), "c3": (0, 100, 300), "c4": (15, 110, 500)},
        {"c0": 100, "c2": 159, "c4": 31},
    ),
    (  # percentages summing to 80: normalised first
        1000,
        {"c0": (30, 200, 100), "c1": (25, 300, 50), "c2": (15, 0, 200), "c3": (0, 100, 300), "c4": (10, 110, 500)},
        {"c0": 100, "c1": 10, "c2": 172, "c4": 8},
    ),
    (10000, LARGE, {"c0": 830, "c1": 1282, "c2": 641, "c3": 754, "c4": 76, "c5": 187}),
    (3270, STAGING, {"tryout": 13}),
    (4000, STAGING, {"regression": 157, "tryout": 586}),
    (4000, {**STAGING, "tryout": (2, 70, 500)}, {"regression": 319, "tryout": 500}),  # two loan iterations
]


@pytest.mark.parametrize(("workers", "table", "expected"), SCOOT_START_SCENARIOS)
def test_scoot_start_scenarios(workers, table, expected):
    result = allocate(workers, counts(table))
    assert result.start == expected
    assert result.stop == {}
    assert not result.rebalanced


# Scoot's Test_Rebalance (threshold 50 %, minimum 1 minute, exceeded for 2 minutes): starts and stops
SCOOT_REBALANCE = Rebalance(threshold=50, min_duration=60)
LARGE_SKEWED = {
    **LARGE,
    "c0": (30, 166, 14220),
    "c3": (14, 14, 104194),
    "c6": (3, 977, 209145),
    "c7": (2, 2612, 416781),
}
SCOOT_REBALANCE_SCENARIOS = [
    (10, {"c0": (70, 2, 20), "c1": (20, 4, 10), "c2": (10, 4, 30)}, {"c0": 5}, {"c1": 2, "c2": 3}, True),
    (  # the spread is not large enough: the ordinary entitlement and loan pass
        10000,
        {**LARGE, "c3": (14, 14, 104194), "c4": (6, 404, 5944)},
        {"c0": 830, "c1": 1282, "c2": 641, "c3": 754, "c4": 76, "c5": 187},
        {},
        False,
    ),
    (  # rebalance, no worker left to loan
        10000,
        LARGE_SKEWED,
        {"c0": 2834, "c1": 2399, "c2": 1180, "c3": 1386, "c4": 196, "c5": 358},
        {"c6": 677, "c7": 2412},
        True,
    ),
    (  # rebalance, then the left-over workers loaned once (the stopping classes get some back)
        10000,
        {**LARGE_SKEWED, "c4": (6, 404, 0), "c5": (4, 42, 0)},
        {"c0": 3017, "c1": 2549, "c2": 1275, "c3": 1470},
        {"c6": 660, "c7": 2400},
        True,
    ),
]


@pytest.mark.parametrize(("workers", "table", "start", "stop", "rebalanced"), SCOOT_REBALANCE_SCENARIOS)
def test_scoot_rebalance_scenarios(workers, table, start, stop, rebalanced):
    result = allocate(workers, counts(table), SCOOT_REBALANCE, exceeded_for=120)
    assert (result.start, result.stop, result.rebalanced) == (start, stop, rebalanced)


def test_rebalance_waits_for_the_minimum_duration_and_needs_both_settings():
    table = counts({"c0": (70, 2, 20), "c1": (20, 4, 10), "c2": (10, 4, 30)})
    assert percent_spread(10, table) == 80
    for rebalance, exceeded_for in [
        (SCOOT_REBALANCE, 60),  # not longer than the minimum
        (Rebalance(threshold=80, min_duration=60), 120),  # the spread must exceed the threshold
        (Rebalance(threshold=0, min_duration=60), 120),  # off
        (Rebalance(threshold=50, min_duration=0), 120),  # off
    ]:
        result = allocate(10, table, rebalance, exceeded_for=exceeded_for)
        assert (result.stop, result.rebalanced) == ({}, False)


def test_spread_counts_classes_over_target_or_waiting_only():
    # c1 is under target but waits for nothing: it does not widen the spread
    table = counts({"c0": (50, 10, 0), "c1": (50, 0, 0)})
    assert percent_spread(10, table) == 50
    assert percent_spread(10, counts({"c0": (50, 10, 0), "c1": (50, 0, 1)})) == 100


def test_alloc_rounds_in_float32_like_scoot():
    # shares 56/44 of 50 idle: 50 * 0.56 is 28.0000001 in float32 (ceil 28) but 28.000000000000004 in float64
    result = allocate(192, counts({"c0": (34, 70, 138), "c1": (33, 72, 182)}))
    assert result.start == {"c0": 28, "c1": 22}


def test_order_is_by_descending_load_then_name_and_the_first_class_takes_the_rounding():
    assert class_order({"b": 10, "a": 10, "z": 80}) == ["z", "a", "b"]
    # 3 workers, 34/33/33 %: targets 1 + 0 + 0 would leave 2 idle without the first class's remainder
    result = allocate(3, counts({"x": (34, 0, 5), "y": (33, 0, 5), "w": (33, 0, 5)}))
    assert sum(result.start.values()) == 3 and result.start["x"] >= 1


def test_a_zero_percent_class_is_ignored_but_its_running_jobs_hold_workers():
    result = allocate(10, counts({"c0": (100, 0, 50), "idle": (0, 6, 50)}))
    assert result.start == {"c0": 4}


# ---- the pure core: invariants ---------------------------------------------------------------------------


@st.composite
def situations(draw):
    n = draw(st.integers(1, 6))
    names = [f"k{i}" for i in range(n)]
    pcts = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n).filter(lambda p: sum(p) > 0))
    workers = draw(st.integers(0, 2000))
    classes = {
        name: ClassCounts(pct, draw(st.integers(0, workers)), draw(st.integers(0, 3000)))
        for name, pct in zip(names, pcts, strict=True)
    }
    return workers, classes


@given(situations())
def test_never_more_than_idle_workers_nor_waiting_jobs_and_no_stops_without_rebalance(situation):
    workers, classes = situation
    result = allocate(workers, classes)
    idle = max(0, workers - sum(c.running for c in classes.values()))
    assert sum(result.start.values()) <= idle
    assert all(0 < n <= classes[name].waiting for name, n in result.start.items())
    assert result.stop == {}


@given(situations(), st.integers(1, 100))
def test_rebalance_stops_only_over_served_classes_and_never_overfills(situation, threshold):
    workers, classes = situation
    result = allocate(workers, classes, Rebalance(threshold=threshold, min_duration=1), exceeded_for=2)
    assert all(0 < n <= classes[name].waiting for name, n in result.start.items())
    for name, n in result.stop.items():
        assert result.rebalanced and name not in result.start
        assert 0 < n <= classes[name].running - result.targets[name]
    if result.rebalanced:  # every weighted class ends at most at its target, plus loans of what is left
        weighted = [name for name, pct in result.percents.items() if pct > 0]
        after = sum(classes[k].running + result.start.get(k, 0) - result.stop.get(k, 0) for k in weighted)
        assert after <= workers
    else:
        assert sum(result.start.values()) <= max(0, workers - sum(c.running for c in classes.values()))


# ---- grid policy classload ---------------------------------------------------------------------------------


def scenario_json(workers: int, table: dict[str, tuple[int, int, int]], **extra) -> str:
    classes = {name: dict(zip(("load_pct", "running", "waiting"), row, strict=True)) for name, row in table.items()}
    return json.dumps({"workers": workers, "classes": classes, **extra})


def policy(*args: str, stdin: str | None = None):
    return CliRunner().invoke(grid, ["policy", *args], input=stdin, catch_exceptions=False)


def test_policy_classload_reads_a_file_and_prints_the_starts(tmp_path):
    scenario = tmp_path / "seed1.json"
    scenario.write_text(scenario_json(1000, SEED_1))
    result = policy("classload", str(scenario))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"start": {"c0": 94, "c2": 150, "c3": 46}, "stop": {}}


def test_policy_classload_reads_stdin_and_rebalances():
    rebalance = {"threshold": 50, "min_duration_s": 60, "exceeded_for_s": 120}
    scenario = scenario_json(10, SCOOT_REBALANCE_SCENARIOS[0][1], rebalance=rebalance)
    result = policy("classload", "-", stdin=scenario)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"start": {"c0": 5}, "stop": {"c1": 2, "c2": 3}}


def with_class(**fields) -> dict:
    return {"workers": 10, "classes": {"c0": {"load_pct": 100, "running": 0, "waiting": 5, **fields}}}


@pytest.mark.parametrize(
    ("scenario", "fragment"),
    [
        ({"classes": {"c0": {"load_pct": 100, "running": 0, "waiting": 1}}}, "workers: missing"),
        ({"workers": -1, "classes": {}}, "workers: must be >= 0"),
        (with_class(running=-3), "classes.c0.running: must be >= 0"),
        (with_class(load_pct="30%"), "classes.c0.load_pct: must be a whole number"),
        (with_class(load_pct=0), "classes: the load percentages sum to 0"),
        (with_class(waitin=3), "classes.c0.waitin: unknown field"),
        ({"workers": 10, "classes": {}}, "classes: must name at least one class"),
        ({**with_class(), "rebalance": {"threshold": "high"}}, "rebalance.threshold: must be a whole number"),
        ({**with_class(), "rebalance": {"min_duration_s": -1}}, "rebalance.min_duration_s: must be >= 0"),
        ([1, 2], "scenario: must be an object"),
    ],
)
def test_policy_classload_refuses_a_bad_field_in_one_line(scenario, fragment):
    result = policy("classload", "-", stdin=json.dumps(scenario))
    assert (result.exit_code, result.stdout) == (4, "")
    assert result.stderr.count("\n") == 1 and fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "fragment"),
    [
        (["classload", "/nonexistent/s.json"], None, "/nonexistent/s.json: cannot read"),
        (["classload", "-"], '{"workers": 10,', "-: not JSON"),
        (["classload", "-"], '{"workers": NaN}', "-: not JSON: NaN"),
        (["nosuch", "-"], "{}", "unknown policy 'nosuch' (valid: "),
    ],
)
def test_policy_refuses_an_unreadable_scenario_or_an_unknown_policy(args, stdin, fragment):
    result = policy(*args, stdin=stdin)
    assert (result.exit_code, result.stdout) == (4, "")
    assert result.stderr.count("\n") == 1 and fragment in result.stderr, result.stderr


def test_policy_help_documents_each_policy_from_its_evaluator():
    result = policy("--help")
    assert result.exit_code == 0
    assert all(f"\n  {name}\n" in result.stdout for name in evaluators())
    assert '"exceeded_for_s"' in result.stdout and '"stop": {"c1": 2, ...}}' in result.stdout


# ---- the strategy over campaigns and clusters ----------------------------------------------------------------


def campaign(cid: int, user: str, waiting: int = 100, *, on=("a",), klass: str = "", active: int = 0, spj: int = 1):
    return CampaignView(
        id=cid,
        type=CampaignType.DEFAULT,
        user=user,
        submitted_at=float(cid),
        waiting=waiting,
        demands={name: Demand(slots_per_job=spj, limit=10_000) for name in on},
        klass=klass,
        active=active,
    )


def cluster(name: str = "a", free: int = 0, queue: int = 0, jobs: tuple[GridJob, ...] = ()) -> ClusterView:
    return ClusterView(name, free, queue, jobs=jobs)


def job(job_id: int, cid: int, started_at: float | None = 0.0, slots: int = 1, submitted_at: float = 0.0) -> GridJob:
    return GridJob(job_id, cid, slots, submitted_at=submitted_at, started_at=started_at)


SEVENTY_THIRTY = {"classes": {"prod": {"load_pct": 70, "match": "^alice"}, "dev": {"load_pct": 30, "match": "bob"}}}


def launched(decision) -> dict[tuple[str, int], int]:
    return {(a.cluster, a.campaign_id): a.jobs for a in decision.launches}


def test_free_slots_split_by_load_percentages():
    strategy = metascheduler("classload", SEVENTY_THIRTY)
    snapshot = Snapshot(0.0, (cluster(free=10),), (campaign(1, "alice"), campaign(2, "bob")))
    assert launched(strategy.decide(snapshot, {})) == {("a", 1): 7, ("a", 2): 3}


def test_running_and_queued_jobs_count_for_their_class():
    # 10 slots: alice holds 7 (one queued), so bob's class is entitled to the 3 free ones
    jobs = (*(job(i, 1) for i in range(6)), job(6, 1, started_at=None))
    snapshot = Snapshot(0.0, (cluster(free=3, jobs=jobs),), (campaign(1, "alice"), campaign(2, "bob")))
    assert launched(metascheduler("classload", SEVENTY_THIRTY).decide(snapshot, {})) == {("a", 2): 3}


def test_inside_a_class_round_robin_the_campaign_with_fewest_running_first():
    strategy = metascheduler("classload", {"classes": {"all": {"load_pct": 100, "match": ""}}})
    campaigns = (campaign(1, "u", active=3), campaign(2, "u"), campaign(3, "u"))
    assert launched(strategy.decide(Snapshot(0.0, (cluster(free=5),), campaigns), {})) == {("a", 2): 3, ("a", 3): 2}
    assert launched(strategy.decide(Snapshot(0.0, (cluster(free=9),), campaigns), {})) == {
        ("a", 1): 1,
        ("a", 2): 4,
        ("a", 3): 4,
    }


def test_the_jdl_class_key_wins_over_the_user_and_no_match_goes_to_the_smallest_class():
    strategy = metascheduler("classload", SEVENTY_THIRTY)
    assert isinstance(strategy, ClassLoad)
    assert strategy.classify(campaign(1, "alice", klass="bob-batch")) == "dev"
    assert strategy.classify(campaign(2, "alice")) == "prod"
    assert strategy.classify(campaign(3, "carol")) == "dev"
    assert strategy.classify(campaign(4, "xalice")) == "dev"  # the regex is searched: its ^ still anchors


def test_a_zero_percent_class_gets_nothing():
    options = {"classes": {"prod": {"load_pct": 100, "match": "alice"}, "off": {"load_pct": 0, "match": "bob"}}}
    snapshot = Snapshot(0.0, (cluster(free=10, queue=5),), (campaign(1, "bob"), campaign(2, "alice", waiting=3)))
    assert launched(metascheduler("classload", options).decide(snapshot, {})) == {("a", 2): 3}


def test_the_queue_allowance_is_spent_after_free_slots_in_the_same_proportions():
    snapshot = Snapshot(0.0, (cluster(free=0, queue=10),), (campaign(1, "alice"), campaign(2, "bob")))
    assert launched(metascheduler("classload", SEVENTY_THIRTY).decide(snapshot, {})) == {("a", 1): 7, ("a", 2): 3}


def test_jobs_taken_by_an_earlier_cluster_are_not_offered_again():
    clusters = (cluster("a", free=10), cluster("b", free=10))
    campaigns = (campaign(1, "alice", waiting=8, on=("a", "b")), campaign(2, "bob", waiting=2, on=("a", "b")))
    decision = metascheduler("classload", SEVENTY_THIRTY).decide(Snapshot(0.0, clusters, campaigns), {})
    taken = launched(decision)
    assert taken == {("a", 1): 8, ("a", 2): 2}


def test_a_campaign_goes_only_where_it_has_a_demand():
    clusters = (cluster("a", free=4), cluster("b", free=4))
    campaigns = (campaign(1, "alice", on=("b",)), campaign(2, "alice", waiting=2, on=("a",)))
    decision = metascheduler("classload", SEVENTY_THIRTY).decide(Snapshot(0.0, clusters, campaigns), {})
    assert launched(decision) == {("a", 2): 2, ("b", 1): 4}


def test_multi_slot_jobs_are_counted_in_slots():
    snapshot = Snapshot(0.0, (cluster(free=10),), (campaign(1, "alice", spj=2), campaign(2, "bob", spj=3)))
    assert launched(metascheduler("classload", SEVENTY_THIRTY).decide(snapshot, {})) == {("a", 1): 3, ("a", 2): 1}


REBALANCING = {**SEVENTY_THIRTY, "rebalance_threshold": 50, "rebalance_min_duration": 60}


def test_rebalance_after_the_spread_lasted_stops_the_newest_jobs_of_the_over_served_class():
    # bob holds all 10 slots (8 running, 2 queued) while alice waits: spread 70 - (30 - 100) = 140 %
    jobs = (
        *(job(i, 2, started_at=float(i)) for i in range(8)),
        job(8, 2, started_at=None, submitted_at=5.0),
        job(9, 2, started_at=None, submitted_at=9.0),
    )
    campaigns = (campaign(1, "alice"), campaign(2, "bob"))
    strategy = metascheduler("classload", REBALANCING)

    first = strategy.decide(Snapshot(100.0, (cluster(free=0, jobs=jobs),), campaigns), {})
    assert (first.launches, first.stops) == ((), ())
    assert first.state == {"exceeded_since": {"a": 100.0}}

    early = strategy.decide(Snapshot(160.0, (cluster(free=0, jobs=jobs),), campaigns), first.state)
    assert (early.stops, early.state) == ((), first.state)

    late = strategy.decide(Snapshot(161.0, (cluster(free=0, jobs=jobs),), campaigns), first.state)
    assert [s.job_id for s in late.stops] == [9, 8, 7, 6, 5, 4, 3]  # queued ones first, then the newest started
    assert all(isinstance(s, Stop) and s.cluster == "a" and "dev" in s.reason for s in late.stops)
    assert late.launches == (Assignment("a", 1, 7),)
    assert late.state == {}


def test_the_rebalance_timer_restarts_when_the_spread_falls_back():
    campaigns = (campaign(1, "alice"), campaign(2, "bob"))
    jobs = tuple(job(i, 1) for i in range(7)) + tuple(job(i, 2) for i in range(7, 10))  # 70 % and 30 %: no spread
    snapshot = Snapshot(500.0, (cluster(free=0, jobs=jobs),), campaigns)
    decision = metascheduler("classload", REBALANCING).decide(snapshot, {"exceeded_since": {"a": 100.0}})
    assert decision.stops == () and decision.state == {}


def test_test_campaigns_still_go_first_and_no_class_counts_their_jobs():
    test = CampaignView(9, CampaignType.TEST, "carol", 0.0, 1, {"a": Demand(1, 1)})
    on_a = cluster(free=11, jobs=(job(50, 9),))
    snapshot = Snapshot(0.0, (on_a,), (test, campaign(1, "alice"), campaign(2, "bob")))
    decision = decide(metascheduler("classload", SEVENTY_THIRTY), snapshot, {})
    assert launched(decision) == {("a", 9): 1, ("a", 1): 7, ("a", 2): 3}


def test_without_options_one_class_takes_every_campaign():
    snapshot = Snapshot(0.0, (cluster(free=4),), (campaign(1, "alice", active=1), campaign(2, "bob")))
    assert launched(metascheduler("classload").decide(snapshot, {})) == {("a", 2): 2, ("a", 1): 2}


@st.composite
def grids(draw):
    names = ("a", "b", "c")[: draw(st.integers(1, 3))]
    campaigns = tuple(
        campaign(
            cid,
            draw(st.sampled_from(["alice", "bob", "carol"])),
            waiting=draw(st.integers(0, 40)),
            on=tuple(draw(st.sets(st.sampled_from(names), min_size=1))),
            active=draw(st.integers(0, 5)),
            spj=draw(st.integers(1, 3)),
        )
        for cid in range(1, draw(st.integers(1, 6)) + 1)
    )
    ids = iter(range(1000, 2000))
    clusters = tuple(
        cluster(
            name,
            free=draw(st.integers(0, 30)),
            queue=draw(st.integers(0, 10)),
            jobs=tuple(
                job(next(ids), c.id, started_at=draw(st.none() | st.floats(0, 99)), slots=draw(st.integers(1, 3)))
                for c in campaigns
                for _ in range(draw(st.integers(0, 4)))
            ),
        )
        for name in names
    )
    return Snapshot(100.0, clusters, campaigns), draw(st.none() | st.floats(0, 99))


@given(grids())
def test_the_strategy_stays_within_budgets_demands_and_the_jobs_there(grid_and_mark):
    snapshot, mark = grid_and_mark
    state = {} if mark is None else {"exceeded_since": {c.name: mark for c in snapshot.clusters}}
    options = {**SEVENTY_THIRTY, "rebalance_threshold": 10, "rebalance_min_duration": 1}
    decision = metascheduler("classload", options).decide(snapshot, state)
    by_id = {c.id: c for c in snapshot.campaigns}
    jobs = {(c.name, j.job_id): j for c in snapshot.clusters for j in c.jobs}
    assert len(set(decision.stops)) == len(decision.stops)
    assert all((s.cluster, s.job_id) in jobs for s in decision.stops)
    for c in snapshot.clusters:
        freed = sum(jobs[s.cluster, s.job_id].slots for s in decision.stops if s.cluster == c.name)
        used = sum(
            a.jobs * by_id[a.campaign_id].demands[c.name].slots_per_job
            for a in decision.launches
            if a.cluster == c.name
        )
        assert used <= c.free + freed + c.queue
    for cid, view in by_id.items():
        mine = [a for a in decision.launches if a.campaign_id == cid]
        assert all(a.jobs > 0 and a.cluster in view.demands for a in mine)
        assert sum(a.jobs for a in mine) <= view.waiting


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"clases": {}}, "metasched.classload.clases: no such option"),
        ({"classes": {}}, "metasched.classload.classes: must name at least one class"),
        ({"classes": {"a": {"load_pct": "x"}}}, "metasched.classload.classes.a.load_pct: must be a whole number"),
        ({"classes": {"a": {"load_pct": 0}}}, "metasched.classload.classes: the load percentages sum to 0"),
        ({"classes": {"a": {"load_pct": 5, "match": "("}}}, "metasched.classload.classes.a.match: not a regular"),
        ({"classes": {"a": {"load_pct": 5, "regex": "x"}}}, "metasched.classload.classes.a.regex: unknown field"),
        ({"rebalance_threshold": -1}, "metasched.classload.rebalance_threshold: must be >= 0"),
        ({"rebalance_min_duration": "4m"}, "metasched.classload.rebalance_min_duration: must be a number"),
    ],
)
def test_bad_options_are_refused_by_name(options, fragment):
    with pytest.raises(ConfigError, match="^" + re.escape(fragment)):
        metascheduler("classload", options)
