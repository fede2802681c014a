"""Packing short jobs (temporal_grouping, dimensional_grouping): the JDL keys, the pack size, the pack
status lines, and packs run for real on the local cluster (each job's own status, outputs and CIGRI_*
variables; a pack killed midway loses no job)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cigri import campaigns as ops
from cigri import clusters, jdl
from cigri.adapters import packing
from cigri.clock import RealClock
from cigri.errors import JdlError
from cigri.jdl import load
from cigri.model import CampaignState, JobState, KillCause, RemoteState, RemoteStatus

from .conftest import runs, wait_for, write_jdl


def submit(store, path):
    return ops.submit(store, load(path), RealClock())[0]


def states(store, campaign_id):
    return Counter(j.state for j in store.jobs(campaign_id))


def parse(**cluster):
    return jdl.parse({"name": "n", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": cluster}}).clusters["a"]


def test_grouping_keys_take_yes_no_or_seconds_per_cluster_and_campaign():
    assert parse()["temporal_grouping"] is False and parse()["dimensional_grouping"] is False
    assert parse(temporal_grouping="yes")["temporal_grouping"] is True
    assert parse(temporal_grouping=True)["temporal_grouping"] is True
    assert parse(temporal_grouping="no")["temporal_grouping"] is False
    assert parse(temporal_grouping=600)["temporal_grouping"] == 600
    assert parse(temporal_grouping="00:10:00")["temporal_grouping"] == 600
    assert parse(dimensional_grouping="true")["dimensional_grouping"] is True
    both = jdl.parse(
        {
            "name": "n",
            "exec_file": "x",
            "nb_jobs": 1,
            "temporal_grouping": "yes",
            "clusters": {"a": {}, "b": {"temporal_grouping": "no"}},
        }
    )
    assert (both.clusters["a"]["temporal_grouping"], both.clusters["b"]["temporal_grouping"]) == (True, False)


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("temporal_grouping", "often", "expected yes, no or the seconds one RM job should run, not 'often'"),
        ("temporal_grouping", 0, "expected yes, no or the seconds one RM job should run (no turns packing off)"),
        ("temporal_grouping", -5, "expected yes, no or the seconds one RM job should run, not -5"),
        ("dimensional_grouping", "sometimes", "expected true or false, not 'sometimes'"),
    ],
)
def test_a_bad_grouping_value_is_one_line_naming_its_key_path(where, value, message):
    with pytest.raises(JdlError) as top:
        jdl.parse({"name": "n", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": {}}, where: value})
    assert str(top.value) == f"clusters.a.{where}: {message}"
    with pytest.raises(JdlError) as own:
        parse(**{where: value})
    assert str(own.value) == f"clusters.a.{where}: {message}"


# pack_size: jobs one lane runs, by hand. Budget = walltime x 0.8, capped by the target; count = budget // mean;
# spread = ceil(jobs left / slots) (guided self-scheduling); the result is min(count, spread, 1000), at least 1.
@pytest.mark.parametrize(
    ("mean", "walltime", "jobs", "slots", "target", "expected"),
    [
        (None, 3600, 1000, 8, None, 1),  # no job has ended yet: unpacked
        (1.0, 3600, 100_000, 8, None, 1000),  # 2880 by time, 12500 by spread: the cap
        (1.0, 3600, 10_000, 8, 60, 60),  # the target: 60 s of 1 s jobs
        (2.0, 3600, 100, 8, None, 13),  # ceil(100 / 8): every slot gets a pack
        (7.0, 100, 1000, 1, None, 11),  # 80 // 7
        (50.0, 100, 1000, 1, None, 1),  # 80 // 50: one job fits with the margin, not two
        (200.0, 100, 1000, 1, None, 1),  # longer than the walltime: never zero
        (0.0, 3600, 30, 4, None, 8),  # instant jobs: only the spread bounds them, ceil(30 / 4)
        (3.0, 60, 100, 0, 30, 10),  # target 30 // 3; no slot known counts as one
    ],
)
def test_pack_size_from_the_mean_duration_and_the_walltime(mean, walltime, jobs, slots, target, expected):
    assert packing.pack_size(mean, walltime, jobs=jobs, slots=slots, target=target) == expected


def test_a_pack_never_plans_beyond_its_walltime_less_the_margin():
    for mean in (0.5, 1.0, 3.0, 9.9, 30.0):
        for walltime in (60, 300, 3600):
            size = packing.pack_size(mean, walltime, jobs=10**6, slots=1)
            assert size == 1 or size * mean <= walltime * (1 - packing.PACK_MARGIN)


PACK = RemoteStatus("77", RemoteState.RUNNING)
LINES = "start 1 100.5\nend 1 0 101.5\nstart 2 101.5\nend 2 3 102\nstart 3 102.0\nskip 5\nend 9"


def test_each_job_of_a_running_pack_has_its_own_state():
    lines = packing.statuses(LINES)
    one, two, three, four, five = (packing.job_status(f"77+{i}+5", PACK, lines) for i in range(1, 6))
    assert (one.state, one.exit_code, one.started_at, one.ended_at) == (RemoteState.EXITED, 0, 100.5, 101.5)
    assert (two.state, two.exit_code) == (RemoteState.EXITED, 3)
    assert (three.state, three.started_at) == (RemoteState.RUNNING, 102.0)
    assert four.state == RemoteState.PENDING  # waits its turn in the pack
    assert (five.state, five.returned) == (RemoteState.KILLED, True)


def test_a_killed_pack_returns_its_unstarted_jobs_and_kills_the_running_one():
    killed = RemoteStatus("77", RemoteState.KILLED, ended_at=110.0, reason="timeout")
    lines = packing.statuses(LINES)
    one, three, four = (packing.job_status(f"77+{i}+5", killed, lines) for i in (1, 3, 4))
    assert (one.state, one.exit_code) == (RemoteState.EXITED, 0)  # finished: keeps its result
    assert (three.state, three.returned, three.started_at) == (RemoteState.KILLED, False, 102.0)
    assert (four.state, four.returned) == (RemoteState.KILLED, True)
    assert "timeout" in four.reason


def test_a_job_the_packs_kill_reached_first_is_killed_not_failed():
    """The RM's SIGTERM reaches a pack's job and its lane together: on a loaded node the lane may still write
    the job's end line, with status 143 (seen in CI after an admin's scancel). That end is the pack's kill,
    run again as one; in a pack that was not killed, a job dying of a signal is its own failure."""
    lines = packing.statuses("start 1 100.0\nend 1 143 109.0\nstart 2 100.0\nend 2 139 104.0")
    killed = RemoteStatus("77", RemoteState.KILLED, ended_at=110.0, reason="cancelled", cause=KillCause.OTHER)
    one = packing.job_status("77+1+2", killed, lines)
    assert (one.state, one.returned, one.cause, one.started_at) == (RemoteState.KILLED, False, KillCause.OTHER, 100.0)
    ended = RemoteStatus("77", RemoteState.EXITED, exit_code=0, ended_at=110.0)
    assert packing.job_status("77+1+2", ended, lines).exit_code == 143, "no kill: the job's own end"
    two = packing.job_status("77+2+2", killed, lines)
    assert (two.state, two.exit_code) == (RemoteState.EXITED, 139), "it died 6 s before the pack's kill"


def test_jobs_of_a_pending_pack_are_pending():
    pending = RemoteStatus("77", RemoteState.PENDING)
    assert packing.job_status("77+4+5", pending, {}).state == RemoteState.PENDING


# ---- packs on the real local cluster (2 slots) ------------------------------------------------------------

SLOW_ONCE = """#!/bin/sh
# $1: name; $2: what to do. Appends "name" to runs.log beside this script.
here=$(dirname "$0")
echo "$1" >> "$here/runs.log"
case "$2" in
  fail) echo "failure of $1" >&2; exit 3 ;;
  env) env | grep '^CIGRI_' | sort > "$here/$1.env" ;;
  nap) sleep 1 ;;
  slow-once) if [ ! -e "$here/$1.ran" ]; then touch "$here/$1.ran"; sleep 30; fi ;;
esac
echo "done $1"
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "job.sh"
    path.write_text(SLOW_ONCE)
    path.chmod(0o755)
    return path


def packed_campaign(store, tmp_path, script, params, mean=0.1, **fields):
    """A campaign packing its jobs, whose mean duration is already known (as after its first jobs)."""
    fields.setdefault("temporal_grouping", "yes")
    cid = submit(store, write_jdl(tmp_path, exec_file=str(script), params=params, **fields))
    store.add_durations([(cid, "local", mean, 0.0)] * 3, 60.0)
    return cid


def packs_of(store, cid):
    return Counter(packing.split_id(j.remote_id)[0] for j in store.jobs(cid) if j.remote_id)


def test_packed_jobs_keep_their_own_status_outputs_and_variables(store, cycle, tmp_path, script):
    names = [f"j{i}" for i in range(8)]
    cid = packed_campaign(store, tmp_path, script, [f"{n} env" for n in names[:-1]] + ["j7 fail"])
    cycle.run(["metasched", "runner"])
    assert sorted(packs_of(store, cid).values()) == [4, 4]  # 8 jobs spread on 2 slots: 2 packs of 4
    wait_for(
        lambda: (
            cycle.run(["updator"]),
            not states(store, cid)[JobState.SUBMITTED] + states(store, cid)[JobState.RUNNING],
        )[1]
    )
    jobs = {j.name: j for j in store.jobs(cid)}
    assert {n: jobs[n].state for n in names} == {**{n: JobState.TERMINATED for n in names[:-1]}, "j7": JobState.EVENT}
    assert jobs["j7"].exit_code == 3
    [event] = store.events(campaign_id=cid)  # one error of eight ends: the cluster stays open to the campaign
    assert event.job_id == jobs["j7"].id and "failure of j7" in event.message
    adapter = cycle.adapter("local")
    for name in names[:-1]:
        env = dict(line.split("=", 1) for line in (tmp_path / f"{name}.env").read_text().splitlines())
        assert env["CIGRI_JOB_ID"] == env["CIGRI_JOBID"] == str(jobs[name].id)
        assert env["CIGRI_JOB_NAME"] == env["CIGRI_JOBNAME"] == name
        assert env["CIGRI_CAMPAIGN_ID"] == str(cid) and env["CIGRI_WORKDIR"] == str(tmp_path)
        assert env["CIGRI_RESOURCES"] == "/resource_id=1" and env["CIGRI_WALLTIME_SECONDS"] == "60"
        assert Path(env["CIGRI_NODE_FILE"]).read_text().count("\n") == 1
        assert adapter.tail(jobs[name].remote_id, "stdout", 0).strip() == f"done {name}"
        assert jobs[name].started_at <= jobs[name].ended_at
    assert adapter.tail(jobs["j7"].remote_id, "stderr", 0).strip() == "failure of j7"


def test_a_pack_killed_midway_loses_no_job(store, cycle, tmp_path, script):
    """Packs of 3: a quick job, one that sleeps (the first time), one after it. The RM kills the packs
    (walltime) while their second jobs sleep: the first ones keep their result, the sleeping ones are
    resubmitted as killed jobs, the third ones go back to the bag without a count; all end once."""
    params = ["a1", "a2 slow-once", "a3", "b1", "b2 slow-once", "b3"]
    cid = packed_campaign(store, tmp_path, script, params, walltime=3)
    cycle.run(["metasched", "runner"])
    assert sorted(packs_of(store, cid).values()) == [3, 3]
    wait_for(lambda: (cycle.run(["updator"]), states(store, cid)[JobState.TO_LAUNCH] == 4)[1], timeout=30)
    jobs = {j.name: j for j in store.jobs(cid)}
    assert (jobs["a1"].state, jobs["b1"].state) == (JobState.TERMINATED, JobState.TERMINATED)
    assert [(jobs[n].resubmits, jobs[n].preemptions) for n in ("a2", "b2", "a3", "b3")] == [
        (1, 0),
        (1, 0),
        (0, 1),
        (0, 1),
    ]
    assert store.events(campaign_id=cid) == []
    wait_for(lambda: (cycle.run(), store.campaign(cid).state == CampaignState.TERMINATED)[1], timeout=60)
    assert Counter(runs(tmp_path)) == {"a1": 1, "b1": 1, "a2": 2, "b2": 2, "a3": 1, "b3": 1}


def test_griddel_of_jobs_in_a_pack_skips_them_then_kills_the_pack(store, cycle, tmp_path, script):
    """One pack of 4 on a 1-slot cluster: a1 sleeps, a2..a4 wait their turn. griddel -j a2: skipped when its
    turn comes, the pack goes on. griddel -j a1 (running): the RM job is cancelled, a3 and a4 go back to
    the bag, not counted, and run."""
    clusters.set_options(store, "local", {"slots": 1})
    cid = packed_campaign(store, tmp_path, script, ["a1 slow-once", "a2", "a3", "a4"])
    cycle.run(["metasched", "runner"])
    assert list(packs_of(store, cid).values()) == [4]
    jobs = {j.name: j.id for j in store.jobs(cid)}
    wait_for(lambda: (cycle.run(["updator"]), store.job(jobs["a1"]).state == JobState.RUNNING)[1])
    wait_for(lambda: runs(tmp_path) == ["a1"])  # it sleeps now
    ops.cancel_job(store, jobs["a2"])
    cycle.run(["nikita"])
    assert store.job(jobs["a2"]).state == JobState.CANCELLED
    assert cycle.adapter("local").capacity().used == 1  # the pack still runs a1
    ops.cancel_job(store, jobs["a1"])
    cycle.run(["nikita"])
    wait_for(lambda: (cycle.run(["updator"]), states(store, cid)[JobState.TO_LAUNCH] == 2)[1])
    assert [store.job(jobs[n]).preemptions for n in ("a3", "a4")] == [1, 1]
    wait_for(lambda: (cycle.run(), store.campaign(cid).state == CampaignState.TERMINATED)[1], timeout=30)
    assert Counter(runs(tmp_path)) == {"a1": 1, "a3": 1, "a4": 1}
    assert states(store, cid) == {JobState.CANCELLED: 2, JobState.TERMINATED: 2}


def test_a_paused_campaigns_queued_pack_is_held_then_released(store, cycle, tmp_path, script):
    clusters.set_options(store, "local", {"slots": 1})
    first = packed_campaign(store, tmp_path, script, ["x1 slow-once"])
    cycle.run(["metasched", "runner"])  # takes the one slot
    cid = packed_campaign(store, tmp_path, script, ["p1", "p2", "p3"])
    cycle.run(["metasched", "runner"])
    assert list(packs_of(store, cid).values()) == [3]
    ops.pause(store, cid)
    cycle.run(["nikita"])
    ops.cancel(store, first, RealClock())
    cycle.run(["nikita"])
    pack = packing.split_id(next(iter(store.jobs(cid))).remote_id)[0]
    assert cycle.adapter("local").spool.rows([int(pack)])[0][1] == "held"
    ops.resume(store, cid)
    wait_for(lambda: (cycle.run(), store.campaign(cid).state == CampaignState.TERMINATED)[1], timeout=30)
    assert sorted(runs(tmp_path)) == ["p1", "p2", "p3", "x1"]


def test_dimensional_packs_take_the_node_and_run_one_job_per_core(store, cycle, tmp_path, script):
    """The local cluster is one node of 2 slots: 4 jobs make 2 packs of 2 jobs that run side by side."""
    cid = packed_campaign(
        store, tmp_path, script, [f"d{i} nap" for i in range(4)], temporal_grouping="no", dimensional_grouping="yes"
    )
    cycle.run(["metasched", "runner"])
    assert sorted(packs_of(store, cid).values()) == [2, 2]
    wait_for(lambda: (cycle.run(), store.campaign(cid).state == CampaignState.TERMINATED)[1], timeout=30)
    jobs = sorted(store.jobs(cid), key=lambda j: j.remote_id)
    for first, second in (jobs[:2], jobs[2:]):  # the two lanes of a pack: each started before the other ended
        assert first.started_at < second.ended_at and second.started_at < first.ended_at


def test_packing_is_refused_at_gridsub_on_a_cluster_that_cannot_run_packs(store, tmp_path, script):
    clusters.add(store, "oar", "oar-ssh", {"host": "frontend"}, RealClock())
    path = write_jdl(tmp_path, exec_file=str(script), params=["a"], clusters={"oar": {"temporal_grouping": 60}})
    with pytest.raises(JdlError) as refused:
        submit(store, path)
    assert str(refused.value).startswith("clusters.oar.temporal_grouping: cluster 'oar' cannot run packed jobs")


def test_jobs_waiting_their_turn_in_a_running_pack_are_not_taken_back_for_flooding(store, cycle, tmp_path, script):
    """One pack of 4 on a 1-slot cluster whose queue may hold nothing: a2..a4 read as queued while a1 runs,
    but they wait inside an RM job that runs; nikita leaves them there."""
    clusters.set_options(store, "local", {"slots": 1})
    cid = packed_campaign(store, tmp_path, script, ["a1 slow-once", "a2", "a3", "a4"])
    cycle.run(["metasched", "runner"])
    assert list(packs_of(store, cid).values()) == [4]
    clusters.set_options(store, "local", {"queue_depth": 0})
    cycle.close()  # the adapter reads its options again
    jobs = {j.name: j.id for j in store.jobs(cid)}
    wait_for(lambda: (cycle.run(["updator"]), store.job(jobs["a1"]).state == JobState.RUNNING)[1])
    wait_for(lambda: runs(tmp_path) == ["a1"])  # it sleeps now: a2..a4 wait their turn in the pack
    report = cycle.run()
    assert "killed for flooding" not in report.counts
    assert [store.job(jobs[n]).state for n in ("a2", "a3", "a4")] == [JobState.SUBMITTED] * 3
    for job_id in jobs.values():
        ops.cancel_job(store, job_id)
    cycle.run(["nikita"])


def test_a_packed_jobs_param_words_reach_it_literally_never_run_by_a_shell(store, cycle, tmp_path):
    """The wrapper re-splits each job's quoted line (eval of shlex-quoted words): quotes, $(...), ; and
    globs must reach the job as the words the JDL gave, as they do for an unpacked job."""
    script = tmp_path / "args.sh"
    script.write_text('#!/bin/sh\nname=$1; shift\nprintf "%s\\n" "$@" > "$(dirname "$0")/$name.args"\n')
    script.chmod(0o755)
    params = ["j1 '$(touch pwned)' 'a; touch pwned2' \"two words\" '*'", "j2 `touch pwned3` $HOME"]
    clusters.set_options(store, "local", {"slots": 1})
    cid = packed_campaign(store, tmp_path, script, params)
    cycle.run(["metasched", "runner"])
    assert list(packs_of(store, cid).values()) == [2]
    wait_for(lambda: (cycle.run(["updator"]), states(store, cid)[JobState.TERMINATED] == 2)[1])
    assert (tmp_path / "j1.args").read_text().splitlines() == ["$(touch pwned)", "a; touch pwned2", "two words", "*"]
    assert (tmp_path / "j2.args").read_text().splitlines() == ["`touch", "pwned3`", "$HOME"]
    assert not [p for p in tmp_path.rglob("pwned*")]
