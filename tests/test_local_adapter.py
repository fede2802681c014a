"""The local resource manager with real processes: slots, walltime, exit codes, cancel, environment."""

from __future__ import annotations

import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest

from cigri.adapters import AdapterContext, adapter_for
from cigri.adapters.local_rm import Spool
from cigri.clock import RealClock
from cigri.errors import JdlError
from cigri.model import Cluster, JobSpec, KillCause, RemoteState

from .conftest import wait_for


@pytest.fixture
def local(tmp_path: Path):
    adapter = adapter_for(Cluster("box", "local", {"slots": 2, "idle_exit": 2}), AdapterContext(tmp_path, RealClock()))
    yield adapter
    adapter.stop()
    adapter.close()


def spec(i: int, *argv: str, walltime: int = 30, slots: int = 1, directory: str = "/tmp") -> JobSpec:
    return JobSpec(
        job_id=i,
        campaign_id=7,
        name=f"j{i}",
        argv=argv,
        directory=directory,
        walltime=walltime,
        slots=slots,
        resources=f"core={slots}",
        user="alice",
    )


def finished(adapter, ids):
    states = adapter.states(ids)
    done = all(s.state not in (RemoteState.PENDING, RemoteState.RUNNING) for s in states.values())
    return states if done else None


def test_exit_codes_output_and_missing_programs(local, tmp_path):
    ids = local.submit(
        "k1",
        [
            spec(1, "sh", "-c", "echo out; echo err >&2"),
            spec(2, "sh", "-c", "exit 7"),
            spec(3, str(tmp_path / "missing")),
        ],
    )
    states = wait_for(lambda: finished(local, ids))
    assert [states[i].exit_code for i in ids] == [0, 7, 127]
    assert local.tail(ids[0], "stdout", 5) == "out" and local.tail(ids[0], "stderr", 5) == "err"
    assert "cannot start" in local.tail(ids[2], "stderr", 5)


def test_submission_is_idempotent_by_batch_key(local):
    first = local.submit("same", [spec(1, "true"), spec(2, "true")])
    assert local.submit("same", [spec(1, "true"), spec(2, "true")]) == first
    assert local.find_batch("same") == first and local.find_batch("other") is None


def test_never_more_jobs_than_slots_and_cores_take_slots(local, tmp_path):
    log = tmp_path / "overlap.log"
    body = f"echo start $(date +%s.%N) >> {log}; sleep 0.3; echo end $(date +%s.%N) >> {log}"
    ids = local.submit("k", [spec(i, "sh", "-c", body) for i in range(5)] + [spec(9, "sh", "-c", body, slots=2)])
    wait_for(lambda: finished(local, ids))
    events = sorted(
        (float(t), +1 if kind == "start" else -1) for kind, t in (line.split() for line in log.read_text().splitlines())
    )
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert peak == 2


def test_walltime_kills(local):
    ids = local.submit("k", [spec(1, "sleep", "30", walltime=1)])
    states = wait_for(lambda: finished(local, ids), timeout=15)
    assert states[ids[0]].state == RemoteState.KILLED and states[ids[0]].reason == "walltime"
    assert states[ids[0]].cause == KillCause.WALLTIME


def test_a_checkpointing_job_gets_its_signal_a_grace_before_its_walltime(local, tmp_path):
    mark = tmp_path / "signalled"
    body = f'trap "echo USR2 > {mark}; exit 0" USR2; sleep 30 & wait'
    checkpointing = replace(spec(1, "sh", "-c", body, walltime=4), checkpoint_signal="USR2", checkpoint_grace=3)
    ids = local.submit("k", [checkpointing, spec(2, "sh", "-c", body, walltime=1)])
    states = wait_for(lambda: finished(local, ids), timeout=15)
    assert (states[ids[0]].state, states[ids[0]].exit_code) == (RemoteState.EXITED, 0)
    assert states[ids[0]].ended_at - states[ids[0]].started_at < 3, "signalled 1 s after its start"
    assert mark.read_text() == "USR2\n"
    assert states[ids[1]].cause == KillCause.WALLTIME, "no signal without checkpointing"


def test_cancel_queued_and_running(local):
    ids = local.submit("k", [spec(i, "sleep", "30") for i in range(4)])
    wait_for(lambda: sum(s.state == RemoteState.RUNNING for s in local.states(ids).values()) == 2)
    local.cancel(ids)
    states = wait_for(lambda: finished(local, ids))
    assert {s.state for s in states.values()} == {RemoteState.KILLED}
    assert {s.cause for s in states.values()} == {KillCause.ADMIN}  # running or queued, cancelled


def test_environment_has_every_cigri_variable(local, tmp_path):
    out = tmp_path / "env.txt"
    ids = local.submit("k", [spec(4, "sh", "-c", f"env | grep ^CIGRI_ | sort > {out}", directory=str(tmp_path))])
    wait_for(lambda: finished(local, ids))
    env = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert env["CIGRI_CAMPAIGN_ID"] == env["CIGRI_CAMPAIGNID"] == "7"
    assert env["CIGRI_JOB_ID"] == env["CIGRI_JOBID"] == "4"
    assert env["CIGRI_JOB_NAME"] == env["CIGRI_JOBNAME"] == "j4"
    assert env["CIGRI_WORKDIR"] == env["CIGRI_WORKING_DIRECTORY"] == str(tmp_path)
    assert env["CIGRI_WALLTIME"] == "00:00:30" and env["CIGRI_WALLTIME_SECONDS"] == "30"
    assert env["CIGRI_USER"] == "alice" and env["CIGRI_RESOURCES"] == "core=1"
    assert Path(env["CIGRI_NODE_FILE"]).read_text().count("\n") == 1 and env["CIGRI_NODEFILE"] == env["CIGRI_NODE_FILE"]


def test_home_macros_expand_to_the_clusters_home(local, tmp_path, monkeypatch):
    local.home = str(tmp_path)
    ids = local.submit("k", [spec(1, "sh", "-c", "pwd", directory="{HOME}")])
    wait_for(lambda: finished(local, ids))
    assert local.tail(ids[0], "stdout", 1) == str(tmp_path)


def test_a_killed_daemon_is_replaced_and_its_jobs_reported_lost(local):
    ids = local.submit("k", [spec(1, "sleep", "5"), spec(2, "true")])

    def one_runs_two_ended():  # the kill comes once the daemon recorded the second's end (a loaded machine is slow)
        states = local.states(ids)
        return states[ids[0]].state == RemoteState.RUNNING and states[ids[1]].state == RemoteState.EXITED

    wait_for(one_runs_two_ended)
    os.kill(local.spool.daemon_pid(), signal.SIGKILL)
    wait_for(lambda: local.spool.daemon_pid() is None)
    states = wait_for(lambda: finished(local, ids), timeout=15)  # states() starts a new daemon
    assert states[ids[0]].state == RemoteState.KILLED and "stopped while the job ran" in states[ids[0]].reason
    assert (states[ids[0]].cause, states[ids[1]].cause) == (KillCause.OTHER, None)


def test_daemon_exits_when_idle_and_restarts_on_demand(local):
    local.spool.set_meta({"idle_exit": 1})
    ids = local.submit("k", [spec(1, "true")])
    wait_for(lambda: finished(local, ids))
    wait_for(lambda: local.spool.daemon_pid() is None, timeout=10)
    ids = local.submit("k2", [spec(2, "true")])
    assert wait_for(lambda: finished(local, ids))[ids[0]].exit_code == 0


def test_capacity_and_check(local):
    assert local.capacity().total == 2
    with pytest.raises(JdlError, match=r"clusters\.box\.resources: the local cluster .box. has one node"):
        local.check({"resources": "/nodes=2/core=1"}, "clusters.box")
    with pytest.raises(JdlError, match="4 cores asked"):
        local.check({"resources": "core=4"}, "clusters.box")
    local.check({"resources": "/nodes=1/core=2"}, "clusters.box")


def test_spool_is_private(local):
    assert (local.spool.dir / "out").stat().st_mode & 0o077 == 0


def test_the_local_rm_never_reuses_a_forgotten_job_id(tmp_path):
    """griddel --purge forgets ended jobs' rows (Spool.forget): the next job gets a new id all the same, so
    nothing left of the old one (its outputs, a late word of its process) is taken for the new one's."""
    spool = Spool(tmp_path / "spool")
    job = {"argv": ["true"], "cwd": str(tmp_path), "env": {}, "walltime": 60, "slots": 1}
    [first] = spool.submit("a", [job], 0.0)
    with spool.conn:
        spool.conn.execute("UPDATE jobs SET state = 'terminated' WHERE id = ?", (first,))
    spool.forget([first])
    [second] = spool.submit("b", [job], 1.0)
    spool.close()
    assert second > first
