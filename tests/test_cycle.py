"""The almighty cycle on the real local cluster: each stage's effect, failures, and killed passes."""

from __future__ import annotations

import sqlite3
import subprocess
import textwrap
import threading
from collections import Counter

import pytest
from click.testing import CliRunner

from cigri import campaigns as ops
from cigri import clusters
from cigri.adapters.local import LocalAdapter
from cigri.cli import grid
from cigri.clock import RealClock
from cigri.cycle import Cycle
from cigri.errors import PermissionDenied
from cigri.jdl import load
from cigri.model import CampaignState, JobState
from cigri.prediction import predictor

from .conftest import PYTHON, runs, wait_for, write_jdl


def submit(store, path, **kw):
    return ops.submit(store, load(path, **kw), RealClock())[0]


def states(store, campaign_id):
    return Counter(j.state for j in store.jobs(campaign_id))


def test_each_stage_has_its_effect(store, cycle, tmp_path, job_script):
    cid = submit(store, write_jdl(tmp_path, exec_file=str(job_script), params=["a sleep:1", "b", "c"]))
    cycle.run(["metasched"])
    assert states(store, cid) == {JobState.LAUNCHING: 3}
    cycle.run(["runner"])
    assert states(store, cid) == {JobState.SUBMITTED: 3}
    assert all(j.remote_id for j in store.jobs(cid))
    wait_for(lambda: (cycle.run(["updator"]), states(store, cid))[1][JobState.TERMINATED] == 2)
    assert states(store, cid)[JobState.RUNNING] == 1
    now = RealClock().now()
    store.set_forecast(cid, now - 10, 0, None, None)
    smoothed = Cycle(store, RealClock(), forecaster=predictor("ewma"))
    smoothed.run(["spritz"])
    stats = store.stats(cid)
    assert stats["throughput"] == pytest.approx(0.2, rel=0.05)  # 2 jobs in the last 10 s
    assert stats["eta"] == pytest.approx(now + 5, abs=1)  # 1 job left at 0.2 jobs/s
    assert stats["duration_n"] == 2
    wait_for(lambda: (cycle.run(["updator"]), store.campaign(cid).state == CampaignState.TERMINATED)[1])


def test_nikita_kills_what_the_user_cancelled(store, cycle, tmp_path, job_script):
    cid = submit(store, write_jdl(tmp_path, exec_file=str(job_script), params=["a sleep:30", "b sleep:30", "c"]))
    cycle.run(["metasched", "runner"])
    wait_for(lambda: (cycle.run(["updator"]), states(store, cid)[JobState.RUNNING] == 2)[1])
    ops.cancel(store, cid, RealClock())
    cycle.run(["nikita"])
    assert states(store, cid) == {JobState.CANCELLED: 3}
    assert store.campaign(cid).state == CampaignState.CANCELLED
    adapter = cycle.adapter("local")
    wait_for(lambda: adapter.capacity().used == 0)


def test_a_campaign_runs_to_the_end(cli, tmp_path, job_script):
    (tmp_path / "params.txt").write_text("".join(f"p{i} {i}\n" for i in range(20)))
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), param_file="params.txt"))
    cli.until_done()
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", 20, 20)
    assert sorted(runs(tmp_path)) == sorted(f"p{i} {i}" for i in range(20))
    assert ["1", "1", "terminated", "local", "p0", "p0", "0"] in [
        line.split() for line in cli("gridstat", "-f", "-c", str(cid)).splitlines()
    ]
    assert cli("gridstat", "-j", "1", "-O") == "done p0\n"


def test_a_jobs_output_stays_readable_once_its_cluster_was_removed(cli, tmp_path, job_script):
    cli("gridclusters", "add", "annex", "--adapter", "local", "--slots", "1", "--idle-exit", "2")
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["a ok", "b fail"], clusters={"annex": {}}))
    cli.until_done(code=13)  # b's event blocks the campaign
    cli("gridevents", "-c", str(cid), "-f")
    cli("almighty")
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    cli("gridclusters", "remove", "annex")
    assert "annex" not in [c["name"] for c in cli.json("gridclusters")]
    assert cli("gridstat", "-j", "1", "-O") == "done a\n"
    assert cli("gridstat", "-j", "2", "-E") == "first line\nfailure of b\n"


def test_failures_open_events_block_and_fix_resubmits(cli, tmp_path, job_script):
    cli("config", "set", "blacklist.errors", "1")  # CiGri's rule: the first error closes the cluster
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["good", "bad fail"]))
    out = cli.until_done(code=13)  # blocked: not done, exit 13
    events = cli.json("gridevents", "-c", str(cid))
    assert [e["code"] for e in events] == ["EXIT_ERROR", "BLACKLIST"]  # local is closed to the campaign
    assert "exited with status 3" in events[0]["message"] and "failure of bad" in events[0]["message"]
    assert cli.json("gridstat", "-c", str(cid))["blocked"]
    assert f"campaign {cid} is blocked: 2 open event(s)" in out
    assert (cli.json("gridstat")[0]["state"], cli.json("gridstat")[0]["open_events"]) == ("in_treatment", 2)
    cli("gridevents", "-c", str(cid), "-f", "-r")
    cli.until_done(code=13)
    assert runs(tmp_path).count("bad fail") == 2
    again, _ = cli.json("gridevents", "-c", str(cid))  # it failed again: a new event, the campaign blocked again
    assert again["id"] != events[0]["id"] and again["job_id"] == events[0]["job_id"]
    assert cli.json("gridstat", "-c", str(cid))["state"] == "in_treatment"
    cli("gridevents", "-c", str(cid), "-f")
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"


def test_exit_66_is_resubmitted(cli, tmp_path, job_script):
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["r once66"]))
    cli.until_done()
    assert runs(tmp_path) == ["r once66", "r once66"]
    job = cli.json("gridstat", "-j", "1")
    assert (job["state"], job["resubmits"]) == ("terminated", 1)
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"


def test_walltime_kill_is_resubmitted_then_an_event(store, cycle, tmp_path, job_script):
    jdl = write_jdl(tmp_path, exec_file=str(job_script), walltime=1, params=["w sleep:30"], max_attempts=2)
    cid = submit(store, jdl)
    wait_for(lambda: (cycle.run(), store.events(campaign_id=cid))[1], timeout=30)
    event, blacklist = store.events(campaign_id=cid)
    assert event.code.value == "RESUBMIT_LIMIT" and "walltime" in event.message
    assert (blacklist.code.value, blacklist.cluster, blacklist.parent_id) == ("BLACKLIST", "local", event.id)
    assert runs(tmp_path) == ["w sleep:30", "w sleep:30"]


def test_test_campaign_runs_first_one_job_per_cluster(store, cycle, tmp_path, job_script):
    clusters.add(store, "second", "local", {"slots": 1, "idle_exit": 2}, RealClock())
    both = {"local": {}, "second": {}}
    default = submit(
        store,
        write_jdl(tmp_path, name="d", exec_file=str(job_script), clusters=both, params=[f"d{i}" for i in range(5)]),
    )
    test = submit(
        store,
        write_jdl(tmp_path, name="t", exec_file=str(job_script), clusters=both, params=[f"t{i}" for i in range(5)]),
        test=True,
    )
    cycle.run(["metasched"])
    first = [j for j in store.jobs(test) if j.state == JobState.LAUNCHING]
    assert sorted(j.cluster for j in first) == ["local", "second"]
    wait_for(
        lambda: (
            cycle.run(),
            store.campaign(test).state == CampaignState.TERMINATED
            and store.campaign(default).state == CampaignState.TERMINATED,
        )[1]
    )
    assert states(store, test) == {JobState.TERMINATED: 2, JobState.SKIPPED: 3}
    assert states(store, default) == {JobState.TERMINATED: 5}
    try:
        second = cycle.adapter("second")
    finally:
        second.stop()


def test_max_jobs_and_core_requests_are_respected(store, cycle, tmp_path, job_script):
    cid = submit(
        store,
        write_jdl(
            tmp_path,
            exec_file=str(job_script),
            clusters={"local": {"max_jobs": 1}},
            params=[f"m{i} sleep:0.2" for i in range(3)],
        ),
    )
    cycle.run(["metasched"])
    assert states(store, cid)[JobState.LAUNCHING] == 1
    big = submit(store, write_jdl(tmp_path, exec_file=str(job_script), resources="core=2", params=["x", "y"]))
    cycle.run(["metasched"])
    # the local cluster has 2 slots and a queue allowance of 64: one job of 2 cores costs 2 slots
    assert states(store, big)[JobState.LAUNCHING] == 2


def test_prologue_and_epilogue_run_once_per_cluster(cli, tmp_path, job_script):
    log = tmp_path / "stages.log"
    cid = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(job_script),
            params=["a", "b", "c"],
            prologue=[f"echo prologue {{CAMPAIGN_ID}} >> {log}"],
            epilogue=[f"echo epilogue $CIGRI_CAMPAIGN_ID >> {log}"],
        )
    )
    cli.until_done()
    assert log.read_text().splitlines() == [f"prologue {cid}", f"epilogue {cid}"]
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"


def test_pause_and_resume(store, cycle, tmp_path, job_script):
    cid = submit(store, write_jdl(tmp_path, exec_file=str(job_script), params=["a", "b"]))
    ops.pause(store, cid)
    cycle.run()
    assert states(store, cid) == {JobState.TO_LAUNCH: 2}
    ops.resume(store, cid)
    cycle.run(["metasched"])
    assert states(store, cid) == {JobState.LAUNCHING: 2}


def test_only_the_owner_acts_on_a_campaign(store, tmp_path, job_script):
    cid = ops.submit(
        store, load(write_jdl(tmp_path, exec_file=str(job_script), params=["a"])), RealClock(), user="alice"
    )[0]
    with pytest.raises(PermissionDenied, match="belongs to alice"):
        ops.pause(store, cid, user="bob")
    ops.pause(store, cid, user="root")
    assert store.campaign(cid).state == CampaignState.PAUSED


def test_gridsub_and_gridstat_work_while_a_pass_runs(cli, tmp_path, job_script, state):
    cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=[f"s{i} sleep:0.2" for i in range(6)]))
    loop = subprocess.Popen(
        [PYTHON, "-m", "cigri", "--state", str(state), "almighty", "--until-done", "--period", "0.2", "--timeout", "60"]
    )
    try:
        second = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["late"]))
        assert cli.json("gridstat", "-c", str(second))["total"] == 1
        assert loop.wait(timeout=90) == 0
    finally:
        loop.kill()
    cli.until_done()
    assert [line.split()[0] for line in runs(tmp_path)].count("late") == 1


CRASH = textwrap.dedent(
    """
    import os, signal, sys
    from cigri.cli import grid
    import {module} as target
    original = target.{owner}.{method}
    def crash(*args, **kwargs):
        {before}
        result = original(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
    target.{owner}.{method} = crash
    grid(["--state", sys.argv[1], "almighty"])
    """
)

# (module, class, method, what happens before the original runs)
CRASH_POINTS = {
    "after metasched committed": ("cigri.cycle", "metasched", "_record", "pass"),
    "after the RM accepted, before cigri recorded it": ("cigri.adapters.local", "LocalAdapter", "submit", "pass"),
    "after the batch was recorded as submitted": ("cigri.store", "Store", "finish_batch", "pass"),
    "in the middle of the updator": ("cigri.store", "Store", "mark_ended", "pass"),
}


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_pass_killed_anywhere_loses_nothing_and_runs_nothing_twice(cli, tmp_path, job_script, state, point):
    module, owner, method, before = CRASH_POINTS[point]
    names = [f"k{i}" for i in range(8)]
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=[f"{n} sleep:0.1" for n in names]))
    if method == "mark_ended":  # let jobs run first, so that the killed pass is collecting them
        cli("almighty")
        # at least the first two: the local cluster runs the next ones as slots free, so a poll that comes late
        # (a loaded machine) sees four or more, never two again
        wait_for(lambda: len(runs(tmp_path)) >= 2)
    script = CRASH.format(module=module, owner=owner, method=method, before=before)
    killed = subprocess.run([PYTHON, "-c", script, str(state)], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    cli.until_done()
    assert sorted(line.split()[0] for line in runs(tmp_path)) == names
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", 8, 8)


def test_a_pass_started_while_another_runs_exits_75_and_changes_nothing(cli, state, tmp_path, job_script, monkeypatch):
    """The first pass is held inside its submission to the cluster while a second almighty process starts."""
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["a ok", "b ok"]))
    entered, release = threading.Event(), threading.Event()
    original = LocalAdapter.submit

    def held_submit(self, *args, **kwargs):
        entered.set()
        release.wait()
        return original(self, *args, **kwargs)

    def grid_process(*args: str) -> subprocess.CompletedProcess:
        command = [PYTHON, "-c", "from cigri.cli import grid; grid()", "--state", str(state), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    monkeypatch.setattr(LocalAdapter, "submit", held_submit)
    outcome: list[str] = []
    first = threading.Thread(target=lambda: outcome.append(cli("almighty")))
    first.start()
    try:
        assert entered.wait(timeout=60), "the first pass never reached the cluster"
        before = grid_process("gridstat", "-f", "-c", str(cid), "--json").stdout
        second = grid_process("almighty")
        assert (second.returncode, second.stdout) == (75, "")
        assert "another almighty pass" in second.stderr
        assert grid_process("gridstat", "-f", "-c", str(cid), "--json").stdout == before
    finally:
        release.set()
        first.join()
    assert len(outcome) == 1  # the first pass went to its end (cli checks its exit status)
    cli.until_done()
    assert sorted(runs(tmp_path)) == ["a ok", "b ok"]


def test_a_looping_almighty_hears_of_every_submission(store, cycle, tmp_path, job_script):
    """--loop/--until-done wake early on news from a cluster cigri submitted to (a prologue too)."""
    submit(store, write_jdl(tmp_path, exec_file=str(job_script), params=["a"], prologue=["true"]))
    cycle.run()
    assert store.stages_in(("submitted",))  # the pass submitted the prologue, and no job yet
    wait_for(cycle.news)
    cycle.run()
    wait_for(cycle.news)


def test_a_job_its_rm_forgot_is_taken_as_lost_and_run_again(store, cycle, tmp_path, job_script, monkeypatch):
    monkeypatch.setattr("cigri.cycle.updator.LOST_AFTER", 0)
    cid = submit(store, write_jdl(tmp_path, exec_file=str(job_script), params=["f"]))
    cycle.run(["metasched", "runner"])
    wait_for(lambda: runs(tmp_path))
    [job] = store.jobs(cid)
    spool = cycle.adapter("local").spool
    with spool.conn:  # the RM forgets the job before cigri collected it (an admin purged its queue)
        spool.conn.execute("DELETE FROM jobs WHERE id = ?", (int(job.remote_id),))
    cycle.run(["updator"])
    assert store.job(job.id).state == JobState.SUBMITTED  # unknown once: not assumed done, not yet lost
    cycle.run(["updator"])
    assert store.job(job.id).state == JobState.TO_LAUNCH and store.job(job.id).resubmits == 1
    wait_for(lambda: (cycle.run(), store.campaign(cid).state == CampaignState.TERMINATED)[1])
    assert runs(tmp_path) == ["f ", "f "]


def test_a_failed_prologue_blocks_then_runs_again_when_fixed(cli, tmp_path, job_script):
    flag = tmp_path / "prologue-may-pass"
    cid = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(job_script),
            params=["a"],
            prologue=[f"test -e {flag} || {{ echo no flag >&2; exit 4; }}"],
        )
    )
    cli.until_done(code=13)  # the prologue's event blocks the campaign
    [event] = cli.json("gridevents", "-c", str(cid))
    assert (
        event["code"] == "PROLOGUE_ERROR"
        and "exited with status 4" in event["message"]
        and "no flag" in event["message"]
    )
    assert runs(tmp_path) == []  # no job ran on a cluster whose prologue failed
    flag.touch()
    cli("gridevents", "-c", str(cid), "-f", "-r")
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated" and runs(tmp_path) == ["a "]


def test_a_killed_prologue_is_run_again_then_fails_after_the_limit(store, cycle, tmp_path, job_script):
    cid = submit(
        store,
        write_jdl(
            tmp_path,
            exec_file=str(job_script),
            params=["a"],
            prologue_walltime=1,
            prologue=[f"echo try >> {tmp_path}/tries; sleep 30"],
            max_attempts=2,
        ),
    )
    wait_for(lambda: (cycle.run(), store.events(campaign_id=cid))[1], timeout=40)
    [event] = store.events(campaign_id=cid)
    assert event.code.value == "PROLOGUE_ERROR" and "killed 2 times" in event.message
    assert (tmp_path / "tries").read_text().splitlines() == ["try", "try"]


def test_a_second_smaller_local_cluster_takes_its_share_not_the_queue_of_the_first(cli, state, tmp_path, job_script):
    """Issue 21: 12 two-second jobs took 12.8 s on local (2 slots) and 21.1 s once a 1-slot cluster was added,
    which queued 10 of them. Now each queued job goes where it is expected to start first: the 1-slot cluster
    takes a third of them, and every job runs once."""
    cli("gridclusters", "add", "annex", "--adapter", "local", "--slots", "1", "--idle-exit", "2")
    params = [f"j{i} sleep:1" for i in range(12)]
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=params, clusters={"annex": {}, "local": {}}))
    cli("almighty")  # one pass places them all
    conn = sqlite3.connect(state)
    try:
        placed = dict(conn.execute("SELECT cluster, count(*) FROM jobs GROUP BY cluster").fetchall())
    finally:
        conn.close()
    assert placed == {"local": 8, "annex": 4}
    cli.until_done()
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    assert sorted(line.split()[0] for line in (tmp_path / "runs.log").read_text().splitlines()) == sorted(
        p.split()[0] for p in params
    )


def test_until_done_exits_13_when_it_stops_on_a_blocked_campaign(cli, tmp_path, job_script):
    """Issue 24: `gridsub && grid almighty --until-done && next` carried on past a blocked campaign (exit 0)."""
    cli("config", "set", "blacklist.errors", "1")
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["bad fail"]))
    result = CliRunner().invoke(
        grid, ["--state", str(cli.state), "almighty", "--until-done", "--period", "0.2", "--timeout", "60"]
    )
    assert result.exit_code == 13, result.output
    lines = result.stderr.splitlines()
    assert f"campaign {cid} is blocked: " in lines[-2]
    assert lines[-1].startswith("grid almighty: error: 1 campaign blocked")
    done = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["good"], name="ok"))
    cli("griddel", str(cid))
    cli.until_done()
    assert cli.json("gridstat", "-c", str(done))["state"] == "terminated", "nothing blocked: exit 0"
