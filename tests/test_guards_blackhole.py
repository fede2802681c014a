"""Guards of the black-hole rules an audit found unpinned (each fails when its rule is removed or moved), on
clusters under the test's hand (tests.test_blackhole's helpers): a cluster that did not answer gives no
figures; a cluster's normal run clears the short ends of jobs started before it, in the pass that reports it and
in the later ones; a reference exactly at ratio x seconds is enough. scripts/mutations.py holds the mutations
they catch."""

from __future__ import annotations

from cigri.model import JobState, RemoteState

from .test_blackhole import at_once, black_holes, running_everywhere
from .test_placement import FakeRM, Grid


def instant_ends(grid: Grid, hole: FakeRM, t: float, n: int) -> list[int]:
    """hole's running jobs, then those it is sent, end 0.2 s after they start, ``n`` in all, over a few passes
    from t (bounded: once hole is blacklisted it gets no job); the jobs that ended."""
    ended: list[int] = []
    for step in range(n):
        for job_id in hole.holds(RemoteState.PENDING):
            hole.start(job_id, t + step - 1)
        for job_id in hole.holds(RemoteState.RUNNING)[: n - len(ended)]:
            hole.end(job_id, t + step - 0.8, started=t + step - 1)
            ended.append(job_id)
        grid.at(t + step)
        if len(ended) == n:
            return ended
    raise AssertionError(f"hole got too few jobs to end {n}: {len(ended)}")


def test_the_running_jobs_of_a_cluster_that_did_not_answer_are_no_reference():
    """good runs the campaign's jobs since t=0, but does not answer when hole swallows ten: a job of good may
    have ended since, so its run so far says nothing. Once good answers (its jobs still run), hole is judged."""
    grid, hole, good, cid = running_everywhere(40)
    good.down = True
    swallowed = instant_ends(grid, hole, 612, 10)
    assert not black_holes(grid, cid), "good did not answer: no reference yet"
    good.down = False
    grid.at(640)
    assert [e.cluster for e in black_holes(grid, cid)] == ["hole"]
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in swallowed)


def healthy_hole() -> tuple[Grid, FakeRM, int, list[int]]:
    """hole (11 slots) and good (5) ran the campaign's first jobs for 600 s; hole got 11 more (pending)."""
    hole, good = FakeRM("hole", 11, queue_depth=0), FakeRM("good", 5, queue_depth=0)
    grid, cid = Grid.placed(hole, good, jobs=60)
    for cluster in (hole, good):
        for job_id in cluster.holds(RemoteState.PENDING):
            cluster.start(job_id, 0.0)
    for cluster in (hole, good):
        for job_id in cluster.holds(RemoteState.RUNNING):
            cluster.end(job_id, 600, started=0)
    grid.at(600)
    fresh = hole.holds(RemoteState.PENDING)
    assert len(fresh) == 11
    return grid, hole, cid, fresh


def test_short_ends_reported_with_a_normal_run_started_after_them_are_no_suspects():
    """A big cluster's first ten jobs end at once, and one started after them runs 38 s: the pass that sees them
    all finds a cluster that runs jobs normally, not a black hole."""
    grid, hole, cid, fresh = healthy_hole()
    for job_id in fresh[:10]:
        hole.end(job_id, 603, started=601)
    hole.end(fresh[10], 640, started=602)
    grid.at(641)
    assert not black_holes(grid, cid)
    assert all(grid.job(j).state == JobState.TERMINATED for j in fresh)


def test_a_normal_run_clears_the_short_ends_of_jobs_started_before_it_in_later_passes_too():
    """The RM reports the normal run (started at 602) first, and the ten short jobs started before it (at 601)
    one pass later: the cluster was known healthy since 602, so they are no suspects."""
    grid, hole, cid, fresh = healthy_hole()
    hole.end(fresh[10], 640, started=602)
    grid.at(641)
    for job_id in fresh[:10]:
        hole.end(job_id, 603, started=601)
    grid.at(650)
    assert not black_holes(grid, cid)
    assert all(grid.job(j).state == JobState.TERMINATED for j in fresh)


def test_a_normal_run_clears_the_suspects_of_earlier_passes():
    """Nine short ends (suspects), then a job started after them runs normally: the nine are cleared, so nine
    more short ends make a streak of nine, not eighteen."""
    grid, hole, good, cid = running_everywhere(60)
    for job_id in good.holds(RemoteState.RUNNING):
        good.end(job_id, 600, started=0)
    grid.at(600)
    instant_ends(grid, hole, 612, 9)
    (slow,) = hole.holds(RemoteState.RUNNING)[:1]
    hole.end(slow, 700, started=650)
    grid.at(701)
    instant_ends(grid, hole, 712, 9)
    assert not black_holes(grid, cid)


def test_a_reference_exactly_ratio_times_seconds_is_enough():
    """The default thresholds: 10 ends within 5 s, against jobs taking 10 x 5 s = 50 s elsewhere. good's jobs took
    exactly 50 s: hole is a black hole."""
    grid, hole, good, cid = running_everywhere(40)
    for job_id in good.holds(RemoteState.RUNNING):
        good.end(job_id, 50, started=0)
    grid.at(50)
    assert good.holds(RemoteState.RUNNING) == []
    ten = hole.holds(RemoteState.RUNNING)[:5]
    at_once(hole, ten, 55.0)
    grid.at(56)
    ten += hole.holds(RemoteState.PENDING)[:5]
    for job_id in ten[5:]:
        hole.start(job_id, 57)
        hole.end(job_id, 57.2)
    grid.at(60)
    assert [e.cluster for e in black_holes(grid, cid)] == ["hole"]
