"""nikita: flooding, timeouts and walltime kills, one cancel per cluster per pass, each job killed once; on the
simulated clusters (their own records say what ran and what was cancelled) and on the real local cluster."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cigri import campaigns as ops
from cigri import clusters, config
from cigri.adapters import AdapterContext, adapter_for
from cigri.clock import RealClock
from cigri.cycle import Cycle, nikita
from cigri.cycle.nikita import Active, Limits, Reason, choose
from cigri.errors import ConfigError, TransportError
from cigri.jdl import load
from cigri.model import EventClass, JobSpec, JobState, RemoteState
from cigri.sim.cluster import SimCluster
from cigri.sim.run import Simulation
from cigri.sim.scenario import parse

from .conftest import runs, wait_for, write_jdl

# ---- the choice, on random queues ---------------------------------------------------------------

LIMITS = Limits(queue_timeout=1000, walltime_grace=100)
NOW = 5000.0

active_jobs = st.lists(
    st.builds(
        Active,
        job_id=st.integers(1, 10_000),
        slots=st.integers(1, 8),
        running=st.booleans(),
        submitted_at=st.floats(NOW - 1200, NOW),
        started_at=st.floats(0, NOW),
        walltime=st.floats(1, 3000),
        free=st.booleans(),
        movable=st.booleans(),
    ),
    unique_by=lambda job: job.job_id,
    max_size=40,
)


@given(jobs=active_jobs, allowed=st.integers(0, 30))
def test_nikita_kills_each_job_once_for_one_reason_never_a_running_one_for_flooding(jobs, allowed):
    chosen = choose(jobs, NOW, allowed, LIMITS)
    by_id = {job.job_id: job for job in jobs}
    for job_id, reason in chosen.items():
        job = by_id[job_id]
        assert job.free, "a job with another kill, take-back or stop asked is left to it"
        if reason == Reason.WALLTIME:
            assert job.running and NOW - max(job.started_at, job.submitted_at) > job.walltime + LIMITS.walltime_grace
        else:
            assert not job.running and job.movable, "never a running, held or test job for flooding or a timeout"
        if reason == Reason.TIMEOUT:
            assert NOW - job.submitted_at > LIMITS.queue_timeout


@given(jobs=active_jobs, allowed=st.integers(0, 30))
def test_flooding_kills_the_newest_queued_jobs_until_the_others_fit_and_no_more(jobs, allowed):
    chosen = choose(jobs, NOW, allowed, LIMITS)
    queued = [j for j in jobs if j.free and j.movable and not j.running and chosen.get(j.job_id) != Reason.TIMEOUT]
    flooded = [j for j in queued if chosen.get(j.job_id) == Reason.FLOODING]
    left = [j for j in queued if j.job_id not in chosen]
    assert sum(j.slots for j in left) <= allowed
    age = lambda job: (job.submitted_at, job.job_id)  # noqa: E731
    assert all(age(f) > age(k) for f in flooded for k in left), "only the newest are killed"
    if flooded:
        oldest = min(flooded, key=age)
        assert sum(j.slots for j in left) + oldest.slots > allowed, "one job fewer killed would not fit"


def test_without_an_allowance_nothing_is_killed_for_flooding():
    queued = [Active(i, 1, False, NOW - 10, None, 60, True) for i in range(1, 50)]
    assert choose(queued, NOW, None, LIMITS) == {}
    assert set(choose(queued, NOW, 3, LIMITS)) == set(range(4, 50))


def test_a_job_has_run_no_longer_than_since_cigri_submitted_it_whatever_its_rm_clock_says():
    behind = Active(1, 1, True, submitted_at=NOW - 50, started_at=NOW - 10**8, walltime=60, free=True)
    assert choose([behind], NOW, None, LIMITS) == {}
    overran = replace(behind, submitted_at=NOW - 200, started_at=NOW - 170)
    assert choose([overran], NOW, None, LIMITS) == {1: Reason.WALLTIME}


# ---- the simulated clusters ---------------------------------------------------------------------


class Recording:
    """A real adapter seen through a thin wrapper: its cancel calls are recorded, and refused (as by an
    unreachable cluster) while ``refusing``."""

    def __init__(self, inner):
        self.inner = inner
        self.cancels: list[list[str]] = []
        self.refusing = False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def cancel(self, remote_ids: Sequence[str]) -> None:
        self.cancels.append(list(remote_ids))
        if self.refusing:
            raise TransportError(f"{self.inner.name}: connection reset during the cancel")
        self.inner.cancel(remote_ids)


def simulation(clusters: list[dict], jobs: int, **extra) -> tuple[Simulation, dict[str, Recording]]:
    """A simulation whose cycle reaches its clusters through recording wrappers."""
    data = {
        "name": "nikita",
        "period": 10,
        "max_time": 20000,  # a regression fails fast instead of simulating for days
        "clusters": clusters,
        "campaigns": [{"name": "c", "jobs": jobs, "duration": {"dist": "fixed", "value": 100}}],
        **extra,
    }
    sim = Simulation(parse(data))
    wrapped = {name: Recording(cluster) for name, cluster in sim.clusters.items()}
    sim.cycle.close()
    sim.cycle = Cycle(sim.store, sim.clock, adapters=wrapped.__getitem__)
    return sim, wrapped


def queued(cluster: SimCluster) -> list[str]:
    return [r for r, job in cluster.jobs.items() if job.state == RemoteState.PENDING]


def cancelled_queued(cluster: SimCluster) -> list[str]:
    """From the cluster's own records: the jobs cancelled before they started."""
    return [r for r, job in cluster.jobs.items() if job.reason == "cancelled" and job.started is None]


def test_flooding_kills_exactly_the_newest_queued_excess_and_every_job_still_runs_once():
    sim, _ = simulation([{"name": "a", "slots": 4, "queue_depth": 8}], jobs=40)
    a = sim.clusters["a"]
    seen = []

    def on_pass(s: Simulation) -> None:
        seen.append((queued(a), cancelled_queued(a), len(a.running)))
        if len(seen) == 1:
            a.queue_depth = 2  # the flow now lets 2 slots wait there: 6 of the 8 queued are too many

    result = sim.run(on_pass)
    (waiting, none, running), (_, killed, still_running) = seen[0], seen[1]
    assert (len(waiting), none, running) == (8, [], 4)
    assert sorted(killed, key=int) == sorted(waiting, key=int)[2:], "the 6 newest, no other"
    assert still_running == 4
    assert (result["jobs_done"], result["lost"], result["duplicated"]) == (40, 0, 0)
    assert result["clusters"]["a"]["cancelled_queued"] == 6
    assert result["clusters"]["a"]["killed"] == 0, "no running job was killed"
    assert all(n == 1 for n in a.usage.completions.values()) and len(a.usage.completions) == 40
    jobs = list(sim.store.jobs(1))
    assert all(j.resubmits == 0 and j.preemptions == 0 for j in jobs), "no failure, no resubmission"
    assert sim.store.events(open_only=False) == []


def test_grid_simulate_says_how_many_queued_jobs_were_cancelled(tmp_path, cli):
    path = tmp_path / "s.yaml"
    path.write_text(
        json.dumps(
            {
                "name": "flood",
                "period": 10,
                "clusters": [{"name": "a", "slots": 2, "queue_depth": 4}],
                "campaigns": [{"name": "c", "jobs": 10, "duration": {"dist": "fixed", "value": 100}}],
                "config": {"nikita.queue_timeout": 150},
            }
        )
    )
    data = json.loads(cli("simulate", str(path), "--json"))
    assert data["cancelled_queued"] > 0
    assert f"{data['cancelled_queued']} cancelled while queued" in cli("simulate", str(path))


def test_a_job_that_started_since_the_pass_began_is_not_killed_for_flooding():
    sim, _ = simulation([{"name": "a", "slots": 4, "queue_depth": 2}], jobs=10)
    a = sim.clusters["a"]
    sim._submit(sim.scenario.campaigns[0])
    sim.cycle.run(["updator", "spritz", "metasched", "runner"])  # 4 start at once, 2 wait: cigri saw no start
    assert [j.state for j in sim.store.jobs(1, [JobState.SUBMITTED])].count(JobState.SUBMITTED) == 6
    sim.cycle.ctx.allowed["a"] = 0  # this pass, the flow lets none wait there
    nikita.run(sim.cycle.ctx)
    assert (len(a.running), a.usage.killed, a.usage.cancelled_queued) == (4, 0, 2)
    assert [j.id for j in sim.store.jobs(1, [JobState.RUNNING])] == [1, 2, 3, 4]
    sim.cycle.close()


@settings(max_examples=15)
@given(
    depths=st.lists(st.integers(0, 8), min_size=1, max_size=30),
    slots=st.integers(1, 6),
    timeout=st.sampled_from([None, 40, 150]),
    delay=st.sampled_from([0, 5]),
)
def test_whatever_the_allowance_does_pass_after_pass_no_running_job_is_taken_back_and_each_job_runs_once(
    depths, slots, timeout, delay
):
    extra = {"config": {"nikita.queue_timeout": timeout}} if timeout else {}
    sim, _ = simulation([{"name": "a", "slots": slots, "queue_depth": depths[0], "delay": delay}], jobs=25, **extra)
    a = sim.clusters["a"]
    passes = []

    def on_pass(s: Simulation) -> None:
        passes.append(dict(s.cycle.report.counts))
        a.queue_depth = depths[len(passes) % len(depths)]

    result = sim.run(on_pass)
    assert result["clusters"]["a"]["killed"] == 0, "a queue's excess or timeout never kills a running job"
    assert (result["jobs_done"], result["lost"], result["duplicated"]) == (25, 0, 0)
    killed = sum(p.get("killed for flooding", 0) + p.get("killed after waiting", 0) for p in passes)
    assert killed == result["cancelled_queued"], "cigri's count and the cluster's own records agree"
    assert all(j.resubmits == 0 for j in sim.store.jobs(1))


def test_a_job_queued_past_the_timeout_is_killed_and_returned_to_its_bag():
    sim, _ = simulation([{"name": "a", "slots": 2, "queue_depth": 4}], jobs=10, config={"nikita.queue_timeout": 150})
    a = sim.clusters["a"]
    reports = []
    result = sim.run(lambda s: reports.append(dict(s.cycle.report.counts)))
    cancelled = [a.jobs[r] for r in cancelled_queued(a)]
    assert cancelled and all(job.ended - job.submitted > 150 for job in cancelled)
    assert sum(r.get("killed after waiting", 0) for r in reports) == len(cancelled)
    assert result["clusters"]["a"]["killed"] == 0
    assert (result["jobs_done"], result["lost"], result["duplicated"]) == (10, 0, 0)
    assert all(j.resubmits == 0 for j in sim.store.jobs(1))


def test_one_cancel_per_cluster_per_pass_and_a_failing_cancel_leaves_the_others_served():
    sim, wrapped = simulation(
        [{"name": "a", "slots": 2, "queue_depth": 6}, {"name": "b", "slots": 2, "queue_depth": 6}], jobs=40
    )
    a, b = sim.clusters["a"], sim.clusters["b"]
    calls: list[dict[str, list[list[str]]]] = []
    running_on_a: list[int] = []

    def on_pass(s: Simulation) -> None:
        calls.append({name: list(w.cancels) for name, w in wrapped.items()})
        for w in wrapped.values():
            w.cancels.clear()
        if len(calls) == 1:
            a.queue_depth = b.queue_depth = 1
            running_on_a.extend(job.job_id for job in a.running.values())
            ops.cancel_job(s.store, running_on_a[0])  # a user's kill, in the same pass as a's flooding
            wrapped["b"].refusing = True
        elif len(calls) == 2:
            wrapped["b"].refusing = False

    result = sim.run(on_pass)
    first, second = calls[1], calls[2]
    assert len(first["a"]) == 1 and len(first["a"][0]) == 6, "the user's kill and 5 flooding jobs, in one call"
    assert len(first["b"]) == 1, "asked once, refused"
    assert len(second["b"]) == 1 and sorted(second["b"][0]) == sorted(first["b"][0]), "asked again, the same"
    assert second["a"] == []
    assert all(len(per_pass[name]) <= 1 for per_pass in calls for name in per_pass)
    [event] = sim.store.events(cls=EventClass.CLUSTER, open_only=False)
    assert event.cluster == "b" and "connection reset" in event.message
    assert sim.store.job(running_on_a[0]).state == JobState.CANCELLED
    assert result["clusters"]["a"]["cancelled_queued"] == 5 and result["clusters"]["b"]["cancelled_queued"] == 5
    assert (result["jobs_done"], result["lost"], result["duplicated"]) == (39, 1, 0)  # the one the user cancelled


def test_a_kill_asked_before_a_refused_cancel_is_recorded_asked_again_and_not_for_another_reason():
    sim, wrapped = simulation([{"name": "a", "slots": 2, "queue_depth": 6}], jobs=20)
    a = sim.clusters["a"]
    asked: list[dict[int, str]] = []
    reports: list[dict[str, int]] = []

    def on_pass(s: Simulation) -> None:
        asked.append(dict(s.store.conn.execute("SELECT id, nikita FROM jobs WHERE nikita IS NOT NULL").fetchall()))
        reports.append(dict(s.cycle.report.counts))
        if len(asked) == 1:
            a.queue_depth = 1
            wrapped["a"].refusing = True
        elif len(asked) == 2:
            wrapped["a"].refusing = False
            config.set_value(s.store, "nikita.queue_timeout", 1)  # the jobs asked for flooding are overdue too

    sim.run(on_pass)
    assert asked[0] == {} and len(asked[1]) == 5 and set(asked[1].values()) == {"flooding"}
    assert asked[2] == {}, "killed at the next pass, then forgotten"
    refused, again = wrapped["a"].cancels[0], wrapped["a"].cancels[1]
    assert set(refused) <= set(again) and len(again) == len(set(again)), "asked again, each once"
    assert reports[2]["killed for flooding"] == 5, "still for flooding, not for the timeout"
    assert all(sim.store.job(job_id).resubmits == 0 for job_id in asked[1])


# ---- the local cluster --------------------------------------------------------------------------


def submit(store, path):
    return ops.submit(store, load(path), RealClock())[0]


def test_on_the_local_cluster_flooding_kills_the_newest_queued_jobs_and_they_run_later_once(
    store, tmp_path, job_script
):
    clusters.set_options(store, "local", {"slots": 2, "queue_depth": 4, "idle_exit": 2})
    params = ["a sleep:8", "b sleep:8", "c ok", "d ok", "e ok", "f ok"]
    cid = submit(store, write_jdl(tmp_path, exec_file=str(job_script), params=params))
    cycle = Cycle(store, RealClock())
    try:
        cycle.run(["metasched", "runner"])
        wait_for(lambda: (cycle.run(["updator"]), Counter(j.state for j in store.jobs(cid)))[1][JobState.RUNNING] == 2)
    finally:
        cycle.close()
    clusters.set_options(store, "local", {"queue_depth": 1})  # one job may wait there now
    cycle = Cycle(store, RealClock())
    try:
        report = cycle.run()
        jobs = {j.name: j for j in store.jobs(cid)}
        assert report.counts["killed for flooding"] == 3
        assert [n for n, j in jobs.items() if j.state == JobState.RUNNING] == ["a", "b"]
        assert [n for n, j in jobs.items() if j.state == JobState.SUBMITTED] == ["c"]
        assert all(jobs[n].state == JobState.TO_LAUNCH and jobs[n].resubmits == 0 for n in "def")
        wait_for(lambda: (cycle.run(), store.campaign(cid).state.value == "terminated")[1], timeout=60)
    finally:
        cycle.close()
    assert sorted(runs(tmp_path)) == sorted(params), "each job ran once"
    assert store.events(campaign_id=cid, open_only=False) == []


def test_on_the_local_cluster_a_users_kill_and_flooding_are_one_cancel_call(store, tmp_path, job_script):
    clusters.set_options(store, "local", {"slots": 2, "queue_depth": 3, "idle_exit": 2})
    cid = submit(store, write_jdl(tmp_path, exec_file=str(job_script), params=[f"j{i} sleep:20" for i in range(5)]))
    cycle = Cycle(store, RealClock())
    try:
        cycle.run(["metasched", "runner"])
        wait_for(lambda: (cycle.run(["updator"]), Counter(j.state for j in store.jobs(cid)))[1][JobState.RUNNING] == 2)
    finally:
        cycle.close()
    clusters.set_options(store, "local", {"queue_depth": 0})  # none may wait there now
    ops.cancel_job(store, 1)  # and the user kills a running one
    remote = {j.id: j.remote_id for j in store.jobs(cid)}
    clock, recorded = RealClock(), {}

    def recording(name: str) -> Recording:
        recorded[name] = Recording(adapter_for(store.cluster(name), AdapterContext(store.directory, clock)))
        return recorded[name]

    cycle = Cycle(store, clock, adapters=recording)
    try:
        report = cycle.run()
    finally:
        cycle.close()
    assert (report.counts["killed"], report.counts["killed for flooding"]) == (1, 3)
    [call] = recorded["local"].cancels
    assert sorted(call) == sorted(remote[i] for i in (1, 3, 4, 5))
    states = {j.id: j.state for j in store.jobs(cid)}
    assert states == {1: JobState.CANCELLED, 2: JobState.RUNNING, **dict.fromkeys((3, 4, 5), JobState.TO_LAUNCH)}


class Overrunning:
    """The real local adapter, told a far longer walltime than the job's: an RM that lets jobs overrun."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        return self.inner.submit(batch_key, [replace(spec, walltime=spec.walltime * 100) for spec in specs])


def test_on_the_local_cluster_a_job_past_its_walltime_and_the_grace_is_a_walltime_kill(
    store, tmp_path, job_script, monkeypatch
):
    config.set_value(store, "resubmit.max_attempts", 2)
    config.set_value(store, "nikita.walltime_grace", 1)
    cid = submit(store, write_jdl(tmp_path, exec_file=str(job_script), walltime=1, params=["w sleep:30"]))
    clock = RealClock()
    cycle = Cycle(
        store,
        clock,
        adapters=lambda name: Overrunning(adapter_for(store.cluster(name), AdapterContext(store.directory, clock))),
    )
    try:
        wait_for(lambda: (cycle.run(), store.events(campaign_id=cid))[1], timeout=40)
    finally:
        cycle.close()
    event, blacklist = store.events(campaign_id=cid)
    assert event.code.value == "RESUBMIT_LIMIT" and "past its walltime" in event.message
    assert (blacklist.code.value, blacklist.parent_id) == ("BLACKLIST", event.id)  # the cluster, for the campaign
    assert runs(tmp_path) == ["w sleep:30", "w sleep:30"], "killed, resubmitted once, killed again"
    assert store.job(1).resubmits == 1


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("nikita.queue_timeout", 0, "nikita.queue_timeout: expected seconds, at least 1, got 0"),
        ("nikita.walltime_grace", "soon", "nikita.walltime_grace: expected seconds, at least 0, got 'soon'"),
        ("nikita.walltime_grace", True, "nikita.walltime_grace: expected seconds, at least 0, got True"),
    ],
)
def test_bad_nikita_settings_are_refused_naming_the_key(store, key, value, message):
    with pytest.raises(ConfigError) as caught:
        config.set_value(store, key, value)
    assert str(caught.value) == message
    assert key not in store.settings()


def test_grid_config_sets_a_nikita_key(cli):
    cli("config", "set", "nikita.queue_timeout", "600")
    assert cli.json("config", "show")["nikita.queue_timeout"] == 600
    assert "nikita.queue_timeout: expected seconds" in cli("config", "set", "nikita.queue_timeout", "-5", code=4)
