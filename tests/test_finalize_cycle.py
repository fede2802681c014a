"""finalize in the cycle, on two real local clusters: replicas submitted once, the first copy to end wins."""

from __future__ import annotations

import subprocess
import textwrap
from collections import Counter

from cigri import campaigns as ops
from cigri import clusters
from cigri.clock import RealClock
from cigri.jdl import load
from cigri.model import CampaignState, JobState

from .conftest import PYTHON, runs, wait_for, write_jdl


def script(tmp_path, name, body):
    """A job that runs ``body`` first, then the shared job script (which logs its run)."""
    path = tmp_path / f"{name}.sh"
    path.write_text(f'#!/bin/sh\n{body}\nexec "$(dirname "$0")/job.sh" "$@"\n')
    path.chmod(0o755)
    return str(path)


def finalizing(store, tmp_path, job_script, *, annex, local, params=("a",)):
    """One campaign with finalize on both clusters: its job goes to annex first (the first cluster by name),
    its replica to local (annex's one slot is then taken). ``annex``, ``local``: each copy's first lines."""
    clusters.add(store, "annex", "local", {"slots": 1, "idle_exit": 2}, RealClock())
    path = write_jdl(
        tmp_path,
        exec_file=str(job_script),
        params=list(params),
        finalize=True,
        clusters={
            "annex": {"exec_file": script(tmp_path, "on-annex", annex)},
            "local": {"exec_file": script(tmp_path, "on-local", local)},
        },
    )
    return ops.submit(store, load(path), RealClock())[0]


def replica_states(store):
    return Counter(state for (state,) in store.conn.execute("SELECT state FROM replicas"))


class Passes:
    """Runs passes, adding up what they report."""

    def __init__(self, cycle):
        self.cycle = cycle
        self.counts = Counter()

    def __call__(self, stages=None):
        report = self.cycle.run(stages) if stages else self.cycle.run()
        self.counts.update(report.counts)
        return report

    def until(self, condition, timeout=30.0):
        return wait_for(lambda: (self(), condition())[1], timeout=timeout)


def test_a_replica_that_ends_first_wins_and_the_original_is_killed(store, cycle, cli, tmp_path, job_script):
    cid = finalizing(store, tmp_path, job_script, annex="sleep 30", local="")
    passes = Passes(cycle)
    passes.until(lambda: store.campaign(cid).state == CampaignState.TERMINATED)
    job = store.job(1)
    assert (job.state, job.cluster, job.exit_code) == (JobState.TERMINATED, "local", 0)
    assert passes.counts["replicas killed"] == 1 and passes.counts["terminated"] == 1
    assert runs(tmp_path) == ["a "]  # the replica's run: the original never reached job.sh
    wait_for(lambda: cycle.adapter("annex").capacity().used == 0)
    assert store.stats(cid)["duration_n"] == 1  # its result kept once
    [(started, killed_state)] = store.conn.execute("SELECT started_at, state FROM replicas").fetchall()
    assert killed_state == "killed" and started is not None  # the row now holds the original's copy
    assert cli("gridstat", "-j", "1", "-O") == "done a\n"  # the output read is the replica's


def test_an_original_that_ends_first_cancels_its_replica(store, cycle, tmp_path, job_script):
    cid = finalizing(store, tmp_path, job_script, annex="sleep 2", local="sleep 30")
    passes = Passes(cycle)
    passes.until(lambda: replica_states(store)["running"] == 1)
    passes.until(lambda: store.campaign(cid).state == CampaignState.TERMINATED)
    assert store.job(1).cluster == "annex"
    assert passes.counts["replicas killed"] == 1
    assert replica_states(store) == {"killed": 1}
    wait_for(lambda: cycle.adapter("local").capacity().used == 0)


def test_a_failed_replica_is_dropped_without_an_event(store, cycle, tmp_path, job_script):
    cid = finalizing(store, tmp_path, job_script, annex="sleep 3", local="exit 3")
    passes = Passes(cycle)
    passes.until(lambda: store.campaign(cid).state == CampaignState.TERMINATED)
    assert replica_states(store) == {"failed": 1}
    assert store.events(campaign_id=cid, open_only=False) == []
    assert store.job(1).cluster == "annex" and passes.counts["replicas killed"] == 0


def test_a_paused_campaign_cancels_its_replicas(store, cycle, tmp_path, job_script):
    cid = finalizing(store, tmp_path, job_script, annex="sleep 30", local="sleep 30")
    passes = Passes(cycle)
    passes.until(lambda: replica_states(store)["running"] == 1)
    ops.pause(store, cid)
    passes()
    assert replica_states(store) == {"killed": 1} and passes.counts["replicas killed"] == 1
    wait_for(lambda: cycle.adapter("local").capacity().used == 0)
    assert store.job(1).state == JobState.RUNNING  # the original runs on
    assert sum(store.usage(RealClock().now(), 1e9).values()) > 0  # the killed replica's slot-seconds
    ops.cancel(store, cid, RealClock())
    passes()


def test_no_replica_without_finalize(store, cycle, tmp_path, job_script):
    clusters.add(store, "annex", "local", {"slots": 1, "idle_exit": 2}, RealClock())
    path = write_jdl(tmp_path, exec_file=str(job_script), params=["a sleep:2"], clusters={"annex": {}, "local": {}})
    cid = ops.submit(store, load(path), RealClock())[0]
    passes = Passes(cycle)
    passes.until(lambda: store.campaign(cid).state == CampaignState.TERMINATED)
    assert replica_states(store) == {} and store.job(1).cluster == "annex"


CRASH = textwrap.dedent(
    """
    import os, signal, sys
    from cigri.cli import grid
    from cigri.store import Store
    def crash(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    Store.submitted_replica = crash
    grid(["--state", sys.argv[1], "almighty"])
    """
)


def test_a_pass_killed_after_submitting_a_replica_does_not_submit_it_twice(store, cycle, tmp_path, job_script, state):
    cid = finalizing(store, tmp_path, job_script, annex="sleep 30", local="sleep 3")
    Passes(cycle)()  # the job goes to annex
    cycle.close()
    killed = subprocess.run([PYTHON, "-c", CRASH, str(state)], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    assert replica_states(store) == {"launching": 1}  # on local's RM, not recorded as submitted
    passes = Passes(cycle)
    passes.until(lambda: store.campaign(cid).state == CampaignState.TERMINATED)
    assert passes.counts["replicas submitted"] == 1  # found under its key, not submitted again
    assert runs(tmp_path) == ["a "]  # one run of job.sh: the replica's, once
    assert store.job(1).cluster == "local"


def test_a_cancelled_campaign_cancels_its_replicas(store, cycle, tmp_path, job_script):
    cid = finalizing(store, tmp_path, job_script, annex="sleep 30", local="sleep 30")
    passes = Passes(cycle)
    passes.until(lambda: replica_states(store)["running"] == 1)
    ops.cancel(store, cid, RealClock())
    passes()
    assert replica_states(store) == {"killed": 1} and passes.counts["replicas killed"] == 1
    assert store.job(1).state == JobState.CANCELLED
    wait_for(lambda: cycle.adapter("local").capacity().used == 0)


def test_a_job_sent_back_to_its_bag_goes_on_as_its_running_replica(store, cycle, tmp_path, job_script):
    # the original asks to be resubmitted (exit 66) while its replica runs: the replica becomes the job
    cid = finalizing(store, tmp_path, job_script, annex="sleep 2; exit 66", local="sleep 4")
    passes = Passes(cycle)
    passes.until(lambda: store.campaign(cid).state == CampaignState.TERMINATED)
    assert passes.counts["replicas promoted"] == 1 and passes.counts["resubmitted"] == 1
    job = store.job(1)
    assert (job.state, job.cluster, job.resubmits) == (JobState.TERMINATED, "local", 1)
    assert runs(tmp_path) == ["a "]  # no third copy ran
    assert replica_states(store) == {"promoted": 1}


def test_a_replica_left_unrecorded_by_a_killed_pass_is_found_by_its_key_and_killed(
    store, cycle, tmp_path, job_script, state
):
    cid = finalizing(store, tmp_path, job_script, annex="sleep 2", local="sleep 30")
    Passes(cycle)()
    killed = subprocess.run([PYTHON, "-c", CRASH, str(state)], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    wait_for(lambda: cycle.adapter("local").capacity().used == 1)  # the replica runs, unknown to the state
    wait_for(lambda: cycle.adapter("annex").capacity().used == 0)  # and the original is over
    passes = Passes(cycle)
    passes()
    assert store.campaign(cid).state == CampaignState.TERMINATED and store.job(1).cluster == "annex"
    assert replica_states(store) == {"killed": 1} and passes.counts["replicas killed"] == 1
    wait_for(lambda: cycle.adapter("local").capacity().used == 0)
