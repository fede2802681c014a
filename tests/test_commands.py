"""CiGri's commands and options as a user coming from CiGri tries them (issue 14 item 1), and completion (item 5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from cigri import campaigns
from cigri.cli import grid, griddel, gridstat
from cigri.model import Capacity
from cigri.store import Store
from cigri.wording import counted

from .conftest import write_jdl


def _run(command, *args, code: int = 0, prog: str = "grid", env: dict | None = None):
    result = CliRunner().invoke(command, list(args), prog_name=prog, catch_exceptions=False, env=env)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result


def _submit(cli, tmp_path, name="sweep", params=("a 1", "b 2")) -> int:
    return cli.submit(write_jdl(tmp_path, name=name, exec_file="/bin/true", params=list(params)))


# ---- --version ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gridsub", "gridstat", "griddel", "gridevents", "gridclusters"])
def test_every_standalone_command_answers_version(name):
    from cigri.cli import STANDALONE

    out = _run(STANDALONE[name], "--version", prog=name).output
    assert out.startswith(f"{name}, version ")
    assert _run(grid, name, "--version").output.startswith(f"grid {name}, version ")


# ---- gridsub -n ---------------------------------------------------------------------------------


def test_gridsub_n_prints_the_expanded_jobs_and_writes_nothing(cli, state, tmp_path):
    path = write_jdl(tmp_path, name="sweep", exec_file="/bin/echo", params=["a 1", "b 2"])
    out = cli("gridsub", "-n", str(path))
    assert "job a: /bin/echo a 1" in out and "job b: /bin/echo b 2" in out
    assert "nothing submitted" in out
    assert cli.json("gridstat") == []


# ---- gridstat -f header, -e, one state spelling -------------------------------------------------


def test_gridstat_full_has_a_header_unless_H(cli, tmp_path):
    campaign = _submit(cli, tmp_path)
    lines = cli("gridstat", "-c", str(campaign), "-f").splitlines()
    assert lines[0].split() == ["Job", "Remote", "State", "Cluster", "Name", "Params"]
    assert len(lines) == 3
    headerless = cli("gridstat", "-c", str(campaign), "-f", "-H").splitlines()
    assert [line.split() for line in headerless] == [line.split() for line in lines[1:]]


def test_gridstat_e_lists_a_campaigns_events(cli, store, tmp_path):
    from cigri.model import EventClass, EventCode

    campaign = _submit(cli, tmp_path)
    with store.transaction():
        store.open_event(EventClass.CAMPAIGN, EventCode.EXIT_ERROR, "job a exited 3", 1.0, campaign_id=campaign)
    out = cli("gridstat", "-c", str(campaign), "-e")
    assert "EXIT_ERROR" in out and "job a exited 3" in out
    events = cli.json("gridstat", "-c", str(campaign), "-e")
    assert [e["code"] for e in events] == ["EXIT_ERROR"]


def test_gridstat_e_needs_a_campaign(state):
    result = _run(grid, "--state", str(state), "gridstat", "-e", code=2)
    assert "-e" in result.stderr


def test_one_campaign_state_spelling_everywhere(cli, state, tmp_path):
    running = _submit(cli, tmp_path, name="r")
    paused = _submit(cli, tmp_path, name="p")
    cli("griddel", "-p", str(paused))
    listing = cli("gridstat")
    detail = cli("gridstat", "-c", str(paused))
    rows = {r["id"]: r for r in cli.json("gridstat")}
    assert rows[running]["state"] == "in_treatment" and rows[paused]["state"] == "paused"
    assert "letter" not in rows[running]
    assert cli.json("gridstat", "-c", str(paused))["state"] == "paused"
    assert " paused " in f" {listing} " and "State:" in detail and "paused" in detail
    assert "in_treatment" in listing
    assert " P " not in listing  # no second spelling


# ---- griddel --purge ----------------------------------------------------------------------------


def test_purge_removes_an_ended_campaign_and_its_files(cli, state, tmp_path):
    campaign = _submit(cli, tmp_path)
    kept = _submit(cli, tmp_path, name="kept")
    store = Store(state)
    with store.transaction():
        [job, _] = [j.id for j in store.jobs(campaign)]
        store.finish_batch(store.create_batch("local", campaign, [job], 1.0), {job: "7"}, 1.0)
    store.close()
    outputs = state.parent / "clusters" / "local" / "out"
    outputs.mkdir(parents=True, exist_ok=True)
    files = [outputs / "7.out", outputs / "7.err", outputs / "8.out"]  # 8: another campaign's job
    for path in files:
        path.write_text("x")
    cli("griddel", str(campaign))
    out = cli("griddel", "--purge", str(campaign))
    assert f"campaign {campaign} purged" in out
    assert [path.exists() for path in files] == [False, False, True]
    assert [r["id"] for r in cli.json("gridstat")] == [kept]
    cli("gridstat", "-c", str(campaign), code=5)
    assert cli.json("gridstat", "-f") and all(j["campaign_id"] == kept for j in cli.json("gridstat", "-f"))


def test_ids_are_never_reused_after_a_purge(cli, state, tmp_path):
    """Issue 24: the next gridsub printed the purged campaign's id again (its output folders, named by
    {CAMPAIGN_ID}, then collide), and its jobs took the purged jobs' ids."""
    first = _submit(cli, tmp_path)
    jobs = [j["id"] for j in cli.json("gridstat", "-f", "-c", str(first))]
    cli("griddel", str(first))
    cli("griddel", "--purge", str(first))
    second = _submit(cli, tmp_path, name="second")
    assert second > first
    assert min(j["id"] for j in cli.json("gridstat", "-f", "-c", str(second))) > max(jobs)
    cli("griddel", str(second))
    cli("griddel", "--purge", str(second))
    cli("almighty")  # a pass between, as cron's
    third = _submit(cli, tmp_path, name="third")
    assert third > second, "each purge raises the floor"


def test_purge_refuses_a_running_campaign_and_purges_none(cli, state, tmp_path):
    ended = _submit(cli, tmp_path, name="ended")
    cli("griddel", str(ended))
    campaign = _submit(cli, tmp_path)
    result = _run(grid, "--state", str(state), "griddel", "--purge", str(ended), str(campaign), code=1)
    assert "still running" in result.stderr and len(result.stderr.splitlines()) == 1
    assert [r["id"] for r in cli.json("gridstat")] == [ended, campaign]


def test_purge_is_owner_checked(cli, state, tmp_path, monkeypatch):
    campaign = _submit(cli, tmp_path)
    cli("griddel", str(campaign))
    monkeypatch.setattr(campaigns, "current_user", lambda: "someone-else")
    result = _run(grid, "--state", str(state), "griddel", "--purge", str(campaign), code=6)
    assert "error" in result.stderr
    monkeypatch.undo()
    assert [r["id"] for r in cli.json("gridstat")] == [campaign]


def test_purge_forgets_the_local_spools_rows_of_its_jobs(cli, state, tmp_path):
    from cigri.adapters.local_rm import Spool

    campaign = _submit(cli, tmp_path)
    spool = Spool(state.parent / "clusters" / "local")
    job = {"argv": ["/bin/true"], "cwd": str(tmp_path), "env": {}, "walltime": 60, "slots": 1}
    [mine, other] = spool.submit("b1", [job, job], 1.0)
    spool.cancel([mine, other], 2.0)
    store = Store(state)
    with store.transaction():
        first = next(store.jobs(campaign)).id
        store.finish_batch(store.create_batch("local", campaign, [first], 1.0), {first: str(mine)}, 1.0)
    store.close()
    cli("griddel", str(campaign))
    cli("griddel", "--purge", str(campaign))
    assert [row[0] for row in spool.rows([mine, other])] == [other]
    spool.close()


# ---- gridclusters -i / -u / -b ------------------------------------------------------------------


def test_gridclusters_info_masks_secrets(cli, state):
    cli("gridclusters", "add", "dahu", "--adapter", "oar-rest", "--url", "http://me:sekret-pw@x/oarapi")
    out = cli("gridclusters", "-i", "dahu")
    assert "oar-rest" in out and "x/oarapi" in out and "sekret-pw" not in out
    info = cli.json("gridclusters", "-i", "dahu")
    assert (info["name"], info["adapter"], info["state"]) == ("dahu", "oar-rest", "PROBLEM")  # x: no such host
    assert "sekret" not in json.dumps(info)


def test_gridclusters_info_of_an_unknown_cluster(state):
    result = _run(grid, "--state", str(state), "gridclusters", "-i", "nowhere", code=5)
    assert "nowhere" in result.stderr


def test_gridclusters_usage_from_the_last_recorded_sample(cli, state):
    store = Store(state)
    with store.transaction():
        store.record_usage({"local": Capacity(total=8, used=5, grid_used=3, queued=1)}, 100.0)
    store.close()
    rows = cli.json("gridclusters", "-u")
    assert rows == [
        {"cluster": "local", "max": 8, "used": 5, "used_by_grid": 3, "unavailable": 0, "recorded_at": 100.0}
    ]
    figures = cli("gridclusters", "-u").splitlines()
    assert figures[0].split()[:5] == ["Cluster", "Max", "Used", "By", "grid"]
    bars = cli("gridclusters", "-b")
    assert "local" in bars and "###" in bars


def test_gridclusters_usage_counts_the_slots_the_rm_reports_down(cli, state):
    store = Store(state)
    with store.transaction():
        store.record_usage({"local": Capacity(total=6, used=3, grid_used=1, queued=0, down=2)}, 100.0)
    store.close()
    [row] = cli.json("gridclusters", "-u")
    assert (row["max"], row["used"], row["unavailable"]) == (8, 3, 2)
    [bar] = [line for line in cli("gridclusters", "-b", "-H").splitlines() if line.startswith("local")]
    assert bar.count("x") == 10 and bar.count("#") == 5  # 2 of 8 slots down over 40 cells; 1 for the grid
    cli("gridevents", "--blacklist-cluster", "local")
    [row] = cli.json("gridclusters", "-u")
    assert row["unavailable"] == 8  # all of it, while blacklisted


def test_gridclusters_usage_never_recorded(cli):
    out = cli("gridclusters", "-u")
    assert "local" in out and "no usage recorded" in out


# ---- completion ---------------------------------------------------------------------------------


def _complete(command, prog: str, words: str, state) -> list[str]:
    env = {
        f"_{prog.upper()}_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        "CIGRI_STATE": str(state),
    }
    result = CliRunner().invoke(command, [], prog_name=prog, env=env, catch_exceptions=False)
    assert "Traceback" not in result.output
    return [line.split(",", 1)[1] for line in result.output.splitlines() if "," in line]


def test_campaign_ids_and_cluster_names_complete(cli, state, tmp_path):
    first = _submit(cli, tmp_path, name="one")
    second = _submit(cli, tmp_path, name="two")
    assert {str(first), str(second)} <= set(_complete(gridstat, "gridstat", "gridstat -c ", state))
    assert {str(first), str(second)} <= set(_complete(griddel, "griddel", "griddel ", state))
    assert "local" in _complete(grid, "grid", "grid gridclusters -i ", state)


def test_completion_never_creates_a_state_file(tmp_path):
    missing = tmp_path / "none" / "state.db"
    assert _complete(gridstat, "gridstat", "gridstat -c ", missing) == []
    assert not missing.parent.exists()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_are_valid(shell, tmp_path):
    out = _run(grid, "completion", shell).output
    assert "_GRID_COMPLETE" in out
    for name in ("gridstat", "griddel", "gridsub", "gridevents", "gridclusters"):
        assert f"_{name.upper()}_COMPLETE" in out
    binary = shutil.which(shell)
    if binary is None:  # .ci/run installs zsh and fish: in CI a missing shell fails
        if os.environ.get("CI"):
            pytest.fail(f"{shell} is not installed (CI=true: .ci/run installs it)")
        pytest.skip(f"{shell} is not installed")
    script = tmp_path / f"completion.{shell}"
    script.write_text(out)
    check = subprocess.run([binary, "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_completion_of_an_unknown_shell(state):
    result = _run(grid, "completion", "tcsh", code=2)
    assert "tcsh" in result.stderr


def test_a_metasched_pass_records_the_usage(cli, tmp_path):
    _submit(cli, tmp_path)
    cli("metasched")
    [row] = cli.json("gridclusters", "-u")
    assert (row["cluster"], row["max"], row["unavailable"]) == ("local", 2, 0)
    assert row["recorded_at"] is not None


def test_gridstat_d_is_cigris_json_dump_and_p_its_pretty_one(cli, tmp_path):
    campaign = _submit(cli, tmp_path)
    assert json.loads(cli("gridstat", "-d")) == cli.json("gridstat")
    assert json.loads(cli("gridstat", "-c", str(campaign), "-d"))["id"] == campaign
    pretty = cli("gridstat", "-c", str(campaign), "-p")
    assert pretty.startswith('{\n  "id": ') and json.loads(pretty)["id"] == campaign  # indented, as -d is


def test_gridstat_campaign_H_drops_the_cluster_tables_header(cli, tmp_path):
    campaign = _submit(cli, tmp_path)
    with_header = cli("gridstat", "-c", str(campaign))
    without = cli("gridstat", "-c", str(campaign), "-H")
    assert "Jobs sent" in with_header and "Jobs sent" not in without


def test_gridclusters_info_and_the_list_show_the_same_state(cli, state):
    cli("gridclusters", "add", "far", "--adapter", "oar-rest", "--url", "http://127.0.0.1:1/oarapi")
    listed = {row["name"]: row for row in cli.json("gridclusters")}
    for name, expected in (("far", "PROBLEM"), ("local", "ok")):
        info = cli.json("gridclusters", "-i", name)
        assert info["state"] == listed[name]["state"] == expected
        assert info["problem"] == listed[name]["problem"]
    assert "Connection refused" in listed["far"]["problem"]
    lines = cli("gridclusters", "-i", "far").splitlines()
    assert "State:       PROBLEM" in lines
    assert any(line.startswith("Problem:") and "Connection refused" in line for line in lines)


def test_one_of_anything_is_said_in_the_singular(cli, tmp_path):
    jdl = write_jdl(tmp_path, exec_file="/bin/true", params=["a"])
    assert "(default): 1 job\n" in cli("gridsub", "--dry-run", str(jdl))
    cid = cli.submit(jdl)
    assert cli("gridsub", "-c", str(cid), "-J", '["b"]') == f"1 job added to campaign {cid}\n"
    assert (counted(0, "job"), counted(1, "slot"), counted(2, "copy", "copies")) == ("0 jobs", "1 slot", "2 copies")
