"""Resubmission through the real cycle on the local cluster: the attempt limit (JDL and configuration), exit
66 and 67, RM kills by their cause (preemptions bounded apart), the history of a job's ends in its
RESUBMIT_LIMIT event, and the pause of a campaign whose jobs fail too often."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cigri import campaigns as ops
from cigri import clusters, config
from cigri.adapters import AdapterContext, adapter_for
from cigri.clock import RealClock
from cigri.cycle import Cycle
from cigri.errors import ConfigError, JdlError
from cigri.jdl import load, parse
from cigri.model import CampaignState, EventCode, JobState, KillCause, RemoteState

from .conftest import wait_for, write_jdl

SCRIPT = """#!/bin/sh
name=$1; shift
here=$(dirname "$0")
echo "$name $*" >> "$here/runs.log"
echo "$name $CIGRI_WALLTIME_SECONDS" >> "$here/walltimes.log"
case "$1" in
  always66) exit 66 ;;
  once67) if [ ! -e "$here/$name.67" ]; then touch "$here/$name.67"; exit 67; fi ;;
  fail) echo "failure of $name" >&2; exit 3 ;;
  oom) kill -9 $$ ;;
  sleep:*) sleep "${1#sleep:}" ;;
esac
echo "done $name"
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "job.sh"
    path.write_text(SCRIPT)
    path.chmod(0o755)
    return path


def names(tmp_path: Path) -> list[str]:
    log = tmp_path / "runs.log"
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def submit(store, path: Path) -> int:
    return ops.submit(store, load(path), RealClock())[0]


def job_events(store, cid: int):
    """The campaign's open events but the blacklists its jobs' errors open (tests/test_events.py pins those)."""
    return [e for e in store.events(campaign_id=cid) if e.code != EventCode.BLACKLIST]


def until_event(cycle, store, cid: int, timeout: float = 40):
    return wait_for(lambda: (cycle.run(), job_events(store, cid))[1], timeout=timeout)


def until_over(cycle, store, cid: int, timeout: float = 40):
    over = (CampaignState.TERMINATED, CampaignState.PAUSED)
    wait_for(lambda: (cycle.run(), store.campaign(cid).state in over)[1], timeout=timeout)


def test_a_job_runs_at_most_three_times_by_default(store, cycle, tmp_path, script):
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), params=["r always66"]))
    [event] = until_event(cycle, store, cid)
    [blacklist] = [e for e in store.events(campaign_id=cid) if e.code == EventCode.BLACKLIST]
    assert (blacklist.parent_id, blacklist.cluster) == (event.id, "local"), "the limit is a job error there"
    assert names(tmp_path) == ["r"] * 3
    assert event.code == EventCode.RESUBMIT_LIMIT and event.job_id == 1
    assert store.job(1).state == JobState.EVENT and store.job(1).resubmits == 2
    # the history of its ends, one line each
    assert event.message.count("exit status 66") == 3 and "3 attempts" in event.message


def test_the_jdl_sets_a_campaigns_limit_and_the_configuration_the_default(store, cycle, tmp_path, script):
    config.set_value(store, "resubmit.max_attempts", 1)
    once = submit(store, write_jdl(tmp_path, name="once", exec_file=str(script), params=["a always66"]))
    until_event(cycle, store, once)
    assert names(tmp_path) == ["a"]
    four = submit(store, write_jdl(tmp_path, name="four", exec_file=str(script), params=["b always66"], max_attempts=4))
    until_event(cycle, store, four)
    assert names(tmp_path) == ["a"] + ["b"] * 4


@pytest.mark.parametrize("value", [0, -1, "three", True, 1.5])
def test_a_bad_attempt_limit_is_an_error_naming_it(tmp_path, value):
    with pytest.raises(JdlError, match=r"^max_attempts: "):
        parse({"name": "x", "exec_file": "/bin/true", "nb_jobs": 1, "clusters": {"c": {}}, "max_attempts": value})


@pytest.mark.parametrize("key", ["resubmit.max_attempts", "resubmit.max_resumes", "resubmit.failure_window"])
def test_a_bad_configured_limit_is_refused_and_not_written(store, key):
    with pytest.raises(ConfigError, match=rf"^{key}: "):
        config.set_value(store, key, 0)
    assert key not in store.settings()


def test_walltime_kills_are_attempts_and_the_event_tells_each_end(store, cycle, tmp_path, script):
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), walltime=1, params=["w sleep:30"], max_attempts=2))
    [event] = until_event(cycle, store, cid)
    assert names(tmp_path) == ["w", "w"]
    lines = [line for line in event.message.splitlines() if "on local" in line]
    assert len(lines) == 2 and all("walltime" in line for line in lines)


def test_exit_67_runs_again_after_every_fresh_job_was_launched(store, cycle, tmp_path, script):
    clusters.set_options(store, "local", {"slots": 1, "queue_depth": 0, "idle_exit": 2})
    params = ["a once67", "b", "c", "d"]
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), params=params))
    until_over(cycle, store, cid)
    assert names(tmp_path) == ["a", "b", "c", "d", "a"]
    assert store.campaign(cid).state == CampaignState.TERMINATED and store.job(1).resubmits == 1


class Preempting:
    """The real local adapter, whose walltime kills are reported as an OAR BESTEFFORT_KILL would be."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def states(self, remote_ids):
        out = self.inner.states(remote_ids)
        return {
            rid: replace(s, cause=KillCause.PREEMPTED) if s.state == RemoteState.KILLED else s for rid, s in out.items()
        }


def test_preemptions_are_not_attempts_but_are_bounded(store, tmp_path, script):
    config.set_value(store, "resubmit.max_resumes", 3)
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), walltime=1, params=["p sleep:30"], max_attempts=1))
    clock = RealClock()
    cycle = Cycle(
        store,
        clock,
        adapters=lambda name: Preempting(adapter_for(store.cluster(name), AdapterContext(store.directory, clock))),
    )
    try:
        [event] = until_event(cycle, store, cid, timeout=60)
    finally:
        cycle.close()
    assert names(tmp_path) == ["p"] * 4, "preempted, back three times, then an event"
    assert (
        event.code == EventCode.RESUBMIT_LIMIT and "went back 4 times without failing, last preempted" in event.message
    )
    assert store.job(1).resubmits == 0


class OutOfMemory(Preempting):
    """The real local adapter, whose jobs killed by SIGKILL are reported as Slurm's OUT_OF_MEMORY would be."""

    def states(self, remote_ids):
        out = self.inner.states(remote_ids)
        return {rid: replace(s, cause=KillCause.MEMORY) if s.exit_code == 137 else s for rid, s in out.items()}


def test_an_out_of_memory_end_is_an_event_for_the_user_not_a_retry(store, tmp_path, script):
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), params=["m oom"]))
    clock = RealClock()
    context = AdapterContext(store.directory, clock)
    cycle = Cycle(store, clock, adapters=lambda name: OutOfMemory(adapter_for(store.cluster(name), context)))
    try:
        [event] = until_event(cycle, store, cid)
    finally:
        cycle.close()
    assert event.code == EventCode.EXIT_ERROR and "exited with status 137 (out of memory)" in event.message
    assert names(tmp_path) == ["m"]


def test_a_campaign_failing_too_often_is_paused_until_its_event_is_fixed(store, cycle, tmp_path, script):
    config.set_value(store, "resubmit.failure_window", 10)
    # the failures end together (a job's error also blacklists its cluster: later ones would not run there)
    clusters.set_options(store, "local", {"slots": 12, "queue_depth": 0, "idle_exit": 2})
    params = [f"f{i} fail" for i in range(12)] + [f"ok{i}" for i in range(12)]
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), params=params))
    cycle.run()  # the twelve failing jobs fill the slots
    sent = [store.job(i).remote_id for i in range(1, 13)]
    assert all(sent) and not store.job(13).remote_id
    # the next pass comes after their ends, as it would a minute later from cron
    local = adapter_for(store.cluster("local"), AdapterContext(store.directory, RealClock()))
    ended = (RemoteState.EXITED, RemoteState.KILLED)
    wait_for(lambda: all(s.state in ended for s in local.states(sent).values()))
    until_over(cycle, store, cid)
    assert store.campaign(cid).state == CampaignState.PAUSED
    [paused] = [e for e in store.events(campaign_id=cid) if e.code == EventCode.FAILURE_RATE]
    assert "of its last 10 ends failed" in paused.message
    assert sorted(names(tmp_path)) == sorted(f"f{i}" for i in range(12)), "none of the others ran"
    ops.fix_events(store, RealClock(), event_id=paused.id, user=store.campaign(cid).user)
    assert store.campaign(cid).state == CampaignState.IN_TREATMENT


def test_resuming_a_campaign_paused_for_its_failures_closes_that_event(store, cycle, tmp_path, script):
    config.set_value(store, "resubmit.failure_window", 10)
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), params=[f"f{i} fail" for i in range(12)]))
    until_over(cycle, store, cid)
    assert store.campaign(cid).state == CampaignState.PAUSED
    ops.resume(store, cid, user=store.campaign(cid).user)
    assert EventCode.FAILURE_RATE not in {e.code for e in store.events(campaign_id=cid)}


def test_retry_resources_raise_the_walltime_of_each_retry_up_to_the_cap(store, cycle, tmp_path, script):
    retry = {"walltime": 2, "max_walltime": 3}
    jdl = write_jdl(tmp_path, exec_file=str(script), walltime=1, params=["s sleep:2.5"], retry_resources=retry)
    cid = submit(store, jdl)
    until_over(cycle, store, cid)
    walltimes = (tmp_path / "walltimes.log").read_text().split()
    assert walltimes == ["s", "1", "s", "2", "s", "3"], "x2 after each walltime kill, never above 3 s"
    assert store.job(1).state == JobState.TERMINATED


def test_ends_asking_to_run_again_are_not_failures_of_the_campaign(store, cycle, tmp_path, script):
    config.set_value(store, "resubmit.failure_window", 10)
    params = [f"r{i} always66" for i in range(12)]
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), params=params, max_attempts=1))
    wait_for(lambda: (cycle.run(), len(job_events(store, cid)) == 12)[1], timeout=40)
    assert {e.code for e in job_events(store, cid)} == {EventCode.RESUBMIT_LIMIT}
    assert store.campaign(cid).state == CampaignState.IN_TREATMENT, "exit 66 asks for a run, it is no failure"


def test_a_cluster_killing_every_job_at_once_does_not_pause_the_campaign():
    """An outage or an administrator kills the jobs a cluster ran (no cause of the job's own): they run again,
    and the campaign's failure rate does not count them (small.yaml's outage paused two campaigns)."""
    from .test_placement import FakeRM, Grid

    grid, cid = Grid.placed(FakeRM("a", 20, queue_depth=0), jobs=40)
    config.set_value(grid.store, "resubmit.failure_window", 10)
    rm = grid.clusters["a"]
    for job_id in rm.holds(RemoteState.PENDING):
        rm.start(job_id, 1.0)
    grid.at(2)
    for job_id in rm.holds(RemoteState.RUNNING):
        rm.kill(job_id, 3.0, reason="node failure")
    grid.at(4)
    assert grid.store.campaign(cid).state == CampaignState.IN_TREATMENT
    assert [e.code for e in grid.store.events(campaign_id=cid)] == []
