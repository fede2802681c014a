"""No job parked forever: where the cycle places jobs, and when it takes them back, on clusters under the
test's hand (a fake resource manager on a simulated clock)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from cigri import campaigns as ops
from cigri import config
from cigri.cycle import Cycle, Patience
from cigri.errors import TransportError
from cigri.jdl import parse
from cigri.loop import run_passes
from cigri.model import (
    CampaignState,
    Capacity,
    EventCode,
    JobSpec,
    JobState,
    KillCause,
    RemoteState,
    RemoteStatus,
)
from cigri.scheduling import TestFirstFifo
from cigri.sim.clock import SimClock
from cigri.sim.run import Simulation
from cigri.sim.scenario import load as load_scenario
from cigri.sim.scenario import parse as parse_scenario
from cigri.store import Store

from .conftest import Grid as CliGrid
from .conftest import state_before

PATIENCE = Patience(
    queue_grace=60, queue_wait=600, avoid=1200, unreachable=900, unreachable_running=900, unreachable_tail=900
)


class FakeRM:
    """A cluster whose jobs stay pending until the test starts, ends or kills them. ``others`` cores are held
    by non-grid users; ``down`` makes it unreachable."""

    best_effort = True
    max_batch = None
    answers_at_once = True  # called on the cycle's thread (cigri.calls), as the simulated clusters are

    def __init__(self, name: str, slots: int, *, others: int = 0, queue_depth: int = 10):
        self.name = name
        self.slots = slots
        self.others = others
        self.queue_depth = queue_depth
        self.down = False
        self.jobs: dict[str, RemoteStatus] = {}
        self.owner: dict[str, int] = {}  # remote id -> cigri job id
        self.batches: dict[str, list[str]] = {}
        self.cancelled: list[str] = []
        self.held: set[str] = set()  # held, still pending (this fake starts nothing by itself)

    def _reachable(self) -> None:
        if self.down:
            raise TransportError(f"{self.name}: no route to host")

    def capacity(self) -> Capacity:
        self._reachable()
        running = sum(1 for s in self.jobs.values() if s.state == RemoteState.RUNNING)
        queued = sum(1 for s in self.jobs.values() if s.state == RemoteState.PENDING)
        return Capacity(total=self.slots, used=self.others + running, grid_used=running, queued=queued)

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        self._reachable()
        ids = []
        for spec in specs:
            remote = f"{self.name}-{len(self.owner) + 1}"
            self.owner[remote] = spec.job_id
            self.jobs[remote] = RemoteStatus(remote, RemoteState.PENDING)
            ids.append(remote)
        self.batches[batch_key] = ids
        return ids

    def find_batch(self, batch_key: str) -> list[str] | None:
        self._reachable()
        return self.batches.get(batch_key)

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        self._reachable()
        return {r: self.jobs[r] for r in remote_ids if r in self.jobs}

    def cancel(self, remote_ids: Sequence[str]) -> None:
        self._reachable()
        for remote in remote_ids:
            self.cancelled.append(remote)
            self.jobs[remote] = RemoteStatus(remote, RemoteState.KILLED, reason="cancelled")

    def hold(self, remote_ids: Sequence[str]) -> None:
        self._reachable()
        self.held.update(remote_ids)

    def release(self, remote_ids: Sequence[str]) -> None:
        self._reachable()
        self.held.difference_update(remote_ids)

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        return ""

    def check(self, settings: dict, path: str) -> None:
        pass

    def activity(self) -> object:
        return None

    def close(self) -> None:
        pass

    # ---- the test's hand ------------------------------------------------------------------------

    def remote_of(self, job_id: int) -> str:
        """The latest copy of a cigri job on this cluster."""
        return [r for r, j in self.owner.items() if j == job_id][-1]

    def holds(self, state: RemoteState) -> list[int]:
        return sorted(self.owner[r] for r, s in self.jobs.items() if s.state == state)

    def start(self, job_id: int, at: float) -> None:
        remote = self.remote_of(job_id)
        self.jobs[remote] = RemoteStatus(remote, RemoteState.RUNNING, started_at=at)

    def end(self, job_id: int, at: float, *, exit_code: int = 0, started: float | None = None) -> None:
        remote = self.remote_of(job_id)
        start = self.jobs[remote].started_at if started is None else started
        self.jobs[remote] = RemoteStatus(remote, RemoteState.EXITED, exit_code, start, at)

    def kill(self, job_id: int, at: float, reason: str = "preempted") -> None:
        remote = self.remote_of(job_id)
        start = self.jobs[remote].started_at
        self.jobs[remote] = RemoteStatus(remote, RemoteState.KILLED, None, start, at, reason)


class Grid:
    """A state, fake clusters and the cycle on a simulated clock."""

    def __init__(self, *clusters: FakeRM, patience: Patience = PATIENCE, state: Path | str = ":memory:"):
        self.clock = SimClock(0.0)
        self.store = Store(state)
        self.clusters = {c.name: c for c in clusters}
        for name in self.clusters:
            self.store.add_cluster(name, "fake", {}, 0.0)
        self.cycle = Cycle(self.store, self.clock, adapters=self.clusters.__getitem__, patience=patience)

    @classmethod
    def placed(cls, *clusters: FakeRM, jobs: int, test: bool = False, **kw) -> tuple[Grid, int]:
        """A campaign of ``jobs`` jobs on the clusters, after its first pass at t=0."""
        grid = cls(*clusters, **kw)
        campaign_id = grid.submit(jobs, test=test)
        grid.at(0)
        return grid, campaign_id

    def submit(self, jobs: int, *, test: bool = False, clusters: Sequence[str] | None = None) -> int:
        jdl = parse(
            {
                "name": "c",
                "exec_file": "run",
                "test_mode": test,
                "clusters": {name: {} for name in clusters or self.clusters},
                "params": [f"j{i}" for i in range(jobs)],
            }
        )
        return ops.submit(self.store, jdl, self.clock, user="alice", adapters=self.clusters.__getitem__)[0]

    def at(self, t: float, stages: Sequence[str] | None = None) -> None:
        """One pass at simulated time t."""
        self.clock.advance_to(t)
        self.cycle.run(*([stages] if stages else []))

    def job(self, job_id: int):
        return self.store.job(job_id)

    def states(self, campaign_id: int) -> dict[JobState, int]:
        return {s: n for s, n in self.store.counts(campaign_id).items() if n}


def test_a_start_at_time_zero_is_a_start():
    a = FakeRM("a", 2)
    grid, cid = Grid.placed(a, jobs=2)
    a.start(1, 0.0)
    a.end(2, 40.0, started=0.0)
    grid.at(30)
    assert grid.job(1).started_at == 0.0
    assert grid.store.stats(cid)["duration_sum"] == 40.0  # job 2 ran 0 -> 40
    a.end(1, 50.0)
    grid.at(60)
    assert grid.store.stats(cid)["duration_sum"] == 90.0


def test_no_queue_allowance_where_queued_grid_jobs_do_not_start():
    busy = FakeRM("busy", 4, others=4)  # local users hold every core
    idle = FakeRM("idle", 1, queue_depth=0)
    grid, first = Grid.placed(busy, idle, jobs=5)
    assert (busy.holds(RemoteState.PENDING), idle.holds(RemoteState.PENDING)) == ([2, 3, 4, 5], [1])
    grid.at(120)  # past the grace, nothing of cigri's started on busy (nor on idle: they stay)
    assert busy.cancelled == []
    later = grid.submit(30)
    for t in range(150, 450, 30):
        for job_id in idle.holds(RemoteState.PENDING):
            idle.end(job_id, t, started=t - 1)
        grid.at(t)
    assert len(busy.owner) == 4, "nothing more was queued where nothing starts"
    assert len(busy.cancelled) == 4, "what waited there came back once idle started jobs"
    assert grid.states(first) == {JobState.TERMINATED: 5}
    assert grid.states(later)[JobState.TERMINATED] == 5


def test_a_queue_that_moves_keeps_its_allowance():
    busy = FakeRM("busy", 4, others=4)
    grid, _ = Grid.placed(busy, jobs=30)
    first = busy.holds(RemoteState.PENDING)
    busy.end(first[0], 100, started=90)  # one of cigri's queued jobs started and ended there
    grid.at(120)
    assert len(busy.owner) == 11, "the freed place in the queue was given again"


def test_a_job_queued_where_nothing_starts_comes_back_past_the_grace_when_another_cluster_starts_jobs():
    """Issue 21: a job waits in a queue only while no other cluster of its campaign would start it sooner.
    Past the queue grace, on a cluster that started none of cigri's jobs in that grace while another did, it
    returns to its bag (no event, no resubmission counted) and runs there."""
    busy = FakeRM("busy", 2, others=2, queue_depth=10)
    idle = FakeRM("idle", 1, queue_depth=0)
    grid, cid = Grid.placed(busy, idle, jobs=3)
    assert (idle.holds(RemoteState.PENDING), busy.holds(RemoteState.PENDING)) == ([1], [2, 3])
    grid.at(100)
    assert busy.cancelled == [], "neither cluster starts jobs: nowhere sooner"
    idle.start(1, 110)
    grid.at(120)
    assert sorted(busy.cancelled) == sorted([busy.remote_of(2), busy.remote_of(3)])
    assert [grid.job(j).state for j in (2, 3)] == [JobState.TO_LAUNCH] * 2
    idle.end(1, 150)
    grid.at(160)
    assert idle.holds(RemoteState.PENDING) == [2] and len(busy.owner) == 2, "not queued where nothing starts"
    assert (grid.job(2).cluster, grid.job(2).resubmits) == ("idle", 0)
    assert grid.store.events(campaign_id=cid) == []


def test_a_queue_stopped_for_less_than_a_jobs_duration_keeps_its_jobs():
    """Jobs of an hour: a queue that started nothing for two minutes may well start them in the next hour (a
    local user's job ends, one of cigri's): they keep their place until they waited a job's duration."""
    busy = FakeRM("busy", 2, others=2, queue_depth=10)
    idle = FakeRM("idle", 1, queue_depth=0)
    grid, cid = Grid.placed(busy, idle, jobs=3)
    with grid.store.transaction():
        grid.store.add_durations([(cid, "idle", 3600.0, 0.0)], 60.0)  # the campaign's jobs take an hour
    idle.start(1, 110)
    grid.at(120)
    assert busy.cancelled == [] and busy.holds(RemoteState.PENDING) == [2, 3]


def test_a_job_pending_past_the_queue_wait_is_taken_back_and_run_elsewhere():
    """Where no cluster started jobs lately, a queued job is taken back past the queue wait, when another
    cluster of its campaign has a free slot for it."""
    busy = FakeRM("busy", 2, others=2, queue_depth=10)
    idle = FakeRM("idle", 1, queue_depth=0)
    grid, cid = Grid.placed(busy, idle, jobs=3)
    assert (idle.holds(RemoteState.PENDING), busy.holds(RemoteState.PENDING)) == ([1], [2, 3])
    idle.start(1, 10)
    grid.at(20)  # idle's start, seen long before the take-backs are weighed
    idle.end(1, 350)
    grid.at(400)  # idle is free, but jobs 2 and 3 have not waited the limit yet
    assert busy.cancelled == [] and idle.holds(RemoteState.PENDING) == []
    grid.at(630)
    assert busy.cancelled == [busy.remote_of(2)], "one job taken back: idle has room for one"
    assert idle.holds(RemoteState.PENDING) == [2]
    job = grid.job(2)
    assert (job.state, job.cluster, job.resubmits) == (JobState.SUBMITTED, "idle", 0)
    assert grid.store.events(campaign_id=cid) == []
    assert busy.holds(RemoteState.PENDING) == [3]


def _queued_behind_two(
    mean: float, big_mean: float | None = None, *, jobs: int = 4
) -> tuple[Grid, FakeRM, FakeRM, int]:
    """small (2 slots) runs jobs 1 and 2 from t=5 and queues the rest; big's one slot, held by a local user
    until t=10, is free at the pass at t=20; the campaign's jobs take ``mean`` seconds on small, ``big_mean``
    (else the same) on big (learned)."""
    small = FakeRM("small", 2, queue_depth=10)
    big = FakeRM("big", 1, others=1, queue_depth=0)
    grid, cid = Grid.placed(small, big, jobs=jobs)
    assert (small.holds(RemoteState.PENDING), big.owner) == (list(range(1, jobs + 1)), {})
    with grid.store.transaction():
        grid.store.add_durations([(cid, "small", mean, 0.0), (cid, "big", big_mean or mean, 0.0)], 60.0)
    small.start(1, 5)
    small.start(2, 5)
    grid.at(10)  # the starts seen
    big.others = 0
    grid.at(20)  # big's slot free
    return grid, small, big, cid


def test_a_last_job_queued_behind_long_ones_is_taken_back_for_a_cluster_that_would_end_it_sooner():
    """Issue 21: a campaign's last jobs waited in a small cluster's queue behind a wave of long ones while a
    bigger cluster had room. Jobs 3 and 4 wait on small for jobs 1 and 2 (100 s, started at 5): they start
    at about 105 and end at 205; big would end one at about 20 + 100 plus a pass. One is taken back (big
    has room for one), well before the 600 s of the queue wait."""
    grid, small, big, cid = _queued_behind_two(100.0)
    assert small.cancelled == [small.remote_of(3)]
    assert (big.holds(RemoteState.PENDING), small.holds(RemoteState.PENDING)) == ([3], [4])
    job = grid.job(3)
    assert (job.cluster, job.resubmits) == ("big", 0)
    assert grid.store.events(campaign_id=cid) == []


def test_jobs_running_past_their_mean_are_expected_to_run_half_as_long_again():
    """The mean of the jobs ended so far is short while long ones still run: jobs 1 and 2 (mean 100 s) have run
    195 s at t=200, and are expected to run about 97 s more, not to end at once. So jobs 3 and 4 would start
    at about 297 on small and end at about 397; big, free at last, ends one at about 310: one is taken
    back."""
    small = FakeRM("small", 2, queue_depth=10)
    big = FakeRM("big", 1, others=1, queue_depth=0)
    grid, cid = Grid.placed(small, big, jobs=4)
    with grid.store.transaction():
        grid.store.add_durations([(cid, "small", 100.0, 0.0), (cid, "big", 100.0, 0.0)], 60.0)
    small.start(1, 5)
    small.start(2, 5)
    for t in range(10, 200, 10):  # big's slot held by its local user: no room for a take-back
        grid.at(t)
    assert small.cancelled == []
    big.others = 0
    grid.at(200)
    assert small.cancelled == [small.remote_of(3)] and big.holds(RemoteState.PENDING) == [3]


def test_a_job_about_to_start_where_it_waits_stays_there():
    """Jobs of 70 s on small, 20 s on big: jobs 3 and 4 would end at about 145 on small, at about 60 on big,
    but they start on small within the queue grace (60 s: its running jobs end at about 75): moving them
    would cost a cancel for little."""
    _, small, big, _ = _queued_behind_two(70.0, 20.0)
    assert small.cancelled == [] and small.holds(RemoteState.PENDING) == [3, 4]
    assert big.owner == {}


def test_no_job_is_taken_back_for_a_cluster_that_would_likely_kill_it():
    """Jobs of 300 s on small, 100 s on big, but big killed 40 of cigri's jobs (40 kills over an hour of
    prior: a 100 s job takes about 1.8 times its duration there, kills included). Even so job 3 would end
    sooner there (at about 200 against 585), but it would likely be killed on the way: jobs 3 and 4 wait
    on small."""
    small = FakeRM("small", 2, queue_depth=10)
    big = FakeRM("big", 1, others=1, queue_depth=0)
    grid, cid = Grid.placed(small, big, jobs=4)
    with grid.store.transaction():
        grid.store.add_durations([(cid, "small", 300.0, 0.0), (cid, "big", 100.0, 0.0)], 60.0)
        grid.store.add_kills("big", 40)
    small.start(1, 5)
    small.start(2, 5)
    grid.at(10)
    big.others = 0
    grid.at(20)
    assert small.cancelled == [] and small.holds(RemoteState.PENDING) == [3, 4]


def test_no_job_is_taken_back_while_its_campaign_has_jobs_left_to_launch():
    """With jobs still in its bag, the room on big goes to one of them: taking a queued one back would
    only add a cancel."""
    small = FakeRM("small", 2, queue_depth=2)
    big = FakeRM("big", 1, others=1, queue_depth=0)
    grid, cid = Grid.placed(small, big, jobs=6)
    assert small.holds(RemoteState.PENDING) == [1, 2, 3, 4] and grid.states(cid)[JobState.TO_LAUNCH] == 2
    with grid.store.transaction():
        grid.store.add_durations([(cid, "small", 100.0, 0.0), (cid, "big", 100.0, 0.0)], 60.0)
    small.start(1, 5)
    small.start(2, 5)
    grid.at(10)
    big.others = 0
    grid.at(20)
    assert small.cancelled == []
    assert big.holds(RemoteState.PENDING) == [5], "big's slot went to a job of the bag"


def test_taking_back_is_recorded_before_the_cancel_and_finished_after_a_crash():
    busy = FakeRM("busy", 1, others=1)
    idle = FakeRM("idle", 1, queue_depth=0)
    grid, _ = Grid.placed(busy, idle, jobs=2)
    idle.end(1, 100, started=5)

    def crash(remote_ids):
        raise KeyboardInterrupt  # the pass is killed while the RM is asked

    busy.cancel, cancel = crash, busy.cancel
    with pytest.raises(KeyboardInterrupt):
        grid.at(700)
    busy.cancel = cancel
    idle.others = 1  # no room elsewhere any more: only the recorded intent takes the job back now
    grid.cycle = Cycle(grid.store, grid.clock, adapters=grid.clusters.__getitem__, patience=PATIENCE)
    grid.at(730)
    assert busy.cancelled == [busy.remote_of(2)]
    job = grid.job(2)
    assert (job.state, job.cluster, job.resubmits) == (JobState.TO_LAUNCH, None, 0)


def test_a_preempted_job_is_not_sent_straight_back_to_the_cluster_that_killed_it():
    a = FakeRM("a", 1, queue_depth=0)
    b = FakeRM("b", 1, queue_depth=0)
    grid, _ = Grid.placed(a, b, jobs=2)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1], [2])
    a.start(1, 5)
    b.start(2, 5)
    a.kill(1, 50)
    grid.at(60)
    assert grid.job(1).state == JobState.TO_LAUNCH and len(a.owner) == 1, "a killed it: not sent back at once"
    b.end(2, 100)
    grid.at(120)
    assert grid.job(1).cluster == "b"
    b.kill(1, 200)
    grid.at(1300)  # a's avoidance expired, b's did not
    assert grid.job(1).cluster == "a"


def test_a_clusters_hazard_counts_its_kills_over_its_jobs_run_time():
    """Preemptions and running jobs lost to a silent cluster are the cluster's kills (issue 21: long jobs keep
    off clusters that would likely kill them); a job's own failure is not."""
    a = FakeRM("a", 2, queue_depth=0)
    b = FakeRM("b", 2, queue_depth=0)
    grid, _ = Grid.placed(a, b, jobs=4)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1, 2], [3, 4])
    for rm, job in ((a, 1), (a, 2), (b, 3), (b, 4)):
        rm.start(job, 5)
    a.end(1, 105)  # 100 s of run time, terminated
    preempted = RemoteStatus(a.remote_of(2), RemoteState.KILLED, None, 5, 50, "", cause=KillCause.PREEMPTED)
    a.jobs[a.remote_of(2)] = preempted
    b.end(3, 30, exit_code=1)  # the job's own failure
    grid.at(120)
    assert grid.store.hazards(100.0) == {"a": pytest.approx(1 / 200)}, "one kill over 100 s of run time and the prior"
    b.down = True
    grid.at(200)
    grid.at(2000)  # silent past updator.unreachable_running: job 4, running there, is lost
    assert grid.store.hazards(100.0) == {"a": pytest.approx(1 / 200), "b": pytest.approx(1 / 100)}


def test_jobs_of_a_cluster_unreachable_too_long_run_elsewhere_and_count_once():
    a = FakeRM("a", 1, queue_depth=0)
    b = FakeRM("b", 1, queue_depth=0)
    grid, cid = Grid.placed(a, b, jobs=2)
    a.start(1, 5)
    b.start(2, 5)
    grid.at(10)
    a.down = True
    grid.at(30)
    assert grid.job(1).state == JobState.RUNNING  # unreachable for a while: its job may still run there
    b.end(2, 100)
    grid.at(600)
    assert grid.job(1).cluster == "a"
    grid.at(960)  # past the limit: job 1 runs again elsewhere
    assert (grid.job(1).cluster, grid.job(1).resubmits) == ("b", 0)
    old = a.remote_of(1)
    a.end(1, 970)  # the first copy ended while unreachable
    a.down = False
    b.end(1, 1000, started=965)
    grid.at(1020)
    assert a.cancelled == [old], "the losing copy is cancelled once its cluster answers"
    assert grid.store.campaign(cid).state == CampaignState.TERMINATED
    assert grid.states(cid) == {JobState.TERMINATED: 2}
    assert grid.store.stats(cid)["duration_n"] == 2
    grid.at(1050)
    assert a.cancelled == [old]


def a_falls_silent(patience: Patience, *, jobs: int, a_queue: int) -> tuple[Grid, int, FakeRM, FakeRM]:
    """a (1 slot) runs job 1 and queues job 2, b (2 slots) runs jobs 3 and 4; a stops answering at 10 s and its
    cluster event opens at the pass of 30 s."""
    a = FakeRM("a", 1, queue_depth=a_queue)
    b = FakeRM("b", 2, queue_depth=0)
    grid, cid = Grid.placed(a, b, jobs=jobs, patience=patience)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1, 2], [3, 4])
    a.start(1, 5)
    b.start(3, 5)
    b.start(4, 5)
    grid.at(10)
    a.down = True
    grid.at(30)  # the cluster's event opens
    return grid, cid, a, b


def test_the_jobs_of_a_silent_cluster_whose_campaign_has_none_left_to_launch_run_elsewhere_within_a_minute():
    """Issue 21, item 3: a campaign with no job left to launch has nothing else to run on the slots elsewhere:
    each second its jobs on a silent cluster wait is a second of its end (on small.yaml, jobs beta's outage
    caught ended their campaigns minutes late). Its running and queued jobs there run again elsewhere after
    ``updator.unreachable_tail``; the copies left there are cancelled once it answers."""
    patience = Patience(queue_grace=60, queue_wait=3000, unreachable=900, unreachable_running=300, unreachable_tail=60)
    grid, cid, a, b = a_falls_silent(patience, jobs=4, a_queue=5)
    assert grid.store.counts(cid)[JobState.TO_LAUNCH] == 0, "every job is on a cluster"
    b.end(3, 40)
    b.end(4, 40)
    grid.at(89)
    assert (grid.job(1).cluster, grid.job(2).cluster) == ("a", "a"), "silent for 59 s: waited on"
    grid.at(90)
    assert (grid.job(1).cluster, grid.job(2).cluster) == ("b", "b"), "silent for a minute, running and queued"
    assert (grid.job(1).resubmits, grid.job(2).resubmits) == (0, 0)
    # one kill over no run time ended there and the 100-s prior: the queued one is no kill
    assert grid.store.hazards(100.0) == {"a": pytest.approx(1 / 100)}
    a.down = False
    grid.at(120)
    assert sorted(a.cancelled) == sorted([a.remote_of(1), a.remote_of(2)]), "the copies left there are cancelled"
    b.end(1, 150, started=95)
    b.end(2, 150, started=95)
    grid.at(180)
    assert grid.states(cid) == {JobState.TERMINATED: 4}


def test_the_running_jobs_of_a_silent_cluster_run_elsewhere_within_minutes_its_queued_ones_later():
    """A running job on a cluster that stopped answering may be dead (an outage kills it): waiting an hour to
    know costs the campaign that hour. A queued one has lost nothing and may start there when it answers, while
    its campaign has other jobs to run elsewhere (here the bag keeps jobs b has no room for)."""
    patience = Patience(queue_grace=60, queue_wait=3000, avoid=1200, unreachable=900, unreachable_running=300)
    grid, cid, a, b = a_falls_silent(patience, jobs=6, a_queue=1)
    assert grid.store.counts(cid)[JobState.TO_LAUNCH] == 2, "two jobs wait in the bag"
    grid.at(300)
    assert (grid.job(1).cluster, grid.job(2).cluster) == ("a", "a"), "silent for less than 300 s: waited on"
    b.end(3, 320)
    b.end(4, 320)
    grid.at(340)
    assert (grid.job(1).cluster, grid.job(1).resubmits) == ("b", 0), "the running one runs again elsewhere"
    assert grid.job(2).cluster == "a", "the queued one waits for its cluster"
    assert b.holds(RemoteState.PENDING) == [1, 5]
    for job in (1, 5):
        b.start(job, 345)
        b.end(job, 900)
    grid.at(910)
    assert grid.job(2).cluster == "a", "job 6 took b's slot: the campaign still had one to launch"
    grid.at(940)
    assert grid.job(2).cluster == "b", "past updator.unreachable, the queued one too"
    a.down = False
    grid.at(970)
    assert sorted(a.cancelled) == sorted([a.remote_of(1), a.remote_of(2)]), "the copies left there are cancelled"


def test_a_sporadic_failure_keeps_the_cluster_open_to_the_campaign_repeated_ones_close_it():
    """Issue 21: one job error closed a cluster to its campaign until the user fixed it, idling it. A cluster
    closes once ``blacklist.errors`` (5) of the campaign's last ``blacklist.window`` (10) ends there failed:
    3 of 10 closed healthy clusters of big campaigns (at a 2 % sporadic failure rate, 60 % of 4,000 ends
    meet such a window somewhere), 5 of 10 does so 0.3 % of 20,000 ends."""
    a = FakeRM("a", 2, queue_depth=0)
    grid, cid = Grid.placed(a, jobs=12)
    config.set_value(grid.store, "resubmit.error_retries", 0)  # every error an open event, as CiGri's
    a.start(1, 1)
    a.start(2, 1)
    a.end(1, 5, exit_code=3)  # one failure: an event for the job, the campaign goes on there
    a.end(2, 5)
    grid.at(10)
    assert [e.code for e in grid.store.events(campaign_id=cid)] == [EventCode.EXIT_ERROR]
    assert a.holds(RemoteState.PENDING) == [3, 4], "the next jobs went to a"
    clock, codes = 10, []
    for ends, failed in ((((3, 3), (4, 3)), 3), (((5, 3), (6, 0)), 4), (((7, 3), (8, 3)), 6)):
        for job, exit_code in ends:
            a.start(job, clock + 1)
            a.end(job, clock + 5, exit_code=exit_code)
        clock += 10
        grid.at(clock)
        codes = [e.code for e in grid.store.events(campaign_id=cid)]
        if failed < 5:
            assert EventCode.BLACKLIST not in codes, f"{failed} errors of the last {ends[1][0]} ends"
            assert a.holds(RemoteState.PENDING), "still open to the campaign"
    assert codes.count(EventCode.EXIT_ERROR) == 6 and EventCode.BLACKLIST in codes, "6 of the last 8 failed"
    assert a.holds(RemoteState.PENDING) == [], "closed to the campaign"


def test_a_sporadic_error_runs_the_job_again_at_once_elsewhere_and_its_second_waits_for_the_user():
    """Issue 21, item 6: below the blacklist's threshold, a job's error runs it again at once on another of
    its campaign's clusters (``resubmit.error_retries``, 1); its EXIT_ERROR event is kept, closed. A second
    error of the same job waits for the user, as every error does with ``resubmit.error_retries`` 0 (CiGri's
    rule) or where the campaign has no other cluster."""
    a = FakeRM("a", 1, queue_depth=0)
    b = FakeRM("b", 1, queue_depth=0)
    grid, cid = Grid.placed(a, b, jobs=4)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1], [2])
    a.start(1, 1)
    b.start(2, 1)
    a.end(1, 5, exit_code=3)
    b.end(2, 5)
    grid.at(10)
    assert (grid.job(1).state, grid.job(1).cluster) == (JobState.SUBMITTED, "b"), "again at once, on b"
    assert a.holds(RemoteState.PENDING) == [3], "a still serves the campaign"
    [event] = grid.store.events(campaign_id=cid, open_only=False)
    assert (event.code, event.job_id, event.state.value, event.closed_by) == (
        EventCode.EXIT_ERROR,
        1,
        "closed",
        "run again at once (resubmit.error_retries)",
    )
    b.start(1, 11)
    b.end(1, 15, exit_code=3)
    grid.at(20)
    assert grid.job(1).state == JobState.EVENT, "its second error waits for the user"
    assert [e.state.value for e in grid.store.events(campaign_id=cid, open_only=False)] == ["closed", "open"]
    assert [r[0] for r in grid.store.conn.execute("SELECT job_id FROM job_ends")] == [1], "the retried end listed"

    c = FakeRM("c", 1, queue_depth=0)
    grid, cid = Grid.placed(c, jobs=2)
    c.start(1, 1)
    c.end(1, 5, exit_code=3)
    grid.at(10)
    assert grid.job(1).state == JobState.EVENT, "no other cluster: the error is the job's"

    for key, value, why in (
        ("resubmit.error_retries", 0, "0: CiGri's rule"),
        ("resubmit.max_attempts", 1, "no attempt left"),
        ("blacklist.errors", 1, "an error that closes the cluster to the campaign is the user's"),
    ):
        a, b = FakeRM("a", 1, queue_depth=0), FakeRM("b", 1, queue_depth=0)
        grid, cid = Grid.placed(a, b, jobs=4)
        config.set_value(grid.store, key, value)
        a.start(1, 1)
        a.end(1, 5, exit_code=3)
        grid.at(10)
        assert grid.job(1).state == JobState.EVENT, why


def test_cigris_first_error_rule_is_blacklist_errors_1():
    a = FakeRM("a", 2, queue_depth=0)
    grid, cid = Grid.placed(a, jobs=4)
    config.set_value(grid.store, "blacklist.errors", 1)
    a.start(1, 1)
    a.end(1, 5, exit_code=3)
    grid.at(10)
    assert [e.code for e in grid.store.events(campaign_id=cid)] == [EventCode.EXIT_ERROR, EventCode.BLACKLIST]


def test_a_test_job_is_planned_on_a_full_cluster_and_a_stall_ends_the_test_there(tmp_path):
    free = FakeRM("free", 1, queue_depth=0)
    full = FakeRM("full", 2, others=2, queue_depth=0)  # no free slot, no queue allowance
    state = tmp_path / "state.db"
    grid, cid = Grid.placed(free, full, jobs=5, test=True, state=state)
    assert (free.holds(RemoteState.PENDING), full.holds(RemoteState.PENDING)) == ([1], [2])
    free.end(1, 50, started=1)
    grid.at(60)
    assert grid.store.campaign(cid).state == CampaignState.IN_TREATMENT
    assert ops.blocked_reason(grid.store, grid.store.campaign(cid)) is None
    grid.at(630)
    assert full.cancelled == [full.remote_of(2)]
    [event] = grid.store.events(campaign_id=cid)
    assert (event.code, event.cluster) == (EventCode.TEST_NOT_STARTED, "full")
    assert "full" in event.message
    grid.at(660)
    assert grid.store.campaign(cid).state == CampaignState.TERMINATED
    assert grid.states(cid) == {JobState.TERMINATED: 1, JobState.SKIPPED: 4}
    cli = CliGrid(state)
    [shown] = cli.json("gridevents", "-c", str(cid))
    assert (shown["code"], shown["cluster"]) == ("TEST_NOT_STARTED", "full")
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["open_events"], row["blocked"]) == ("terminated", 1, None)


def test_a_campaign_with_no_usable_cluster_is_blocked_and_until_done_stops_naming_it():
    alpha = FakeRM("alpha", 1)
    grid = Grid(alpha)
    cid = grid.submit(2)
    alpha.down = True
    blocked = run_passes(grid.cycle, grid.clock, loop=False, until_done=True, period=30, timeout=3600)
    [(campaign_id, reason)] = blocked
    assert campaign_id == cid and "alpha" in reason and "unreachable" in reason
    assert ops.blocked_reason(grid.store, grid.store.campaign(cid)) == reason


# ---- on simulated clusters: measured from what the clusters ran, not from cigri's counters -------------


def completions(simulation: Simulation) -> Counter:
    """How many times each cigri job ran to a successful end, by the simulated clusters' records."""
    done: Counter = Counter()
    for cluster in simulation.clusters.values():
        done.update(cluster.usage.completions)
    return done


def last_completion(simulation: Simulation) -> float:
    """The time of the pass that saw the clusters' last successful end."""
    seen = {"n": 0, "at": 0.0}

    def watch(sim: Simulation) -> None:
        n = sum(completions(sim).values())
        if n != seen["n"]:
            seen.update(n=n, at=sim.clock.now())

    simulation.run(watch)
    return seen["at"]


def test_a_cluster_whose_local_users_hold_every_core_and_one_in_outage_park_no_job():
    simulation = Simulation(
        parse_scenario(
            {
                "name": "parked",
                "period": 30,
                "seed": 1,
                "max_time": 200000,
                "clusters": [
                    # local users come every 100 s for 20000 s and take the whole cluster, preempting grid jobs
                    {"name": "hog", "slots": 16, "local_load": {"rate": 0.01, "duration": 20000, "size": 16}},
                    {"name": "flaky", "slots": 16, "outages": [[600, 150000]]},
                    {"name": "small", "slots": 4},
                ],
                "users": {"alice": {}, "bob": {}},
                "campaigns": [
                    {"name": "a", "user": "alice", "jobs": 200, "duration": {"dist": "exponential", "mean": 120}},
                    {
                        "name": "b",
                        "user": "bob",
                        "arrival": 300,
                        "jobs": 100,
                        "duration": {"dist": "uniform", "min": 60, "max": 600},
                    },
                ],
            }
        )
    )
    ended = last_completion(simulation)
    store = simulation.store
    assert [c.state for c in store.campaigns()] == [CampaignState.TERMINATED] * 2
    jobs = {job.id for campaign in store.campaigns() for job in store.jobs(campaign.id)}
    assert set(completions(simulation)) == jobs, "every job ran to its end on some cluster"
    assert ended < 20000 and simulation.clock.now() < 20000  # the cap is 200000


def test_seed_7_of_the_ci_scenario_is_no_longer_ten_times_its_peers():
    path = Path(__file__).parent.parent / "bench" / "scenarios" / "small.yaml"
    makespans = {seed: last_completion(Simulation(load_scenario(path), seed=seed)) for seed in (1, 7)}
    assert makespans[7] < 1.5 * makespans[1], makespans


def test_a_killed_job_with_nowhere_else_to_go_runs_again_where_it_was():
    a = FakeRM("a", 1, queue_depth=0)
    grid, _ = Grid.placed(a, jobs=1)
    a.kill(1, 10)
    grid.at(30)
    assert (grid.job(1).state, grid.job(1).cluster, len(a.owner)) == (JobState.SUBMITTED, "a", 2)


def test_the_queued_jobs_of_a_paused_campaign_do_not_close_the_queue_to_others():
    busy = FakeRM("busy", 2, others=2)
    grid, paused = Grid.placed(busy, jobs=3)
    ops.pause(grid.store, paused, user="alice")
    grid.at(600)  # its jobs wait there, held, far past the grace
    grid.submit(2)
    grid.at(630)
    assert len(busy.owner) == 5


class Looking(TestFirstFifo):
    """fifo, noting the jobs it sees on each cluster (strategies read them only when they look)."""

    def __init__(self):
        self.seen: list[dict[str, list[int]]] = []

    def decide(self, snapshot, state):
        self.seen.append({c.name: sorted(job.job_id for job in c.jobs) for c in snapshot.clusters})
        return super().decide(snapshot, state)


def test_a_strategy_sees_the_jobs_of_the_pass_as_they_were_before_its_take_backs():
    busy = FakeRM("busy", 2, others=2, queue_depth=10)
    idle = FakeRM("idle", 1, queue_depth=0)
    grid, _ = Grid.placed(busy, idle, jobs=3)
    looking = Looking()
    grid.cycle.ctx.scheduler = looking
    grid.at(300)
    assert looking.seen[-1]["busy"] == [2, 3] and busy.cancelled == []
    idle.start(1, 310)
    idle.end(1, 350)
    grid.at(400)  # idle started a job, busy none: jobs 2 and 3 are taken back in this pass
    assert sorted(busy.cancelled) == sorted([busy.remote_of(2), busy.remote_of(3)])
    assert looking.seen[-1]["busy"] == [2, 3], "read lazily, the snapshot still shows them on busy"


class Timing(TestFirstFifo):
    """fifo, noting each cluster's period as the strategy sees it."""

    def __init__(self):
        self.periods: list[dict[str, float]] = []

    def decide(self, snapshot, state):
        self.periods.append({c.name: c.period for c in snapshot.clusters})
        return super().decide(snapshot, state)


def test_a_strategy_sees_the_time_between_the_cycles_looks_at_each_cluster():
    """Issue 21: a full queue takes jobs again at its next pass at the earliest; the strategy learns how far
    away that is from the time between the cycle's last two looks at the cluster."""
    busy = FakeRM("busy", 2, others=2, queue_depth=10)
    grid, _ = Grid.placed(busy, jobs=3)
    timing = Timing()
    grid.cycle.ctx.scheduler = timing
    grid.at(300)
    grid.at(420)
    assert timing.periods[-1] == {"busy": 120.0}


def test_a_clusters_hazard_is_read_from_its_counters_and_a_black_holes_ends_are_taken_back():
    """The run time under a cluster's hazard is the cluster's own sum, kept as jobs terminate (a pass reads a
    row per cluster, never the figures of every campaign that ever ran there); the ends taken back from a
    black hole leave it too."""
    store = Store(":memory:")
    try:
        store.add_kills("a", 2)
        store.add_durations([(1, "a", 30.0, 40.0), (2, "a", 50.0, 60.0), (2, "b", 10.0, 20.0)], 60.0)
        assert store.hazards(20.0) == {"a": pytest.approx(2 / 100)}
        store.remove_durations([(2, "a", 50.0, 60.0)], 60.0)
        assert store.hazards(20.0) == {"a": pytest.approx(2 / 50)}
        seen: list[str] = []
        store.conn.set_trace_callback(seen.append)
        store.hazards(20.0)
        store.conn.set_trace_callback(None)
        assert [sql for sql in seen if "cluster_stats" in sql] == []
    finally:
        store.close()


def test_a_state_from_before_the_clusters_run_time_counters_gets_them_from_its_figures(tmp_path):
    path = tmp_path / "state.db"
    conn = state_before(path, "029_cluster_seconds")
    try:
        conn.execute("INSERT INTO cluster_kills (cluster, kills) VALUES ('a', 3)")
        conn.executemany(
            "INSERT INTO cluster_stats (campaign_id, cluster, duration_sum, duration_n) VALUES (?, ?, ?, 1)",
            [(1, "a", 40.0), (2, "a", 60.0), (2, "b", 7.0)],
        )
        conn.commit()
    finally:
        conn.close()
    store = Store(path)
    try:
        assert store.hazards(0.0) == {"a": pytest.approx(3 / 100)}
        store.add_kills("b", 1)
        assert store.hazards(0.0) == {"a": pytest.approx(3 / 100), "b": pytest.approx(1 / 7)}
    finally:
        store.close()
