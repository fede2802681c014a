"""Pausing a campaign holds its queued jobs on their resource manager; resuming releases them."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from cigri import campaigns as ops
from cigri import clusters
from cigri.clock import RealClock
from cigri.cycle import Cycle
from cigri.errors import AdapterError
from cigri.jdl import load
from cigri.model import CampaignState, Capacity, EventClass, JobSpec, JobState, RemoteState, RemoteStatus
from cigri.sim.clock import SimClock
from cigri.sim.cluster import ClusterSpec, NodeGroup, SimCluster
from cigri.store import Store

from .conftest import runs, wait_for, write_jdl


class FakeRM:
    """A resource manager that queues everything and never starts it; it records holds and releases."""

    best_effort = False

    def __init__(self, name: str):
        self.name = name
        self.queue: dict[str, bool] = {}  # remote id -> held
        self.calls: list[tuple[str, list[str]]] = []
        self.fail_hold: Exception | None = None

    def capacity(self) -> Capacity:
        return Capacity(total=2, used=0, grid_used=0, queued=0)  # no queue_depth: 2 jobs a pass

    def submit(self, batch_key, specs):
        ids = [f"{batch_key}.{spec.job_id}" for spec in specs]
        self.queue.update(dict.fromkeys(ids, False))
        return ids

    def find_batch(self, batch_key):
        return None

    def states(self, remote_ids):
        queued = RemoteState.PENDING
        return {rid: RemoteStatus(rid, queued if rid in self.queue else RemoteState.KILLED) for rid in remote_ids}

    def cancel(self, remote_ids):
        self.calls.append(("cancel", list(remote_ids)))
        for rid in remote_ids:
            self.queue.pop(rid, None)

    def hold(self, remote_ids):
        self.calls.append(("hold", list(remote_ids)))
        if self.fail_hold:
            raise self.fail_hold
        self.queue.update({rid: True for rid in remote_ids if rid in self.queue})

    def release(self, remote_ids):
        self.calls.append(("release", list(remote_ids)))
        self.queue.update({rid: False for rid in remote_ids if rid in self.queue})

    def held(self) -> set[str]:
        return {rid for rid, held in self.queue.items() if held}

    def tail(self, remote_id, stream, lines):
        return ""

    def check(self, settings, path):
        pass

    def activity(self):
        return None

    def close(self):
        pass


@pytest.fixture
def rms(store):
    clusters.add(store, "other", "local", {}, RealClock())
    return {"local": FakeRM("local"), "other": FakeRM("other")}


@pytest.fixture
def fake_cycle(store, rms):
    return Cycle(store, RealClock(), adapters=rms.__getitem__)


def submit(store, rms, tmp_path, n=3, clusters=("local",)):
    params = [f"j{i}" for i in range(n)]
    jdl = write_jdl(tmp_path, exec_file="/bin/true", params=params, clusters={name: {} for name in clusters})
    return ops.submit(store, load(jdl), RealClock(), adapters=rms.__getitem__)[0]


def states(store, campaign_id):
    return Counter(j.state for j in store.jobs(campaign_id))


def test_pause_holds_queued_jobs_and_resume_releases_them(store, rms, fake_cycle, tmp_path):
    cid = submit(store, rms, tmp_path, n=2)
    fake_cycle.run()
    rm = rms["local"]
    assert len(rm.queue) == 2 and not rm.held()
    ops.pause(store, cid)
    fake_cycle.run()
    assert rm.held() == set(rm.queue)
    assert store.held_count(cid) == 2 and states(store, cid) == {JobState.SUBMITTED: 2}
    fake_cycle.run()
    assert [call for call, _ in rm.calls] == ["hold"]  # held jobs are not asked again
    ops.resume(store, cid)
    fake_cycle.run()
    assert not rm.held() and store.held_count(cid) == 0
    assert [call for call, _ in rm.calls] == ["hold", "release"]


def test_a_paused_campaigns_recorded_batch_is_submitted_then_held_in_the_same_pass(store, rms, fake_cycle, tmp_path):
    cid = submit(store, rms, tmp_path)
    fake_cycle.run(["metasched"])
    ops.pause(store, cid)
    fake_cycle.run()
    assert rms["local"].held() == set(rms["local"].queue) and len(rms["local"].queue) == 2
    assert store.held_count(cid) == 2


class Killed(BaseException):
    """A pass killed in the middle (SIGKILL does not unwind: nothing after the RM call runs)."""


def test_a_pass_killed_after_the_hold_asks_again_and_a_resume_releases(store, rms, fake_cycle, tmp_path, monkeypatch):
    cid = submit(store, rms, tmp_path)
    fake_cycle.run()
    ops.pause(store, cid)
    rm = rms["local"]
    record = store.set_hold

    def killed_once_the_rm_held_them(ids, value):  # the pass dies between the RM's answer and the commit
        if value == Store.HOLD_DONE:
            raise Killed()
        record(ids, value)

    monkeypatch.setattr(store, "set_hold", killed_once_the_rm_held_them)
    with pytest.raises(Killed):
        fake_cycle.run(["nikita"])
    monkeypatch.undo()
    assert rm.held() == set(rm.queue) and store.held_count(cid) == 0  # held, not recorded as such
    ops.resume(store, cid)  # resumed before any other pass: cigri must still release them
    Cycle(store, RealClock(), adapters=rms.__getitem__).run(["nikita"])
    assert not rm.held()
    assert rm.calls[-1] == ("release", sorted(rm.queue))


def test_a_cluster_that_fails_to_hold_gets_an_event_and_is_asked_again(store, rms, fake_cycle, tmp_path):
    cid = submit(store, rms, tmp_path, n=4, clusters=("local", "other"))
    fake_cycle.run()
    assert rms["local"].queue and rms["other"].queue
    ops.pause(store, cid)
    rms["other"].fail_hold = AdapterError("other: scontrol: permission denied")
    fake_cycle.run(["nikita"])
    assert rms["local"].held() == set(rms["local"].queue)
    assert not rms["other"].held()
    events = store.events(cls=EventClass.CLUSTER)
    assert [(e.cluster, e.message) for e in events] == [("other", "other: scontrol: permission denied")]
    rms["other"].fail_hold = None
    fake_cycle.run(["nikita"])
    assert rms["other"].held() == set(rms["other"].queue)
    assert store.held_count(cid) == 4 and not store.events(cls=EventClass.CLUSTER)


def test_cancelling_a_paused_campaign_kills_its_held_jobs(store, rms, fake_cycle, tmp_path):
    cid = submit(store, rms, tmp_path)
    fake_cycle.run()
    ops.pause(store, cid)
    fake_cycle.run()
    held = rms["local"].held()
    ops.cancel(store, cid, RealClock())
    fake_cycle.run()
    assert ("cancel", sorted(held)) in rms["local"].calls and not rms["local"].queue
    assert states(store, cid) == {JobState.CANCELLED: 3}  # 2 killed, 1 never submitted
    assert rms["local"].calls[-1][0] == "cancel"  # nothing released after the kill


def test_paused_jobs_do_not_start_on_the_local_cluster_until_resumed(store, cycle, cli, tmp_path, job_script):
    """One slot, busy with a job of another campaign: the paused campaign's jobs queue behind it, are held,
    and stay held when the slot frees up (the daemon step that records the end starts the next queued job)."""
    clusters.set_options(store, "local", {"slots": 1})
    busy = ops.submit(store, load(write_jdl(tmp_path, exec_file=str(job_script), params=["x sleep:1"])), RealClock())[0]
    cycle.run(["metasched", "runner"])
    wait_for(lambda: (cycle.run(["updator"]), states(store, busy)[JobState.RUNNING] == 1)[1])
    cid = ops.submit(store, load(write_jdl(tmp_path, exec_file=str(job_script), params=["p1", "p2"])), RealClock())[0]
    cycle.run(["metasched", "runner"])
    ops.pause(store, cid)
    cycle.run(["nikita"])
    spool = cycle.adapter("local").spool
    remote = [int(j.remote_id) for j in store.jobs(cid)]
    wait_for(lambda: (cycle.run(["updator"]), store.campaign(busy).state == CampaignState.TERMINATED)[1])
    assert sorted(state for _, state, *_ in spool.rows(remote)) == ["held", "held"]
    assert states(store, cid) == {JobState.SUBMITTED: 2}
    assert cli.json("gridstat", "-c", str(cid))["held"] == 2
    assert all(cli.json("gridstat", "-j", str(j.id))["held"] for j in store.jobs(cid))
    assert [line.split()[0] for line in runs(tmp_path)] == ["x"]
    ops.resume(store, cid)
    wait_for(lambda: (cycle.run(), store.campaign(cid).state == CampaignState.TERMINATED)[1])
    assert sorted(line.split()[0] for line in runs(tmp_path)) == ["p1", "p2", "x"]
    assert cli.json("gridstat", "-c", str(cid))["held"] == 0


def test_the_simulated_cluster_holds_and_releases_queued_jobs():
    clock = SimClock()
    cluster = SimCluster(ClusterSpec("sim", (NodeGroup(1, 1),)), clock, random.Random(0))
    specs = [JobSpec(i, 1, f"j{i}", ("run", f"j{i}", "10"), "~", 60) for i in range(3)]
    first, *queued = cluster.submit("cigri.x.1.b.1", specs)
    cluster.hold(queued)
    cluster.advance_to(30)  # the first job ends: the held ones still wait
    assert {rid: status.state for rid, status in cluster.states([first, *queued]).items()} == {
        first: RemoteState.EXITED
    }
    assert [cluster.jobs[rid].state for rid in queued] == [RemoteState.PENDING] * 2
    assert cluster.capacity().used == 0
    cluster.release(queued)
    cluster.release(queued)  # idempotent
    assert [cluster.jobs[rid].state for rid in queued] == [RemoteState.RUNNING, RemoteState.PENDING]
