"""Events and their causes: a job's error blacklists its cluster for its campaign only, fixing the causes lifts
it, transport events close themselves when the cluster answers, and the admin's blacklist keeps every
campaign off a cluster. On fake resource managers under the test's hand, on a simulated clock. These tests
pin the blacklist's mechanics under CiGri's rule, a blacklist at the first error (``blacklist.errors`` 1);
the default threshold is tests/test_placement.py's."""

from __future__ import annotations

import sys

import pytest

from cigri import campaigns as ops
from cigri import config
from cigri.errors import ConfigError, PermissionDenied
from cigri.model import CampaignState, EventCode, EventState, JobState, RemoteState
from cigri.sim.run import simulate
from cigri.sim.scenario import parse as parse_scenario
from cigri.store import Store

from .conftest import Grid as CliGrid
from .conftest import runs, write_jdl
from .oar.contract import OarState
from .oar.fake_commands import install_fake_commands
from .test_placement import FakeRM, Grid


@pytest.fixture(autouse=True)
def _first_error_blacklists(monkeypatch):
    monkeypatch.setitem(config.RESUBMIT_DEFAULTS, config.BLACKLIST_ERRORS, 1)


def codes(grid: Grid, campaign_id: int | None = None, *, open_only: bool = True) -> list[tuple[str, str | None]]:
    return [(e.code.value, e.cluster) for e in grid.store.events(campaign_id=campaign_id, open_only=open_only)]


def fail_first_on_a(a: FakeRM, b: FakeRM, jobs: int = 4) -> tuple[Grid, int]:
    """Job 1 on a and job 2 on b; job 1 exits 3 and the next pass reads it."""
    grid, cid = Grid.placed(a, b, jobs=jobs)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1], [2])
    a.end(1, 10, exit_code=3, started=5)
    grid.at(20)
    return grid, cid


def test_a_jobs_error_blacklists_its_cluster_for_its_campaign_only():
    a, b = FakeRM("a", 1, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    grid, cid = fail_first_on_a(a, b)
    error, blacklist = grid.store.events(campaign_id=cid)
    assert (error.code, error.cluster, error.job_id, error.parent_id) == (EventCode.EXIT_ERROR, "a", 1, None)
    assert (blacklist.code, blacklist.cluster, blacklist.parent_id) == (EventCode.BLACKLIST, "a", error.id)
    for t in (30, 40, 50):  # b runs the campaign's other jobs, one at a time; a gets none of them
        for job_id in b.holds(RemoteState.PENDING):
            b.end(job_id, t - 1, started=t - 5)
        grid.at(t)
    assert len(a.owner) == 1 and sorted(b.owner.values()) == [2, 3, 4]
    assert ops.blocked_reason(grid.store, grid.store.campaign(cid)) == f"2 open event(s): see gridevents -c {cid}"
    other = grid.submit(1, clusters=["a"])  # another campaign still uses a
    grid.at(60)
    assert a.holds(RemoteState.PENDING) == [5] and grid.job(5).campaign_id == other


def test_fixing_the_cause_lifts_the_blacklist_and_the_campaign_goes_back_there():
    a, b = FakeRM("a", 1, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    grid, cid = fail_first_on_a(a, b, jobs=5)
    error, blacklist = grid.store.events(campaign_id=cid)
    ops.fix_events(grid.store, grid.clock, event_id=error.id, user="alice")
    after = {e.id: e for e in grid.store.events(campaign_id=cid, open_only=False)}
    assert after[blacklist.id].state == EventState.CLOSED and after[blacklist.id].closed_by == "its causes are fixed"
    assert after[error.id].closed_by == "fixed by alice"
    grid.at(30)
    assert a.holds(RemoteState.PENDING) == [3]
    assert grid.job(1).state == JobState.EVENT  # fixed without -r: the job stays failed


def test_later_causes_join_the_blacklist_which_lifts_only_when_none_is_open():
    a = FakeRM("a", 2, queue_depth=0)
    grid, cid = Grid.placed(a, jobs=3)
    a.end(1, 10, exit_code=3, started=5)
    a.end(2, 10, exit_code=4, started=5)
    grid.at(20)
    first, blacklist, second = grid.store.events(campaign_id=cid)
    assert (blacklist.code, blacklist.parent_id) == (EventCode.BLACKLIST, first.id)
    assert (second.code, second.job_id, second.parent_id) == (EventCode.EXIT_ERROR, 2, blacklist.id)
    assert [e.code for e in grid.store.events(campaign_id=cid)].count(EventCode.BLACKLIST) == 1
    ops.fix_events(grid.store, grid.clock, event_id=first.id, user="alice")
    assert [e.id for e in grid.store.events(campaign_id=cid)] == [blacklist.id, second.id]
    grid.at(30)
    assert a.holds(RemoteState.PENDING) == [], "still blacklisted: one of its causes is open"
    result = ops.fix_events(grid.store, grid.clock, event_id=blacklist.id, resubmit=True, user="alice")
    assert (result.closed, result.resubmitted) == (2, 1)  # the blacklist and its open cause; job 2 runs again
    assert grid.store.events(campaign_id=cid) == []
    grid.at(40)
    assert sorted(a.holds(RemoteState.PENDING)) == [2, 3]


def test_the_campaign_waits_on_its_blacklist_and_gridstat_says_so(tmp_path):
    a = FakeRM("a", 1, queue_depth=0)
    state = tmp_path / "state.db"
    grid, cid = Grid.placed(a, jobs=3, state=state)
    a.end(1, 10, exit_code=3, started=5)
    for t in (20, 30):
        grid.at(t)
    assert grid.states(cid) == {JobState.EVENT: 1, JobState.TO_LAUNCH: 2}
    assert grid.store.campaign(cid).state == CampaignState.IN_TREATMENT
    cli = CliGrid(state)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["open_events"], row["blocked"]) == (2, f"2 open event(s): see gridevents -c {cid}")
    assert row["state"] == "in_treatment"
    [shown] = cli.json("gridevents", "-c", str(cid), "-e", "blacklist")
    assert (shown["code"], shown["cluster"], shown["parent_id"]) == ("BLACKLIST", "a", 1)
    out = cli("gridevents", "-c", str(cid), "-f", "-r", "-e", "EXIT_ERROR")
    assert out == "2 events fixed, 1 job resubmitted\n"  # its blacklist went with it
    closed = {e["code"]: e["closed_by"] for e in cli.json("gridevents", "-c", str(cid), "-a")}
    assert closed == {"EXIT_ERROR": "fixed and resubmitted by root", "BLACKLIST": "its causes are fixed"}
    assert cli.json("gridstat", "-c", str(cid))["blocked"] is None
    grid.at(40)
    assert a.holds(RemoteState.PENDING) == [1]


def test_a_transport_event_closes_itself_when_the_cluster_answers_and_gridevents_a_says_why(tmp_path):
    a = FakeRM("a", 1, queue_depth=0)
    state = tmp_path / "state.db"
    grid, cid = Grid.placed(a, jobs=2, state=state)
    a.down = True
    grid.at(10)
    cli = CliGrid(state)
    [event] = cli.json("gridevents", "-g")
    assert (event["code"], event["state"], event["cluster"]) == ("CLUSTER_UNREACHABLE", "open", "a")
    assert cli.json("gridevents", "-c", str(cid)) == []
    a.down = False
    grid.at(20)
    assert cli.json("gridevents", "-g") == []
    [closed] = cli.json("gridevents", "-g", "-a")
    assert (closed["state"], closed["closed_by"]) == ("closed", "auto-fixed: the cluster answers again")
    table = cli("gridevents", "-a")
    assert "Why" in table.splitlines()[0] and "auto-fixed" in table
    assert "Why" not in cli("gridevents", "-a", "-H")


def test_the_admins_blacklist_keeps_every_campaign_off_the_cluster_and_lets_its_jobs_end(tmp_path):
    a, b = FakeRM("a", 1, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    state = tmp_path / "state.db"
    grid, _ = Grid.placed(a, b, jobs=4, state=state)
    cli = CliGrid(state)
    out = cli("gridevents", "--blacklist-cluster", "a", "--reason", "disk full")
    assert out.startswith("cluster a blacklisted (event 1)")
    assert "BLACKLISTED" in [line.split()[2] for line in cli("gridclusters").splitlines() if line.startswith("a ")]
    a.end(1, 10, started=5)  # its running job ends there and counts
    b.end(2, 10, started=5)
    grid.at(20)
    assert grid.job(1).state == JobState.TERMINATED
    other = grid.submit(1, clusters=["a"])
    grid.at(30)
    assert len(a.owner) == 1 and sorted(b.owner.values()) == [2, 3]
    reason = ops.blocked_reason(grid.store, grid.store.campaign(other))
    assert reason == "no usable cluster: a blacklisted by the admin"
    [event] = cli.json("gridevents", "-g")
    assert (event["code"], event["cluster"]) == ("ADMIN_BLACKLIST", "a")
    assert event["message"] == "blacklisted by root: disk full"
    cli("gridevents", "--blacklist-cluster", "a", code=1)
    assert cli("gridevents", "--unblacklist", "a") == "cluster a: blacklist lifted (event 1 closed)\n"
    assert "BLACKLISTED" not in [row["state"] for row in cli.json("gridclusters")]
    grid.at(40)
    assert len(a.owner) == 2, "lifted: a gets a job again"


def test_only_the_admin_blacklists_and_only_the_owner_fixes(tmp_path, monkeypatch):
    a = FakeRM("a", 1, queue_depth=0)
    state = tmp_path / "state.db"
    grid, cid = Grid.placed(a, jobs=2, state=state)
    a.end(1, 10, exit_code=3, started=5)
    grid.at(20)
    monkeypatch.setattr("cigri.campaigns.current_user", lambda: "bob")
    with pytest.raises(PermissionDenied, match="belongs to alice, not bob"):
        ops.fix_events(grid.store, grid.clock, campaign_id=cid)
    cli = CliGrid(state)
    for args in (["-c", str(cid), "-f"], ["1", "-f"], ["--blacklist-cluster", "a"]):
        cli("gridevents", *args, code=6)
    assert len(grid.store.events(campaign_id=cid)) == 2
    assert cli.json("gridevents", "-c", str(cid))[0]["code"] == "EXIT_ERROR"  # lists stay readable by all


def test_the_unreachable_span_is_the_users_and_the_copies_that_lost_are_waste(tmp_path):
    a, b = FakeRM("a", 1, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    state = tmp_path / "state.db"
    grid, cid = Grid.placed(a, b, jobs=2, state=state)  # the grid's own patience: 900 s
    CliGrid(state)("config", "set", "updator.unreachable", "100")
    a.start(1, 5)
    b.end(2, 8, started=5)
    grid.at(10)
    a.down = True
    grid.at(20)  # the event opens
    grid.at(100)
    assert grid.job(1).cluster == "a"
    grid.at(125)  # 105 s after: job 1 runs on b
    assert (grid.job(1).cluster, grid.job(1).state, grid.job(1).resubmits) == ("b", JobState.SUBMITTED, 0)
    b.end(1, 140, started=126)
    a.down = False
    grid.at(150)
    assert a.cancelled == ["a-1"] and grid.store.waste(cid) == 1
    assert grid.states(cid) == {JobState.TERMINATED: 2} and grid.store.stats(cid)["duration_n"] == 2
    row = CliGrid(state).json("gridstat", "-c", str(cid))
    assert (row["waste"], row["done"], row["state"]) == (1, 2, "terminated")
    CliGrid(state)("config", "set", "updator.unreachable", "-1", code=4)


def outage_scenario(unreachable: float | None, *, tail: float | None = 7200, b_slots: int = 8) -> dict:
    """a goes away at 100 s for 5000 s (its jobs die there unseen); b stays. Every job is on a cluster from
    the first pass: a's queued jobs are the campaign's last, which wait for ``updator.unreachable`` only when
    ``updator.unreachable_tail`` (``tail``; None: its default minute) is as long."""
    config = {"updator.unreachable_tail": tail} if tail is not None else {}
    return {
        "name": "away",
        "period": 30,
        "seed": 3,
        "max_time": 40000,
        "clusters": [{"name": "a", "slots": 8, "outages": [[100, 5100]]}, {"name": "b", "slots": b_slots}],
        "campaigns": [{"name": "c", "jobs": 48, "duration": {"dist": "fixed", "value": 200}}],
        "config": {**config, **({"updator.unreachable": unreachable} if unreachable else {})},
    }


def test_in_the_simulator_a_cluster_away_too_long_has_its_jobs_run_elsewhere_each_done_once():
    soon, default = simulate(parse_scenario(outage_scenario(300))), simulate(parse_scenario(outage_scenario(None)))
    for result in (soon, default):
        assert (result["jobs_done"], result["lost"], result["duplicated"]) == (48, 0, 0)  # the clusters' records
    # a's 24 jobs run on b from 400 s on (the configured 300 s), else from 3700 s (the default hour)
    assert soon["makespan"] < 3700 < default["makespan"] < 5100


def test_in_the_simulator_the_last_jobs_of_a_campaign_leave_a_silent_cluster_within_a_minute():
    """Issue 21, item 3: when a's outage catches jobs of a campaign with none left to launch, they run again
    on b (room for all) a minute after a fell silent, running and queued ones alike, not after
    ``updator.unreachable_running`` (running) or ``updator.unreachable`` (queued); each done once."""
    tail = simulate(parse_scenario(outage_scenario(None, tail=None, b_slots=32)))
    waited = simulate(parse_scenario(outage_scenario(300, b_slots=32)))  # all of a's after 300 s
    for result in (tail, waited):
        assert (result["jobs_done"], result["lost"], result["duplicated"]) == (48, 0, 0)  # the clusters' records
    # a falls silent at 100 s: its jobs start on b by 100 + 60 + a pass and end 200 s later; waited on for
    # 300 s, they start after 400 s
    assert tail["makespan"] < 100 + 60 + 30 + 200 + 30 < 400 + 200 <= waited["makespan"]


def test_through_a_real_adapter_a_cluster_away_too_long_has_its_jobs_rerun_here_and_its_copies_killed(
    cli, tmp_path, job_script
):
    oar = OarState(tmp_path / "oar" / "state.json", cores=4)
    install_fake_commands(tmp_path / "bin", oar.path, sys.executable)
    options = ["--slots", "4", "--remote-dir", str(tmp_path / "rd")]
    cli("gridclusters", "add", "oar", "--adapter", "oar-ssh", "--bin-dir", str(tmp_path / "bin"), *options)
    cli("gridevents", "--blacklist-cluster", "local")  # the jobs start on oar
    params = [f"u{i} 600" for i in range(3)]  # 600 s on oar's clock; at once here
    clusters = {"oar": {"exec_file": "/bin/run"}, "local": {}}
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=params, clusters=clusters))
    cli("almighty")
    oar.advance(5)
    cli("almighty")
    assert [job["state"] for job in oar.jobs()] == ["Running"] * 3
    cli("config", "set", "updator.unreachable", "0")
    cli("gridclusters", "set", "oar", "--bin-dir", str(tmp_path / "nowhere"))  # unreachable through its config
    cli("gridevents", "--unblacklist", "local")
    cli("almighty")
    [event] = cli.json("gridevents", "-g")
    assert (event["code"], event["cluster"]) == ("CLUSTER_UNREACHABLE", "oar")
    cli.until_done()
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["ended"], row["waste"]) == ("terminated", 3, 3, 0)
    assert sorted(runs(tmp_path)) == params  # here, each once
    assert [job["state"] for job in oar.jobs()] == ["Running"] * 3, "nothing could reach them there"
    cli("gridclusters", "set", "oar", "--bin-dir", str(tmp_path / "bin"))
    cli("almighty")  # oar answers: its event closes, the copies that lost are killed and counted
    oar.advance(1)
    assert [job["state"] for job in oar.jobs()] == ["Error"] * 3  # OAR's state of a deleted job
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["ended"], row["waste"]) == (3, 3, 3)
    [closed] = cli.json("gridevents", "-g", "-a", "-e", "CLUSTER_UNREACHABLE")
    assert closed["closed_by"] == "auto-fixed: the cluster answers again"


def test_the_admin_marks_a_finished_job_and_its_owner_runs_it_again(tmp_path):
    """CiGri's gridevents --mark-job-event: a job that ended well but whose result is bad gets a manual event;
    its campaign, over, is in treatment again and waits on it; -f -r runs the job again, and the campaign
    ends anew."""
    a = FakeRM("a", 1, queue_depth=0)
    state = tmp_path / "state.db"
    grid, cid = Grid.placed(a, jobs=1, state=state)
    a.end(1, 10, started=5)
    grid.at(20)
    grid.at(30)
    assert grid.store.campaign(cid).state == CampaignState.TERMINATED
    cli = CliGrid(state)
    out = cli("gridevents", "--mark-job-event", "1", "--reason", "empty output")
    assert out == f"job 1 marked (event 1): campaign {cid} waits on it (gridevents -c {cid} -f -r runs it again)\n"
    [event] = cli.json("gridevents", "-c", str(cid))
    assert (event["code"], event["class"], event["job_id"], event["cluster"]) == ("MANUAL", "job", 1, "a")
    assert event["message"] == "marked by root: empty output"
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["blocked"]) == ("in_treatment", f"1 open event(s): see gridevents -c {cid}")
    assert grid.job(1).state == JobState.EVENT and grid.store.campaign(cid).ended_at is None
    grid.at(40)
    assert a.holds(RemoteState.PENDING) == [] and grid.store.campaign(cid).state == CampaignState.IN_TREATMENT
    assert cli("gridevents", "-c", str(cid), "-f", "-r") == "1 event fixed, 1 job resubmitted\n"
    grid.at(50)
    assert a.holds(RemoteState.PENDING) == [1]
    a.end(1, 60, started=55)
    grid.at(70)
    grid.at(80)
    assert grid.store.campaign(cid).state == CampaignState.TERMINATED


def test_only_a_finished_job_is_marked_and_only_by_the_admin(tmp_path, monkeypatch):
    a = FakeRM("a", 1, queue_depth=0)
    state = tmp_path / "state.db"
    grid, cid = Grid.placed(a, jobs=3, state=state)
    a.end(1, 10, exit_code=3, started=5)
    grid.at(20)
    cli = CliGrid(state)
    assert "already waits on an open event" in cli("gridevents", "--mark-job-event", "1", code=1)
    assert "job 2 is to_launch: only a terminated job" in cli("gridevents", "--mark-job-event", "2", code=1)
    cli("gridevents", "--mark-job-event", "99", code=5)
    cli("gridevents", "--mark-job-event", "1", "-c", str(cid), code=1)
    cli("gridevents", "--reason", "x", code=1)
    monkeypatch.setattr("cigri.campaigns.current_user", lambda: "bob")
    with pytest.raises(PermissionDenied, match="only root"):
        ops.mark_job_event(grid.store, 1, "", grid.clock)
    assert [e.code for e in grid.store.events(campaign_id=cid)] == [EventCode.EXIT_ERROR, EventCode.BLACKLIST]


def test_a_multi_line_message_keeps_one_line_per_row_its_breaks_shown_as_backslash_n(cli):
    cli("gridevents", "--blacklist-cluster", "local", "--reason", "disk full\nsee ticket 12\r\n")
    for args in ((), ("-H",)):
        lines = cli("gridevents", "-g", *args).splitlines()
        assert len(lines) == (1 if args else 2), lines
        assert lines[-1].rstrip().endswith("disk full\\nsee ticket 12")
    assert cli.json("gridevents", "-g")[0]["message"].endswith("disk full\nsee ticket 12\r\n")  # JSON: as it is
    assert "Message" not in cli("gridevents", "-g", "-H")


@pytest.mark.parametrize(
    ("owner", "message"),
    [
        ("root", "only root (the state file's owner) administers clusters"),
        ("alice", "only root or alice (the state file's owner) administer clusters"),
    ],
)
def test_the_admins_refusal_names_each_admin_once(tmp_path, monkeypatch, owner, message):
    monkeypatch.setattr("cigri.campaigns.state_owner", lambda store: owner)
    grid = Grid(FakeRM("a", 1), state=tmp_path / "state.db")
    with pytest.raises(PermissionDenied) as refused:
        ops.blacklist_cluster(grid.store, "a", "", grid.clock, user="bob")
    assert str(refused.value) == message
    assert grid.store.events() == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "updator.unreachable_tail: expected seconds, at least 0, got -1"),
        ("soon", "updator.unreachable_tail: expected seconds, at least 0, got 'soon'"),
        (True, "updator.unreachable_tail: expected seconds, at least 0, got True"),
    ],
)
def test_a_bad_unreachable_tail_is_refused_naming_the_key_and_nothing_is_written(tmp_path, value, message):
    store = Store(tmp_path / "state.db")
    with pytest.raises(ConfigError) as caught:
        config.set_value(store, config.UNREACHABLE_TAIL, value)
    assert str(caught.value) == message
    assert config.UNREACHABLE_TAIL not in store.state_settings()


def test_grid_config_sets_the_unreachable_tail_and_refuses_a_negative_one(cli):
    cli("config", "set", "updator.unreachable_tail", "30")
    assert cli.json("config", "show")["updator.unreachable_tail"] == 30
    out = cli("config", "set", "updator.unreachable_tail", "-5", code=4)
    assert "updator.unreachable_tail: expected seconds" in out and "Traceback" not in out
    assert cli.json("config", "show")["updator.unreachable_tail"] == 30
