"""What the metascheduler stage shows the strategies, what it keeps of their state, and how it carries out
their stops: cycle-level, on clusters under the test's hand (tests/test_placement.py's fake RM)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from cigri import campaigns as ops
from cigri import config, scheduling
from cigri.errors import TransportError
from cigri.jdl import parse
from cigri.model import EventClass, JobState, RemoteState
from cigri.scheduling import Decision, GridJob, Snapshot, Stop, TestFirstFifo

from .conftest import write_jdl
from .test_placement import FakeRM, Grid

WEEK = 604800.0


class Probe(TestFirstFifo):
    """fifo's launches; remembers every snapshot and state it was given, counts its passes in its state."""

    name = "probe"
    seen: ClassVar[list[tuple[Snapshot, dict]]] = []

    def decide(self, snapshot, state):
        Probe.seen.append((snapshot, dict(state)))
        decision = super().decide(snapshot, state)
        return Decision(launches=decision.launches, state={"passes": state.get("passes", 0) + 1})


class StopFirstRunning(TestFirstFifo):
    """fifo, and a stop of the first running grid job it sees (or of a job ``wrong`` names on a cluster it
    is not on)."""

    name = "stopper"
    wrong: ClassVar[tuple[str, int] | None] = None

    def decide(self, snapshot, state):
        decision = super().decide(snapshot, state)
        if StopFirstRunning.wrong is not None:
            return Decision(launches=decision.launches, stops=(Stop(*StopFirstRunning.wrong, "wrong place"),))
        running = [(c.name, j.job_id) for c in snapshot.clusters for j in c.jobs if j.running]
        stops = (Stop(*running[0], "make room"),) if running else ()
        return Decision(launches=decision.launches, stops=stops)


class HalfLife(TestFirstFifo):
    """Stands for the fairshare strategy, whose ``half_life`` option is also the usage's half-life."""

    name = "fairshare"

    @classmethod
    def configure(cls, options):
        return cls()


@pytest.fixture(autouse=True)
def strategies(monkeypatch):
    monkeypatch.setattr("cigri.scheduling._REGISTRY", dict(scheduling._REGISTRY))
    for strategy in (Probe, StopFirstRunning, HalfLife):
        scheduling.register(strategy)
    Probe.seen = []
    StopFirstRunning.wrong = None


def submit(grid: Grid, jobs: int, clusters=None, **jdl) -> int:
    data = {
        "name": "c",
        "exec_file": "run",
        "clusters": {name: {} for name in clusters or grid.clusters},
        "params": [f"j{i}" for i in range(jobs)],
        **jdl,
    }
    return ops.submit(grid.store, parse(data), grid.clock, user="alice", adapters=grid.clusters.__getitem__)[0]


def probe(grid: Grid, t: float) -> Snapshot:
    grid.at(t)
    return Probe.seen[-1][0]


def test_the_snapshot_shows_each_cluster_with_cigris_jobs_there():
    a = FakeRM("a", 4, others=1)
    grid = Grid(a)
    grid.store.set_cluster_config("a", {"properties": {"gpu": "yes"}})
    config.set_value(grid.store, "metasched", "probe")
    cid = submit(grid, 5, resources="core=2")
    grid.at(0)  # one job of 2 slots fits in the 3 free ones; the queue takes more
    queued = a.holds(RemoteState.PENDING)
    a.start(queued[0], 5.0)
    cluster = probe(grid, 10).cluster("a")
    assert (cluster.slots, cluster.used, cluster.properties) == (4, 1 + 1, {"gpu": "yes"})
    assert cluster.jobs[0] == GridJob(queued[0], cid, 2, 0.0, 5.0)
    assert [j.job_id for j in cluster.jobs if not j.running] == queued[1:]
    assert cluster.grid_running == 2
    assert cluster.running == {cid: 1}, "cigri's running jobs per campaign: the pace it frees slots at"


def test_the_snapshot_shows_each_campaigns_keys_size_progress_and_estimate():
    a = FakeRM("a", 2, queue_depth=0)
    grid = Grid(a)
    config.set_value(grid.store, "metasched", "probe")
    cid = submit(grid, 6, priority=3, **{"class": "physics", "finalize": True})
    grid.at(0)
    a.end(1, 10.0, started=0.0)
    a.end(2, 30.0, started=0.0)
    campaign = probe(grid, 40).campaign(cid)
    assert (campaign.priority, campaign.klass, campaign.finalize) == (3, "physics", True)
    assert (campaign.total, campaign.waiting, campaign.active) == (6, 4, 0)
    assert (campaign.estimate, campaign.confidence) == (20.0, 2)


def test_a_campaign_none_of_whose_jobs_ended_shows_how_long_its_running_ones_have_run():
    """Without an estimate, the longest run so far is a floor of its jobs' duration (issue 21: long jobs keep
    off clusters that kill them before any of them ends)."""
    a = FakeRM("a", 2, queue_depth=0)
    grid = Grid(a)
    config.set_value(grid.store, "metasched", "probe")
    cid = submit(grid, 4)
    grid.at(0)
    a.start(1, 5.0)
    a.start(2, 400.0)
    campaign = probe(grid, 1000).campaign(cid)
    assert (campaign.estimate, campaign.ran_for, campaign.floor) == (None, 995.0, 995.0)
    a.end(2, 1100.0)
    campaign = probe(grid, 1200).campaign(cid)
    assert (campaign.estimate, campaign.ran_for, campaign.floor) == (700.0, 0.0, 700.0), "an end tells more"


def test_a_waiting_job_that_failed_on_a_cluster_counts_there():
    a, b = FakeRM("a", 1), FakeRM("b", 1)
    grid = Grid(a, b)
    config.set_value(grid.store, "metasched", "probe")
    cid = submit(grid, 4)
    grid.at(0)
    on_a = a.holds(RemoteState.PENDING)[0]
    a.kill(on_a, 5.0)
    campaign = probe(grid, 10).campaign(cid)
    assert campaign.demands["a"].failed == 1 and campaign.demands["b"].failed == 0
    grid.clusters[grid.job(on_a).cluster].end(on_a, 30.0, started=20.0)  # its next run ends well: forgotten
    assert probe(grid, 40).campaign(cid).demands["a"].failed == 0


def test_users_usage_is_their_slot_seconds_halved_every_half_life():
    a = FakeRM("a", 4)
    grid = Grid(a)
    config.set_value(grid.store, "metasched", "probe")
    submit(grid, 1, resources="core=2")
    grid.at(0)
    a.end(1, 100.0, started=0.0)
    assert probe(grid, 100).usage == {}  # the job's end is read in this pass, after the snapshot
    submit(grid, 1)
    assert probe(grid, 100 + WEEK).usage == {"alice": pytest.approx(200 / 2)}


def test_the_usage_half_life_is_the_fairshare_strategys():
    a = FakeRM("a", 4)
    grid = Grid(a)
    config.set_value(grid.store, "metasched", "probe")
    config.set_value(grid.store, "metasched.fairshare.half_life", 100)
    submit(grid, 1, resources="core=2")
    grid.at(0)
    a.end(1, 100.0, started=0.0)
    grid.at(100)
    submit(grid, 1)
    assert probe(grid, 200).usage == {"alice": pytest.approx(200 / 2)}


def test_each_strategy_finds_the_state_it_left():
    grid = Grid(FakeRM("a", 1))
    config.set_value(grid.store, "metasched", "probe")
    submit(grid, 10)
    for t in (0, 10, 20):
        grid.at(t)
    assert [state for _, state in Probe.seen] == [{}, {"passes": 1}, {"passes": 2}]
    assert grid.store.strategy_states()["probe"] == {"passes": 3}


def test_a_cluster_with_its_own_strategy_is_decided_by_it_after_the_others():
    a, b = FakeRM("a", 2, queue_depth=0), FakeRM("b", 3, queue_depth=0)
    grid = Grid(a, b)
    config.set_value(grid.store, "clusters.b.metasched", "probe")
    cid = submit(grid, 4)
    grid.at(0)
    snapshot, _ = Probe.seen[-1]
    assert [c.name for c in snapshot.clusters] == ["b"]
    assert set(snapshot.campaign(cid).demands) == {"b"}
    assert snapshot.campaign(cid).waiting == 2  # fifo placed two on a
    assert (len(a.holds(RemoteState.PENDING)), len(b.holds(RemoteState.PENDING))) == (2, 2)


def one_running(a: FakeRM) -> tuple[Grid, int]:
    """A campaign of two jobs on cluster ``a`` (one slot): job 1 running since t=0, job 2 waiting."""
    grid = Grid(a)
    campaign_id = submit(grid, 2)
    grid.at(0)
    a.start(1, 0.0)
    return grid, campaign_id


def test_a_stopped_job_is_cancelled_and_returned_to_its_bag_as_a_preemption():
    a = FakeRM("a", 1, queue_depth=0)
    grid, cid = one_running(a)
    config.set_value(grid.store, "metasched", "stopper")
    grid.at(50)
    report = grid.cycle.report.counts
    job = grid.job(1)
    assert a.remote_of(1) in a.cancelled and report["preempted"] == 1
    assert (job.state, job.preemptions, job.resubmits) == (JobState.TO_LAUNCH, 1, 0)
    assert grid.store.events(cls=EventClass.JOB) == [] and grid.store.counts(cid)[JobState.EVENT] == 0
    assert grid.store.usage(50, WEEK) == {"alice": pytest.approx(50)}


class CancelFails(FakeRM):
    def cancel(self, remote_ids):
        raise TransportError(f"{self.name}: cancel timed out")


def test_a_stop_the_cluster_fails_to_carry_out_is_tried_again_later():
    a = CancelFails("a", 1, queue_depth=0)
    grid, _ = one_running(a)
    config.set_value(grid.store, "metasched", "stopper")
    grid.at(50)
    assert grid.job(1).state == JobState.RUNNING and grid.store.jobs_to_stop()
    a.__class__ = FakeRM  # it answers again
    grid.at(100)
    assert (grid.job(1).state, grid.job(1).preemptions) == (JobState.TO_LAUNCH, 1)


def test_a_stop_naming_a_job_not_on_that_cluster_is_ignored():
    a, b = FakeRM("a", 1, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    grid = Grid(a, b)
    submit(grid, 2)
    grid.at(0)
    on_a = a.holds(RemoteState.PENDING)[0]
    a.start(on_a, 0.0)
    StopFirstRunning.wrong = ("b", on_a)
    config.set_value(grid.store, "metasched", "stopper")
    grid.at(50)
    assert grid.job(on_a).state == JobState.RUNNING and not a.cancelled and not grid.store.jobs_to_stop()


def test_a_stopped_job_found_killed_by_a_pass_that_died_before_recording_it_is_a_preemption():
    """The runner cancelled it and the pass was killed before it returned the job to its bag."""
    a = FakeRM("a", 1, queue_depth=0)
    grid, _ = one_running(a)
    with grid.store.transaction():
        grid.store.request_stop([1])
    a.kill(1, 40.0, "cancelled")
    grid.at(50, ["updator"])
    job = grid.job(1)
    assert (job.state, job.preemptions, job.resubmits) == (JobState.TO_LAUNCH, 1, 0)
    assert grid.store.failed_waiting(1) == {} and grid.cycle.report.counts["preempted"] == 1


def test_gridstat_shows_a_jobs_preemptions(cli, store, tmp_path, job_script):
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["a ok"]))
    job = next(store.jobs(cid))
    with store.transaction():
        store.requeue([job.id], count_resubmit=False, preempted=True)
    assert cli.json("gridstat", "-j", str(job.id))["preemptions"] == 1
