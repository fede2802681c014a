"""The simulator's offline reference (cigri/sim/reference.py): hand-checked small schedules, and for any
world a schedule that places every job, never uses a slot the world did not have, and never beats the lower
bound."""

from __future__ import annotations

import math
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from cigri.sim.reference import Capacity, Work, _Holes, makespan, overuse, schedule
from cigri.sim.run import work_bound


def runs(capacities, jobs):
    placements = schedule(capacities, jobs)
    assert placements is not None
    assert overuse(capacities, jobs, placements) == []
    return {p.job: (p.cluster, p.start, p.end) for p in placements}


def test_longest_first_on_the_slot_that_frees_first():
    one = [Capacity("a", ((0.0, 2),))]
    placed = runs(one, [Work(0, 3), Work(0, 2), Work(0, 2), Work(0, 1)])
    assert placed == {0: ("a", 0, 3), 1: ("a", 0, 2), 2: ("a", 2, 4), 3: ("a", 3, 4)}
    assert makespan(one, [Work(0, 3), Work(0, 2), Work(0, 2), Work(0, 1)], start=0) == 4


def test_a_job_goes_where_it_ends_earliest_at_that_clusters_speed():
    clusters = [Capacity("slow", ((0.0, 1),)), Capacity("fast", ((0.0, 1),), speed=2.0)]
    assert runs(clusters, [Work(0, 10)]) == {0: ("fast", 0, 5)}
    placed = runs(clusters, [Work(0, 10), Work(0, 10), Work(0, 10)])
    assert sorted(placed.values()) == [("fast", 0, 5), ("fast", 5, 10), ("slow", 0, 10)]


def test_no_job_runs_across_a_drop_of_capacity():
    """One slot, gone from 5 to 10: a 6-s job waits for its return, a 4-s one runs before the drop."""
    clusters = [Capacity("a", ((0.0, 1), (5.0, 0), (10.0, 1)))]
    assert runs(clusters, [Work(0, 6), Work(0, 4)]) == {0: ("a", 10, 16), 1: ("a", 0, 4)}


def test_a_lane_that_only_some_capacity_reaches():
    """Two slots but the second only from 10 on (local users held it): a 2-core job starts at 10."""
    clusters = [Capacity("a", ((0.0, 1), (10.0, 2)))]
    placed = runs(clusters, [Work(0, 5, cores=2), Work(0, 3)])
    assert placed == {0: ("a", 10, 15), 1: ("a", 0, 3)}


def test_arrival_submission_delay_and_allowed_clusters():
    clusters = [Capacity("near", ((0.0, 4),), delay=10.0), Capacity("far", ((0.0, 4),), delay=100.0)]
    assert runs(clusters, [Work(5, 20)]) == {0: ("near", 15, 35)}
    assert runs(clusters, [Work(5, 20, clusters=frozenset({"far"}))]) == {0: ("far", 105, 125)}


def test_a_job_no_cluster_could_ever_run_has_no_reference():
    clusters = [Capacity("a", ((0.0, 1), (5.0, 0)))]
    assert schedule(clusters, [Work(0, 10)]) is None
    assert schedule([Capacity("a", ((0.0, 2),))], [Work(0, 1, cores=3)]) is None


def test_the_overuse_check_sees_what_a_schedule_must_not_do():
    from cigri.sim.reference import Placement

    clusters = [Capacity("a", ((0.0, 1), (5.0, 0)), delay=1.0)]
    jobs = [Work(0, 3, clusters=frozenset({"b"})), Work(0, 3)]
    bad = [Placement(0, "a", (0,), 0.0, 3.0), Placement(1, "a", (0,), 2.0, 6.0)]
    problems = overuse(clusters, jobs, bad)
    assert any("may not use" in p for p in problems)
    assert any("before 1.0" in p for p in problems)
    assert any("2 slots busy at 2.0" in p for p in problems)
    assert any("busy at 5.0, 0 available" in p for p in problems)


capacity_steps = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), min_size=1, max_size=6)


@st.composite
def worlds(draw):
    capacities = []
    for name in ("a", "b", "c")[: draw(st.integers(1, 3))]:
        steps = sorted({float(t * 10): n for t, n in draw(capacity_steps)}.items())
        steps = [(0.0, max(1, steps[0][1]))] + [s for s in steps if s[0] > 0] + [(600.0, draw(st.integers(2, 4)))]
        capacities.append(
            Capacity(name, tuple(steps), speed=draw(st.sampled_from([0.5, 1.0, 2.0])), delay=draw(st.integers(0, 20)))
        )
    names = [c.name for c in capacities]
    jobs = [
        Work(
            release=float(draw(st.integers(0, 100))),
            duration=float(draw(st.integers(1, 120))),
            cores=draw(st.integers(1, 2)),
            clusters=frozenset(draw(st.lists(st.sampled_from(names), max_size=2))),
        )
        for _ in range(draw(st.integers(1, 25)))
    ]
    return capacities, jobs


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_any_world_is_scheduled_within_its_capacity_and_never_beats_the_bound(world):
    capacities, jobs = world
    placements = schedule(capacities, jobs)
    assert placements is not None, "every cluster is up for good from 600 s on"
    assert sorted(p.job for p in placements) == list(range(len(jobs)))
    assert overuse(capacities, jobs, placements) == []
    end = max(p.end for p in placements)
    work = sum(j.duration * j.cores for j in jobs)
    bound = work_bound([(c.speed, list(c.availability)) for c in capacities], start=0.0, work=work)
    assert end >= bound - 1e-6
    longest = max(j.duration for j in jobs) / max(c.speed for c in capacities)
    assert end >= longest - 1e-6
    assert not math.isinf(end)


def test_a_simulation_reports_its_reference_from_what_its_clusters_had(monkeypatch):
    """The reference is computed on each cluster's record of its capacity (an outage and local users' load
    here): its schedule fits it, and cigri's makespan is reported against it."""
    from cigri.sim.run import simulate
    from cigri.sim.scenario import parse

    seen = []

    def checked(capacities, jobs, start):
        placements = schedule(capacities, jobs)
        seen.append((capacities, overuse(capacities, jobs, placements), len(jobs)))
        return max(p.end for p in placements) - start

    monkeypatch.setattr("cigri.sim.run.reference_makespan", checked)
    data = {
        "name": "r",
        "period": 10,
        "seed": 3,
        "max_time": 20000,
        "clusters": [
            {"name": "a", "slots": 6, "delay": 5, "outages": [[200, 400]]},
            {"name": "b", "slots": 4, "speed": 2.0, "local_load": {"rate": 0.01, "duration": 120, "size": 2}},
        ],
        "campaigns": [
            {
                "name": "c1",
                "user": "u",
                "arrival": 0,
                "jobs": 40,
                "duration": {"dist": "uniform", "min": 20, "max": 150},
            },
            {"name": "c2", "user": "u", "arrival": 60, "jobs": 20, "duration": 30, "clusters": ["a"]},
        ],
    }
    m = simulate(parse(data))
    [(capacities, problems, n)] = seen
    assert problems == [] and n == 60
    a, b = capacities
    assert 0 in [cores for t, cores in a.availability if 200 <= t < 400], "the outage is in a's record"
    assert len(b.availability) > 2, "local users' load is in b's record"
    assert m["reference"] >= max(v for v in m["lower_bounds"].values() if v) - 1e-6
    assert m["makespan_over_reference"] == m["makespan"] / m["reference"]


def test_a_hole_beats_a_lane_that_frees_sooner_elsewhere():
    """b's lane is down from 10 to 20: the 15-s job leaves it [0, 10) as a hole and runs on a. The 8-s job then
    ends at 23 on a's lane and at 28 on b's, but at 8 in b's hole: a search that judged b by its lane alone
    would put it on a."""
    clusters = [Capacity("a", ((0.0, 1),)), Capacity("b", ((0.0, 1), (10.0, 0), (20.0, 1)))]
    assert runs(clusters, [Work(0, 15), Work(0, 8)]) == {0: ("a", 0, 15), 1: ("b", 0, 8)}


def test_a_tie_goes_to_the_first_cluster_even_from_its_hole():
    """a (first) is down from 10 to 30: the 12-s job leaves it [0, 10) as a hole and runs on b. The 4-s job
    released at 6 then ends at 10 in a's hole or on b's second slot: it goes to a, the first cluster, as a
    search of every cluster would, though a's lane alone (free at 30) would lose to b."""
    clusters = [Capacity("a", ((0.0, 1), (10.0, 0), (30.0, 1))), Capacity("b", ((0.0, 2),))]
    assert runs(clusters, [Work(0, 12), Work(6, 4)]) == {0: ("b", 0, 12), 1: ("a", 6, 10)}


def searched_everywhere(clusters, job, choices=None, ranks=None):
    """The unpruned placement: every allowed cluster searched in full, the earliest end, the first on a tie."""
    choices = []
    for cluster in clusters:
        if not job.clusters or cluster.name in job.clusters:
            choices.append((cluster.best(job.release, job.duration, job.cores), cluster))
            cluster.peek = cluster._peek()
    return min(choices, key=lambda choice: choice[0][0], default=((math.inf, 0.0, []), None))


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_the_pruned_search_places_every_job_as_a_search_of_every_cluster(world):
    capacities, jobs = world
    with mock.patch("cigri.sim.reference._where", searched_everywhere):
        unpruned = schedule(capacities, jobs)
    assert schedule(capacities, jobs) == unpruned


@st.composite
def many_clusters(draw):
    """Up to 8 clusters, most of them up for good from the start (the open clusters the search looks at in
    order of their keys), speeds and delays that tie often, and jobs that arrive over time."""
    capacities = []
    for k in range(draw(st.integers(2, 8))):
        if draw(st.booleans()) or k == 0:
            steps = ((0.0, draw(st.integers(1, 3))),)
        else:
            steps = tuple(sorted({float(t * 10): n for t, n in draw(capacity_steps)}.items()))
            steps = ((0.0, max(1, steps[0][1])), *[s for s in steps if s[0] > 0], (600.0, 2))
        capacities.append(
            Capacity(
                f"c{k}",
                steps,
                speed=draw(st.sampled_from([0.5, 1.0, 1.5, 2.0])),
                delay=float(draw(st.sampled_from([0, 0, 5, 10]))),
            )
        )
    names = [c.name for c in capacities]
    jobs = [
        Work(
            release=float(draw(st.integers(0, 200))),
            duration=float(draw(st.integers(1, 60))),
            cores=draw(st.sampled_from([1, 1, 1, 2])),
            clusters=frozenset(draw(st.lists(st.sampled_from(names), max_size=3))),
        )
        for _ in range(draw(st.integers(1, 60)))
    ]
    return capacities, jobs


@settings(max_examples=300, deadline=None)
@given(many_clusters())
def test_the_open_clusters_looked_at_in_order_place_every_job_as_a_search_of_every_cluster(world):
    capacities, jobs = world
    with mock.patch("cigri.sim.reference._where", searched_everywhere):
        unpruned = schedule(capacities, jobs)
    assert schedule(capacities, jobs) == unpruned


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 12)), max_size=60), st.integers(0, 50), st.integers(0, 60))
def test_holes_in_blocks_yield_in_order_every_hole_that_may_hold_a_job(spans, low, reach):
    """With blocks of 2, :meth:`_Holes.after` yields, in order, the holes from ``low`` on, at least all of
    those that end at ``reach`` or later, whatever holes were added and removed before."""
    holes, plain = _Holes(0, 0), []
    with mock.patch.object(_Holes, "BLOCK", 2):
        for n, (at, length) in enumerate(spans):
            hole = (float(at), float(at + length), n)
            if n % 3 == 2 and plain:
                gone = plain.pop(at % len(plain))
                holes.remove(gone)
            else:
                holes.add(hole)
                plain.append(hole)
        plain.sort()
        assert list(holes) == plain
        first = holes.start(low, reach)
        seen = list(holes.after(low, reach, first)) if first < len(holes.blocks) else []
        assert seen == sorted(seen)
        assert set(seen) <= {h for h in plain if h[0] >= low}
        assert set(seen) >= {h for h in plain if h[0] >= low and h[1] >= reach}


def test_in_order_each_campaigns_jobs_start_in_their_order_the_campaigns_by_true_mean():
    """The in-order reference knows what the plain one knows but takes each campaign's jobs in their order (as
    cigri must: it cannot tell them apart), the campaign of the longer true mean first. x has a 10-s job last
    behind four 1-s ones (mean 2.8); y two 3-s jobs (mean 3). Longest first, the 10-s job starts at once;
    in order, y's jobs run first, then x's four short ones two by two, and the 10-s job last."""
    two = [Capacity("a", ((0.0, 2),))]
    x = [Work(0, 1), Work(0, 1), Work(0, 1), Work(0, 1), Work(0, 10)]
    y = [Work(0, 3), Work(0, 3)]
    jobs = x + y
    assert makespan(two, jobs, start=0) == 10
    priority = [2.8] * 5 + [3.0] * 2  # each job's campaign's true mean
    placed = {p.job: (p.start, p.end) for p in schedule(two, jobs, in_order=priority)}
    assert placed == {5: (0, 3), 6: (0, 3), 0: (3, 4), 1: (3, 4), 2: (4, 5), 3: (4, 5), 4: (5, 15)}
    assert makespan(two, jobs, start=0, in_order=priority) == 15
    assert makespan(two, x, start=0, in_order=[2.8] * 5) == 12  # alone: 1+1, 1+1, then the 10-s job


def test_a_simulation_gives_its_in_order_reference_on_what_its_clusters_had():
    """Simulation.in_order_reference: the in-order schedule of the scenario's jobs, each campaign's in their
    order and ranked by its true mean, on each cluster's record of its capacity (an outage here)."""
    from cigri.sim.run import Simulation
    from cigri.sim.scenario import parse

    data = {
        "name": "o",
        "period": 10,
        "seed": 2,
        "max_time": 20000,
        "clusters": [{"name": "a", "slots": 3, "outages": [[100, 160]]}],
        "campaigns": [
            {"name": "c", "user": "u", "arrival": 0, "jobs": 12, "duration": {"dist": "uniform", "min": 5, "max": 90}},
            {"name": "d", "user": "u", "arrival": 0, "jobs": 2, "duration": {"dist": "fixed", "value": 200}},
        ],
    }
    simulation = Simulation(parse(data))
    m = simulation.run()
    [a] = [Capacity("a", tuple(c.usage.availability)) for c in simulation.clusters.values()]
    assert (100.0, 0) in a.availability
    c, d = simulation.scenario.campaigns
    jobs = [Work(0, t) for t in c.durations] + [Work(0, t) for t in d.durations]
    means = [sum(c.durations) / 12] * 12 + [200.0] * 2  # d first: its mean is longer
    expected = makespan([a], jobs, start=0, in_order=means)
    assert simulation.in_order_reference() == expected
    assert expected > m["reference"]  # this draw puts a long job of c late in its order
