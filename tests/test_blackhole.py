"""Black holes (the seed's "sink effect"): a cluster where a campaign's jobs end at once while they take minutes
elsewhere is blacklisted for that campaign, and the jobs it swallowed run again elsewhere. On clusters under
the test's hand (tests.test_placement's fake resource manager on a simulated clock)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from cigri import campaigns as ops
from cigri import config
from cigri.cycle import Cycle
from cigri.errors import ConfigError
from cigri.jdl import parse
from cigri.model import EventClass, EventCode, JobState, RemoteState
from cigri.store import Store

from .conftest import runs, write_jdl
from .test_placement import PATIENCE, FakeRM, Grid


def black_holes(grid: Grid, campaign_id: int):
    return [e for e in grid.store.events(campaign_id=campaign_id) if e.code == EventCode.BLACK_HOLE]


def running_everywhere(jobs: int = 20, slots: int = 5) -> tuple[Grid, FakeRM, FakeRM, int]:
    """A campaign of ``jobs`` jobs placed on two clusters, ``hole`` of ``slots`` slots and ``good`` of 5, every
    job running from t=0."""
    hole, good = FakeRM("hole", slots, queue_depth=0), FakeRM("good", 5, queue_depth=0)
    grid, cid = Grid.placed(hole, good, jobs=jobs)
    for cluster in (hole, good):
        for job_id in cluster.holds(RemoteState.PENDING):
            cluster.start(job_id, 0.0)
    grid.at(1)
    return grid, hole, good, cid


def swallow(grid: Grid, hole: FakeRM, t: float, n: int, *, exit_code: int = 0) -> list[int]:
    """The hole ends ``n`` of its jobs 0.2 s after they start, just before t (new ones start as it frees
    slots: the pass at t sends them)."""
    ended = []
    while len(ended) < n:
        pending = hole.holds(RemoteState.PENDING)
        for job_id in pending:
            hole.start(job_id, t - 1)
        running = hole.holds(RemoteState.RUNNING)
        for job_id in running[: n - len(ended)]:
            hole.end(job_id, t - 0.8, exit_code=exit_code, started=t - 1)
            ended.append(job_id)
        grid.at(t)
        t += 0.01
    return ended


def at_once(cluster: FakeRM, job_ids: list[int], t: float) -> None:
    """These jobs of the cluster start at t and end 0.2 s later."""
    for job_id in job_ids:
        cluster.end(job_id, t + 0.2, started=t)


def ten_minute_ends(grid: Grid, good: FakeRM, t: float, n: int) -> None:
    """``n`` of good's running jobs end at t, having run since t - 600."""
    for job_id in good.holds(RemoteState.RUNNING)[:n]:
        good.end(job_id, t, started=t - 600)


def busy_hole(slots: int) -> tuple[Grid, FakeRM, int, list[int]]:
    """A cluster ``hole`` of ``slots`` slots and ``good`` of 5: every job ran 600 s on both, ``good`` ended 5,
    then the hole started ``slots`` fresh jobs at 601 (returned), all still running."""
    hole, good = FakeRM("hole", slots, queue_depth=0), FakeRM("good", 5, queue_depth=0)
    grid, cid = Grid.placed(hole, good, jobs=slots + 60)
    for cluster in (hole, good):
        for job_id in cluster.holds(RemoteState.PENDING):
            cluster.start(job_id, 0.0)
    ten_minute_ends(grid, good, 600, 5)
    for job_id in hole.holds(RemoteState.RUNNING):
        hole.end(job_id, 600, started=0)
    grid.at(600)
    fresh = hole.holds(RemoteState.PENDING)
    assert len(fresh) == slots
    for job_id in fresh:
        hole.start(job_id, 601)
    return grid, hole, cid, fresh


def test_ten_instant_ends_in_a_row_blacklist_the_cluster_in_the_pass_of_the_tenth():
    grid, hole, good, cid = running_everywhere(40)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    # the hole's five jobs end at once, then five more: nine so far, no verdict yet
    first = [j for j in hole.holds(RemoteState.RUNNING)]
    at_once(hole, first, 610.0)
    grid.at(611)
    second = hole.holds(RemoteState.PENDING)
    at_once(hole, second[:4], 620.0)
    grid.at(621)
    assert not black_holes(grid, cid)
    at_once(hole, second[4:5], 630.0)
    grid.at(631)  # the tenth
    (event,) = black_holes(grid, cid)
    assert (event.cls, event.cluster, event.created_at) == (EventClass.CAMPAIGN, "hole", 631)
    assert "10 jobs in a row" in event.message and "600 s" in event.message
    assert "hole" in grid.store.blocked_clusters(cid)
    swallowed = [grid.job(j) for j in first + second[:5]]
    assert all(j.state == JobState.TO_LAUNCH and j.resubmits == 0 for j in swallowed)
    stats = grid.store.stats(cid)
    assert stats["duration_n"] == 5, "the swallowed ends are not durations"
    assert stats["duration_sum"] == pytest.approx(3000.0)


def test_the_swallowed_jobs_run_elsewhere_and_nothing_more_goes_to_the_hole():
    grid, hole, good, cid = running_everywhere(40)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    swallow(grid, hole, 612, 10)
    sent = len(hole.owner)
    for t in range(1200, 12000, 600):
        for job_id in hole.holds(RemoteState.PENDING):  # what was queued there ends at once too
            hole.end(job_id, t - 0.5, started=t - 0.6)
        for job_id in good.holds(RemoteState.PENDING):
            good.start(job_id, t - 600)
        ten_minute_ends(grid, good, t, 5)
        grid.at(t)
    assert len(hole.owner) == sent
    assert grid.states(cid) == {JobState.TERMINATED: 40}
    assert all(grid.job(j).cluster == "good" for j in range(1, 41))


def test_failed_instant_ends_count_too_and_their_job_events_and_blacklist_are_closed():
    """The first failure blacklists the hole (a job's error), so the ten failures are ten jobs already there:
    once they are found to be a black hole's, their job events and the blacklist they opened are closed."""
    hole, good = FakeRM("hole", 10, queue_depth=0), FakeRM("good", 5, queue_depth=0)
    grid, cid = Grid.placed(hole, good, jobs=40)
    for cluster in (hole, good):
        for job_id in cluster.holds(RemoteState.PENDING):
            cluster.start(job_id, 0.0)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    swallowed = hole.holds(RemoteState.RUNNING)
    assert len(swallowed) == 10
    for job_id in swallowed:
        hole.end(job_id, 611.2, exit_code=127, started=611.0)
    grid.at(612)
    assert [e.code for e in grid.store.events(campaign_id=cid)] == [EventCode.BLACK_HOLE]
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in swallowed)
    assert grid.store.failed_waiting(cid) == {}, "the swallowed jobs are not failures"


def test_a_normal_end_there_breaks_the_streak():
    grid, hole, good, cid = running_everywhere(60)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    swallow(grid, hole, 612, 9)
    (slow,) = hole.holds(RemoteState.RUNNING)[:1]
    hole.end(slow, 700, started=650)  # started after the streak began: the cluster runs jobs again
    grid.at(701)
    swallow(grid, hole, 712, 9)
    assert not black_holes(grid, cid)


def test_a_normal_run_seen_in_an_earlier_pass_still_clears_the_short_ends_of_jobs_started_before_it():
    """The cluster's latest normal run is kept across passes: short ends reported later, of jobs started
    before that run, are no suspects (the cluster ran a job normally after they started)."""
    grid, hole, good, cid = running_everywhere(60, slots=12)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    first, *others = hole.holds(RemoteState.RUNNING)
    hole.end(first, 700, started=650)  # a normal run, seen at the pass of 701
    grid.at(701)
    at_once(hole, others[:10], 640)  # short ends of jobs started before it, reported at the next pass
    grid.at(760)
    assert len(others) >= 10
    assert not black_holes(grid, cid)
    assert all(grid.job(j).state == JobState.TERMINATED for j in others[:10])


def test_a_normal_end_of_a_job_started_before_the_streak_does_not_break_it():
    """A cluster turns into a black hole while jobs it started earlier still run: their normal ends say nothing
    of the cluster since, so they do not save the streak's suspects from running again."""
    grid, hole, good, cid = running_everywhere(60)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    first = swallow(grid, hole, 612, 9)
    (slow,) = hole.holds(RemoteState.RUNNING)[:1]
    hole.end(slow, 700, started=100)
    grid.at(701)
    swallow(grid, hole, 712, 1)
    assert [e.cluster for e in black_holes(grid, cid)] == ["hole"]
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in first), "the first nine run again too"
    assert grid.job(slow).state == JobState.TERMINATED


def test_a_campaign_fast_everywhere_is_never_flagged_while_a_slow_one_is():
    """Two campaigns on the same two clusters: 'fast' takes 1 s everywhere; 'slow' takes 10 minutes on good and
    ends at once on hole. Only 'slow' has hole blacklisted."""
    hole, good = FakeRM("hole", 5, queue_depth=0), FakeRM("good", 5, queue_depth=0)
    grid = Grid(hole, good)
    fast, slow = grid.submit(300), grid.submit(30)
    t = 0.0
    while any(grid.states(c) != {JobState.TERMINATED: n} for c, n in ((fast, 300), (slow, 30))) and t < 100000:
        grid.at(t)
        t += 30
        for cluster in (hole, good):
            for job_id in cluster.holds(RemoteState.PENDING):
                cluster.start(job_id, t - 1.5)
            for job_id in cluster.holds(RemoteState.RUNNING):
                took = 600 if grid.job(job_id).campaign_id == slow and cluster is good else 1.0
                if cluster.jobs[cluster.remote_of(job_id)].started_at + took <= t:
                    cluster.end(job_id, cluster.jobs[cluster.remote_of(job_id)].started_at + took)
    assert grid.states(fast) == {JobState.TERMINATED: 300}
    assert grid.states(slow) == {JobState.TERMINATED: 30}
    assert not black_holes(grid, fast)
    assert [e.cluster for e in black_holes(grid, slow)] == ["hole"]
    assert all(grid.job(j.id).cluster == "good" for j in grid.store.jobs(slow))


def test_without_a_reference_it_waits_then_blacklists_and_returns_all_it_swallowed():
    """Nothing ended elsewhere yet: the streak waits until the jobs running elsewhere have run long enough
    (the default reference: 10 x 5 s), and every job the hole swallowed meanwhile runs again."""
    grid, hole, _good, cid = running_everywhere(60)
    swallowed = swallow(grid, hole, 10, 15)
    assert not black_holes(grid, cid), "good's jobs have run 10 s: no reference yet"
    grid.at(49)
    assert not black_holes(grid, cid)
    grid.at(51)  # good's jobs have run 51 s, still running
    (event,) = black_holes(grid, cid)
    assert event.created_at == 51
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in swallowed)


def test_jobs_ending_at_once_after_the_blacklist_go_back_too():
    """Jobs already queued on the hole when it was blacklisted end there at once as well: back to the bag.
    (Their queue does not move for 600 s while good's does: a grace that long keeps them there.)"""
    hole, good = FakeRM("hole", 5, queue_depth=10), FakeRM("good", 5, queue_depth=0)
    grid, cid = Grid.placed(hole, good, jobs=60, patience=replace(PATIENCE, queue_grace=900, queue_wait=900))
    for job_id in good.holds(RemoteState.PENDING):
        good.start(job_id, 0.0)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    queued = hole.holds(RemoteState.PENDING)
    at_once(hole, queued[:10], 610.0)
    grid.at(611)
    assert black_holes(grid, cid)
    at_once(hole, queued[10:], 620.0)
    grid.at(621)
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in queued)
    assert len(black_holes(grid, cid)) == 1


def test_a_cluster_that_turns_into_a_black_hole_is_judged_against_its_own_ends_before_the_streak():
    """A campaign on one cluster only: nothing elsewhere, but its jobs there took 10 minutes until they began to
    end at once."""
    hole = FakeRM("hole", 10, queue_depth=0)
    grid, cid = Grid.placed(hole, jobs=40)
    for job_id in hole.holds(RemoteState.PENDING):
        hole.start(job_id, 0.0)
    for job_id in hole.holds(RemoteState.RUNNING):
        hole.end(job_id, 600.0)
    grid.at(600)
    swallowed = hole.holds(RemoteState.PENDING)
    at_once(hole, swallowed, 610.0)
    grid.at(611)
    (event,) = black_holes(grid, cid)
    assert "on hole before the streak" in event.message
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in swallowed)
    assert grid.states(cid) == {JobState.TERMINATED: 10, JobState.TO_LAUNCH: 30}


def test_a_campaign_fast_on_its_only_cluster_is_never_flagged():
    hole = FakeRM("hole", 10, queue_depth=0)
    grid, cid = Grid.placed(hole, jobs=100)
    for t in range(30, 600, 30):
        pending = hole.holds(RemoteState.PENDING)
        at_once(hole, pending, t - 5)
        grid.at(t)
    assert grid.states(cid) == {JobState.TERMINATED: 100}
    assert not black_holes(grid, cid)


def test_replicas_that_win_at_once_on_a_black_hole_are_suspects_too():
    """finalize: the campaign's last ten jobs run on good, their replicas go to hole, just freed, and end there at
    once, winning: ten such wins are a streak, and their jobs run again."""
    hole, good = FakeRM("hole", 12, others=12, queue_depth=0), FakeRM("good", 10, queue_depth=0)
    grid = Grid(hole, good)
    params = [f"j{i}" for i in range(20)]
    jdl = parse(
        {"name": "c", "exec_file": "run", "finalize": True, "clusters": {"hole": {}, "good": {}}, "params": params}
    )
    cid = ops.submit(grid.store, jdl, grid.clock, user="alice", adapters=grid.clusters.__getitem__)[0]
    grid.at(0)
    for job_id in good.holds(RemoteState.PENDING):
        good.start(job_id, 0.0)
    ten_minute_ends(grid, good, 600, 10)
    grid.at(600)
    last = good.holds(RemoteState.PENDING)
    for job_id in last:
        good.start(job_id, 600.0)
    grid.at(630)
    hole.others = 0  # hole frees up: the running jobs get replicas there
    grid.at(660)
    assert hole.holds(RemoteState.PENDING) == last
    at_once(hole, last, 670.0)
    grid.at(671)
    assert len(black_holes(grid, cid)) == 1
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in last)


def test_the_streak_survives_a_cycle_that_died(tmp_path: Path):
    """Five instant ends in a pass of one almighty, five in a pass of the next: one streak of ten."""
    hole, good = FakeRM("hole", 10, queue_depth=0), FakeRM("good", 10, queue_depth=0)
    grid, cid = Grid.placed(hole, good, jobs=40, state=tmp_path / "state.db")
    for cluster in (hole, good):
        for job_id in cluster.holds(RemoteState.PENDING):
            cluster.start(job_id, 0.0)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    on_hole = hole.holds(RemoteState.RUNNING)
    at_once(hole, on_hole[:5], 610.0)
    grid.at(611)
    grid.cycle.close()
    grid.store.close()
    grid.store = Store(tmp_path / "state.db")
    grid.cycle = Cycle(grid.store, grid.clock, adapters=grid.clusters.__getitem__, patience=PATIENCE)
    at_once(hole, on_hole[5:], 620.0)
    grid.at(621)
    assert len(black_holes(grid, cid)) == 1
    assert all(grid.job(j).state == JobState.TO_LAUNCH for j in on_hole)


def test_fixing_the_event_lifts_the_blacklist():
    grid, hole, good, cid = running_everywhere(60)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    swallow(grid, hole, 612, 10)
    sent = len(hole.owner)
    grid.at(700)
    assert len(hole.owner) == sent
    result = ops.fix_events(grid.store, grid.clock, campaign_id=cid, resubmit=True, user="alice")
    assert (result.closed, result.resubmitted) == (1, 0)
    grid.at(730)
    assert len(hole.owner) > sent, "the hole gets the campaign's jobs again"


def test_the_thresholds_are_configurable():
    grid, hole, good, cid = running_everywhere(40)
    config.set_value(grid.store, "blackhole.streak", 3)
    config.set_value(grid.store, "blackhole.seconds", 1)
    config.set_value(grid.store, "blackhole.ratio", 100)
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    swallow(grid, hole, 612, 3)
    (event,) = black_holes(grid, cid)
    assert "3 jobs in a row" in event.message


def test_a_reference_under_ratio_times_seconds_flags_nothing_until_the_ratio_allows_it():
    grid, hole, good, cid = running_everywhere(60)
    config.set_value(grid.store, "blackhole.ratio", 200)  # 10 minutes elsewhere < 200 x 5 s
    ten_minute_ends(grid, good, 600, 5)
    grid.at(600)
    swallow(grid, hole, 612, 12)
    assert not black_holes(grid, cid)
    config.set_value(grid.store, "blackhole.ratio", 100)  # 600 s >= 100 x 5 s
    swallow(grid, hole, 640, 10)
    assert black_holes(grid, cid)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("blackhole.streak", 0),
        ("blackhole.streak", 2.5),
        ("blackhole.streak", "ten"),
        ("blackhole.seconds", 0),
        ("blackhole.seconds", True),
        ("blackhole.ratio", 0.5),
        ("blackhole.ratio", "x"),
    ],
)
def test_a_bad_threshold_is_refused_naming_its_key(key, value):
    store = Store(":memory:")
    with pytest.raises(ConfigError, match=rf"^{key}: expected a"):
        config.set_value(store, key, value)
    assert key not in store.settings()


def test_on_the_local_cluster_a_cluster_of_bin_true_is_blacklisted_and_every_job_runs_for_real_elsewhere(
    tmp_path: Path, cli, job_script: Path
):
    """The real cycle: 'hole' runs /bin/true for the campaign's exec_file, 'local' the real script (3 s a job);
    thresholds small enough for a test (3 ends in a row under 1 s while the jobs take 2 s or more elsewhere)."""
    cli("gridclusters", "set", "local", "--slots", "6", "--queue-depth", "0")
    cli("gridclusters", "add", "hole", "--adapter", "local", "--slots", "1", "--queue-depth", "0", "--idle-exit", "2")
    for key, value in (("streak", "3"), ("seconds", "1"), ("ratio", "2")):
        cli("config", "set", f"blackhole.{key}", value)
    names = [f"j{i}" for i in range(30)]
    jdl = write_jdl(
        tmp_path,
        exec_file=str(job_script),
        params=[f"{name} sleep:3" for name in names],
        clusters={"local": {}, "hole": {"exec_file": "/bin/true"}},
    )
    cid = cli.submit(jdl)
    cli.until_done(timeout=120)
    store = Store(cli.state)
    try:
        jobs = list(store.jobs(cid))
        events = [e for e in store.events(campaign_id=cid, open_only=False) if e.code == EventCode.BLACK_HOLE]
        campaign = store.campaign(cid)
    finally:
        store.close()
    assert [e.cluster for e in events] == ["hole"]
    assert int(re.match(r"(\d+) jobs in a row", events[0].message).group(1)) >= 3
    assert campaign.state.value == "terminated"
    assert {(j.state, j.cluster) for j in jobs} == {(JobState.TERMINATED, "local")}
    ran = [line.split()[0] for line in runs(tmp_path)]
    assert sorted(set(ran)) == sorted(names), "every job ran the real script"


def test_a_job_still_running_there_past_the_threshold_clears_the_suspects_started_before_it():
    """A big healthy cluster ends the short jobs of a pass before the long ones started with them: one of
    those still running past blackhole.seconds shows the cluster runs jobs normally (a black hole runs none)."""
    grid, hole, cid, fresh = busy_hole(11)
    for job_id in fresh[:10]:
        hole.end(job_id, 603, started=601)
    grid.at(612)  # the eleventh has run 11 s: the cluster is no black hole
    assert not black_holes(grid, cid)
    assert all(grid.job(j).state == JobState.TERMINATED for j in fresh[:10])


def test_ten_short_ends_among_many_jobs_still_running_there_are_no_row():
    """A big healthy cluster with short-tailed durations (hundred-k.yaml's exponential jobs on 1,000 slots)
    ends a few jobs within blackhole.seconds at every pass; the jobs started with and after them still run,
    though for less than blackhole.seconds yet. Ten such ends are no streak in a row while more jobs started
    since still run there (a black hole ends all it starts): under srpt, the simulator's hundred-k flagged its
    biggest cluster and ran 15 jobs twice."""
    grid, hole, cid, fresh = busy_hole(40)
    for job_id in fresh[:10]:
        hole.end(job_id, 603, started=601)
    grid.at(604)  # 30 started with them still run, for 3 s only
    assert not black_holes(grid, cid)
    assert all(grid.job(j).state == JobState.TERMINATED for j in fresh[:10])
    # the same ends where nothing else runs there are a row
    for job_id in fresh[10:]:
        hole.end(job_id, 605, started=601)
    grid.at(606)
    assert len(black_holes(grid, cid)) == 1


def test_a_streak_waits_while_as_many_jobs_started_since_still_run_there():
    grid, hole, cid, fresh = busy_hole(20)
    for job_id in fresh[:10]:
        hole.end(job_id, 603, started=601)
    grid.at(604)  # 10 suspects, 10 started with them still run (3 s so far): no row yet
    assert not black_holes(grid, cid)
    hole.end(fresh[10], 604.5, started=601)
    grid.at(605)  # 11 suspects, 9 still running (for less than blackhole.seconds): a row
    assert len(black_holes(grid, cid)) == 1
    # one suspect more than the jobs still running is a row
    grid, hole, cid, fresh = busy_hole(21)
    for job_id in fresh[:11]:
        hole.end(job_id, 603, started=601)
    grid.at(604)  # 11 suspects, 10 still running
    assert len(black_holes(grid, cid)) == 1
