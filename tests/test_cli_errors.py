"""Bad input to every command: one clear line on stderr, the documented exit code, and nothing written.

No test here runs almighty: campaigns name the ``local`` cluster but never start, and the campaigns a
test needs in another state are made through the library.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from cigri import campaigns, jdl
from cigri.adapters import registry
from cigri.cli import STANDALONE, grid
from cigri.clock import RealClock
from cigri.clusters import ensure_default
from cigri.model import CampaignState, EventClass, EventCode
from cigri.store import Store

GOOD = {"name": "sweep", "exec_file": "/bin/true", "clusters": {"local": {}}, "params": ["a 1", "b 2"]}

RUNNING, TERMINATED, CANCELLED = 1, 2, 3  # the campaigns of the state fixture
OPEN_EVENT, CLOSED_EVENT = 1, 2


def jdl_json(**changes) -> str:
    """GOOD with some keys changed (None: removed), as CiGri's JSON."""
    data = {**GOOD, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not None})


@pytest.fixture
def state(tmp_path) -> Path:
    """A state with a running campaign (jobs a, b), a terminated one (c), a cancelled one (d), an open and a
    closed event on the running one."""
    path = tmp_path / "state.db"
    clock = RealClock()
    store = Store(path)
    try:
        ensure_default(store, clock)
        for name in ("running", "terminated", "cancelled"):
            params = {"running": ["a 1", "b 2"], "terminated": ["c"], "cancelled": ["d"]}[name]
            campaigns.submit(store, jdl.parse({**GOOD, "name": name, "params": params}), clock)
        with store.transaction():
            store.set_campaign_state(TERMINATED, CampaignState.TERMINATED, clock.now())
            for _ in (OPEN_EVENT, CLOSED_EVENT):
                store.open_event(
                    EventClass.CAMPAIGN, EventCode.EXIT_ERROR, "job a exited 1", clock.now(), campaign_id=RUNNING
                )
            store.close_events([CLOSED_EVENT], clock.now())
        campaigns.cancel(store, CANCELLED, clock)
    finally:
        store.close()
    return path


def dump(path: Path) -> list[str]:
    """Everything the state file holds (campaigns, jobs, clusters, events, ...), as SQL."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def refuse(state: Path, args: list[str], code: int, *fragments: str, command=grid, prog="grid", snapshot=dump):
    """Run a command that must fail: one line on stderr naming ``fragments``, exit ``code``, state untouched."""
    before = snapshot(state) if state.is_file() else None
    result = CliRunner().invoke(command, ["--state", str(state), *args], prog_name=prog, catch_exceptions=False)
    assert "Traceback" not in result.output
    assert result.exit_code == code, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(prog) and ": error: " in lines[0], lines[0]
    for fragment in fragments:
        assert fragment in lines[0]
    assert result.stdout == ""
    if before is not None:
        assert snapshot(state) == before, "a refused command changed the state"
    return lines[0]


# ---- gridsub ------------------------------------------------------------------------------------

BAD_JDLS = {
    "invalid_yaml": ("name: [sweep\nclusters: {local: {}}\n", "not valid YAML at line"),
    "invalid_json": ('{"name": "sweep", "clusters": ', "not valid JSON"),
    "not_a_mapping": ("- name: sweep\n", "must be a mapping"),
    "unknown_cluster_key": (jdl_json(clusters={"local": {"foo": 1}}), "clusters.local.foo: unknown key"),
    "unknown_global_key": (jdl_json(colour="red"), "colour: unknown key"),
    "key_given_twice": (jdl_json(NAME="other"), "name: given twice"),
    "no_name": (jdl_json(name=None), "name: required"),
    "no_clusters": (jdl_json(clusters={}), "clusters: required"),
    "no_exec_file": (jdl_json(exec_file=None), "clusters.local.exec_file: required"),
    "bad_walltime": (jdl_json(walltime="1h"), "clusters.local.walltime"),
    "zero_walltime": (jdl_json(clusters={"local": {"walltime": "00:00:00"}}), "clusters.local.walltime"),
    "negative_grace": (
        jdl_json(checkpointing_type="signal", checkpointing_grace="-1"),
        "clusters.local.checkpointing_grace: the grace must be HH:MM:SS or seconds, not '-1'",
    ),
    "bad_resources": (jdl_json(resources="/nodes=two"), "clusters.local.resources"),
    "unknown_resource": (jdl_json(resources="/gpu=1"), "clusters.local.resources: unknown resource 'gpu'"),
    "zero_cores": (jdl_json(resources="/core=0"), "clusters.local.resources"),
    "bad_type": (jdl_json(type="urgent"), "clusters.local.type"),
    "bad_test_mode": (jdl_json(test_mode="maybe"), "clusters.local.test_mode"),
    "bad_max_jobs": (jdl_json(max_jobs=0), "clusters.local.max_jobs"),
    "bad_prologue": (jdl_json(prologue=[1, 2]), "clusters.local.prologue"),
    "unknown_cluster": (jdl_json(clusters={"nowhere": {}}), "clusters.nowhere: unknown cluster"),
    "local_two_nodes": (jdl_json(resources="/nodes=2"), "clusters.local.resources"),
    "local_too_many_cores": (jdl_json(resources="/core=100000"), "clusters.local.resources"),
    "duplicate_job_names": (jdl_json(params=["a 1", "b", "a 2"]), "params[2]: job name 'a' is used twice"),
    "empty_param_line": (jdl_json(params=["a", "  "]), "params[1]"),
    "unbalanced_quote": (jdl_json(params=["a 'x"]), "params[0]"),
    "no_params": (jdl_json(params=[]), "params"),
    "params_and_nb_jobs": (jdl_json(nb_jobs=3), "params: give exactly one of params, param_file or nb_jobs"),
    "no_param_source": (jdl_json(params=None), "params: give exactly one"),
    "param_file_missing": (jdl_json(params=None, param_file="/nonexistent/params.txt"), "param_file: cannot read"),
    "param_file_is_directory": (jdl_json(params=None, param_file="/"), "param_file: cannot read"),
    "negative_nb_jobs": (jdl_json(params=None, nb_jobs=-1), "nb_jobs"),
}


@pytest.mark.parametrize("text, message", BAD_JDLS.values(), ids=BAD_JDLS.keys())
def test_gridsub_bad_jdl_file(state, tmp_path, text, message):
    path = tmp_path / "campaign.jdl"
    path.write_text(text)
    refuse(state, ["gridsub", str(path)], 3, message)
    refuse(state, ["gridsub", "--dry-run", "-f", str(path)], 3, message)


def test_gridsub_bad_jdl_as_json_option(state):
    refuse(state, ["gridsub", "-j", '{"name": '], 3, "-j JSON is not valid JSON")
    refuse(state, ["gridsub", "-j", "[1, 2]"], 3, "must be a mapping")
    refuse(state, ["gridsub", "-j", jdl_json(clusters={"local": {"foo": 1}})], 3, "clusters.local.foo")


def test_gridsub_missing_file(state, tmp_path):
    refuse(state, ["gridsub", str(tmp_path / "nope.yaml")], 3, "cannot read", "nope.yaml")


def test_gridsub_jdl_that_is_not_utf8(state, tmp_path):
    path = tmp_path / "campaign.yaml"
    path.write_bytes(b"name: \xff\xfe\n")
    refuse(state, ["gridsub", str(path)], 3, "not UTF-8")


def test_gridsub_param_file_that_is_not_utf8(state, tmp_path):
    (tmp_path / "params.txt").write_bytes(b"a 1\n\xff\xfe\n")
    path = tmp_path / "campaign.json"
    path.write_text(jdl_json(params=None, param_file="params.txt"))
    refuse(state, ["gridsub", str(path)], 3, "param_file", "not UTF-8")


def test_gridsub_jdl_path_is_a_directory(state, tmp_path):
    refuse(state, ["gridsub", str(tmp_path)], 2, "is a directory")


def test_gridsub_usage_mistakes(state, tmp_path):
    path = tmp_path / "campaign.json"
    path.write_text(jdl_json())
    refuse(state, ["gridsub"], 2, "no JDL given")  # usage mistakes exit 2, as click's own
    refuse(state, ["gridsub", str(path), "-j", jdl_json()], 2, "not both")
    refuse(state, ["gridsub", "-t", "urgent", str(path)], 2, "'-t' / '--type'")
    refuse(state, ["gridsub", "--colour", str(path)], 2, "No such option '--colour'")
    refuse(state, ["gridsub", str(path), str(path)], 2, "unexpected extra argument")


def test_gridsub_jobs_without_campaign(state, tmp_path):
    params = tmp_path / "more.txt"
    params.write_text("e\n")
    refuse(state, ["gridsub", "-F", str(params)], 2, "give -c CAMPAIGN too")
    refuse(state, ["gridsub", "-J", '["e"]'], 2, "give -c CAMPAIGN too")


def test_gridsub_add_to_unknown_campaign(state):
    refuse(state, ["gridsub", "-c", "99", "-J", '["e"]'], 5, "no campaign 99")
    refuse(state, ["gridsub", "-c", "99", "-J", '["e"]', "--dry-run"], 5, "no campaign 99")


@pytest.mark.parametrize("campaign", ["x", "0", "-1", "99999999999999999999"])
def test_gridsub_campaign_that_is_not_an_id(state, campaign):
    refuse(state, ["gridsub", "-c", campaign, "-J", '["e"]'], 2, "'-c' / '--campaign'")


def test_gridsub_add_duplicate_names_adds_nothing(state, tmp_path):
    refuse(state, ["gridsub", "-c", "1", "-J", '["e 1", "f", "e 2"]'], 3, "job name 'e' is used twice")
    refuse(state, ["gridsub", "-c", "1", "-J", '["e", "a"]'], 3, "job name 'a' is used twice")
    params = tmp_path / "more.txt"
    params.write_text("e\nf\nb 3\n")
    refuse(state, ["gridsub", "-c", "1", "-F", str(params)], 3, "line 3", "job name 'b' is used twice")
    refuse(state, ["gridsub", "-c", "1", "-F", str(params), "--dry-run"], 3, "job name 'b' is used twice")


def test_gridsub_add_bad_job_sources(state, tmp_path):
    jdl_file = tmp_path / "campaign.json"
    jdl_file.write_text(jdl_json(params=["e"]))
    refuse(state, ["gridsub", "-c", "1"], 2, "-F FILE or -J JSON_ARRAY")  # usage mistakes: exit 2
    refuse(state, ["gridsub", "-c", "1", "-J", '["f"]', str(jdl_file)], 2, "give no JDL")
    refuse(state, ["gridsub", "-c", "1", "-J", '["f"]', "-j", jdl_json()], 2, "give no JDL")
    refuse(state, ["gridsub", "-c", "1", "-J", '["f"]', "-t", "test"], 2, "give no JDL")
    refuse(state, ["gridsub", "-c", "1", "-F", str(tmp_path / "nope.txt")], 3, "-F: cannot read")
    refuse(state, ["gridsub", "-c", "1", "-F", str(tmp_path)], 2, "is a directory")
    refuse(state, ["gridsub", "-c", "1", "-J", "e f"], 3, "-J: not valid JSON")
    refuse(state, ["gridsub", "-c", "1", "-J", "[]"], 3, "-J: expected a non-empty JSON array")
    refuse(state, ["gridsub", "-c", "1", "-J", '{"e": 1}'], 3, "-J: expected a non-empty JSON array")
    refuse(state, ["gridsub", "-c", "1", "-J", '["e"]', "-F", str(tmp_path)], 2, "is a directory")


def test_gridsub_add_to_a_cancelled_campaign(state):
    refuse(state, ["gridsub", "-c", str(CANCELLED), "-J", '["e"]'], 1, "jobs can no longer be added")


def test_standalone_gridsub_names_itself(state, tmp_path):
    line = refuse(state, ["-c", "99", "-J", '["e"]'], 5, command=STANDALONE["gridsub"], prog="gridsub")
    assert line == "gridsub: error: no campaign 99"
    refuse(state, ["-t", "x"], 2, "(see gridsub --help)", command=STANDALONE["gridsub"], prog="gridsub")


def test_gridsub_lone_surrogate_is_a_jdl_error(state):
    """jdl.parse accepts strings SQLite cannot store ("\\udc80" in JSON): store.create_campaign crashes."""
    refuse(state, ["gridsub", "-j", jdl_json(name="\udc80")], 3, "name")
    refuse(state, ["gridsub", "-j", jdl_json(params=["a\udc80"])], 3, "params[0]")


def test_gridsub_walltime_beyond_a_year_is_refused(state):
    """jdl.parse_walltime has no upper bound: 10**20 s is accepted and almighty's runner then crashes
    (OverflowError inserting it into the local RM's spool)."""
    refuse(state, ["gridsub", "-j", jdl_json(walltime=10**20)], 3, "clusters.local.walltime")


# ---- gridstat -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["-c", "99"], 5, "no campaign 99"),
        (["99"], 5, "no campaign 99"),
        (["-f", "-c", "99"], 5, "no campaign 99"),
        (["-j", "99"], 5, "no job 99"),
        (["-j", "99", "--json"], 5, "no job 99"),
        (["-O"], 1, "-O and -E go with -j JOB"),
        (["-E", "-c", "1"], 1, "-O and -E go with -j JOB"),
        (["-j", "1", "-O"], 1, "job 1 has not run yet: no stdout"),
        (["-c", "x"], 2, "'-c' / '--campaign'"),
        (["-j", "99999999999999999999"], 2, "out of range for an id"),
        (["0"], 2, "out of range for an id"),
        (["-u"], 2, "Option '-u' requires an argument"),
    ],
)
def test_gridstat_bad_input(state, args, code, message):
    refuse(state, ["gridstat", *args], code, message)


# ---- griddel ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, code, message",
    [
        ([], 1, "which campaign?"),
        (["99"], 5, "no campaign 99"),
        (["-c", "99"], 5, "no campaign 99"),
        (["1", "99"], 5, "no campaign 99"),
        (["-p", "-r", "1"], 1, "-p, -r and --purge exclude each other"),
        (["--purge", "-p", "3"], 1, "-p, -r and --purge exclude each other"),
        (["--purge", str(RUNNING)], 1, "still running"),
        (["-p", str(TERMINATED)], 1, f"campaign {TERMINATED} is terminated, not running: cannot pause"),
        (["-p", str(CANCELLED)], 1, "cannot pause"),
        (["-r", "1"], 1, "campaign 1 is in_treatment, not paused: cannot resume"),
        ([str(TERMINATED)], 1, f"campaign {TERMINATED} is already terminated"),
        ([str(CANCELLED)], 1, f"campaign {CANCELLED} is already cancelled"),
        (["-c", "1,x"], 2, "'x' is not an id"),
        (["-c", "1,0"], 2, "'0' is out of range for an id"),
        (["x"], 2, "'x' is not an id"),
        (["-j", "99"], 5, "no job 99"),
        (["-j", "1", "1"], 1, "-j cancels one job"),
        (["-j", "1", "-p"], 1, "-j cancels one job"),
        (["-j", "4"], 1, "job 4 is cancelled: nothing to cancel"),
    ],
)
def test_griddel_bad_input(state, args, code, message):
    refuse(state, ["griddel", *args], code, message)


@pytest.mark.parametrize("args", [["1", str(TERMINATED)], ["-p", "1", str(TERMINATED)], ["-c", f"1,{CANCELLED}"]])
def test_griddel_changes_no_campaign_when_one_is_refused(state, args):
    refuse(state, ["griddel", *args], 1, "campaign")


# ---- gridevents ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["-r"], 1, "-r goes with -f"),
        (["-r", "-c", "1"], 1, "-r goes with -f"),
        (["99"], 5, "no event 99"),
        (["-c", "99"], 5, "no campaign 99"),
        (["-f"], 1, "say which events to fix"),
        (["-f", "99"], 5, "no event 99"),
        (["-f", "-c", "99"], 5, "no campaign 99"),
        (["-f", "-r", str(CLOSED_EVENT)], 1, f"event {CLOSED_EVENT} is already closed"),
        (["x"], 2, "'x' is not an id"),
        (["-e", "NOPE"], 2, "unknown event code 'NOPE' (valid: EXIT_ERROR, RESUBMIT_LIMIT,"),
        (["-e", "BOGUS", "-c", "1", "-f"], 2, "ADMIN_BLACKLIST"),
        (["1", "-c", "1"], 1, "EVENT_ID and -c exclude each other"),
        (["1", "-e", "EXIT_ERROR"], 1, "EVENT_ID and -e exclude each other"),
        (["-c", "1", "-g"], 1, "-c and -g exclude each other"),
        (["-f", "-a", "-c", "1"], 1, "-f and -a exclude each other"),
        (["-f", "-g"], 1, "-f and -g exclude each other"),
        (["-f", "-c", "1", "--json"], 1, "-f and --json exclude each other"),
        (["-f", "-c", "1", "-H"], 1, "-f and -H exclude each other"),
        (["-H", "--json"], 1, "-H and --json exclude each other"),
        (["--reason", "disk"], 1, "--reason goes with --blacklist-cluster"),
        (["--blacklist-cluster", "local", "-c", "1"], 1, "--blacklist-cluster and -c exclude each other"),
        (["--blacklist-cluster", "local", "--unblacklist", "local"], 1, "exclude each other"),
        (["--unblacklist", "local", "-f"], 1, "--unblacklist and -f exclude each other"),
        (["--blacklist-cluster", "nowhere"], 5, "no cluster named 'nowhere'"),
        (["--unblacklist", "local"], 1, "cluster local is not blacklisted"),
        (["--unblacklist", "nowhere"], 5, "no cluster named 'nowhere'"),
    ],
)
def test_gridevents_bad_input(state, args, code, message):
    refuse(state, ["gridevents", *args], code, message)


# ---- gridclusters -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["add", "big", "--adapter", "pbs"], 4, f"unknown adapter 'pbs' (valid: {', '.join(sorted(registry()))})"),
        (["add", "bad name", "--adapter", "local"], 4, "cluster name 'bad name'"),
        (["add", "-dash", "--adapter", "local"], 2, "No such option"),
        (["add", "local", "--adapter", "local"], 4, "cluster 'local' exists already"),
        (["add", "big", "--adapter", "local", "--slots", "many"], 2, "'--slots': 'many' is not a valid integer"),
        (["add", "big", "--adapter", "local", "--slots", "0"], 4, "slots must be at least 1"),
        (["add", "big", "--adapter", "local", "--queue-depth", "-1"], 4, "queue_depth must be at least 0"),
        (["add", "big"], 2, "Missing option '--adapter'"),
        (["add", "--adapter", "local"], 2, "Missing argument 'NAME'"),
        (["set", "nowhere", "--slots", "2"], 5, "no cluster named 'nowhere'"),
        (["set", "local"], 2, "nothing to set"),
        (["set", "local", "--slots", "0"], 4, "slots must be at least 1"),
        (["set", "local", "--idle-exit", "soon"], 2, "'--idle-exit'"),
        (["remove", "local"], 1, "cluster 'local' is used by a campaign that is not over"),
        (["remove", "nowhere"], 5, "no cluster named 'nowhere'"),
        (["resize", "local"], 2, "No such command 'resize'"),
        (["add", "o", "--adapter", "oar-rest", "--api-flavour", "9"], 4, "api_flavour must be one of 2.5, 3"),
        (["add", "o", "--adapter", "oar-rest", "--auth", "magic"], 4, "auth must be one of ident, bearer"),
        (["add", "s", "--adapter", "slurm-ssh", "--accounting", "maybe"], 4, "accounting must be one of sacct"),
        (["add", "r", "--adapter", "slurm-rest", "--api", "v9"], 4, "api must be one of v0.0.39"),
        (["add", "s", "--adapter", "slurm-ssh", "--slots", "3"], 4, "adapter 'slurm-ssh' has no option 'slots'"),
        (["add", "s", "--adapter", "slurm-ssh", "--port", "ssh"], 2, "'--port': 'ssh' is not a valid integer"),
    ],
)
def test_gridclusters_bad_input(state, args, code, message):
    refuse(state, ["gridclusters", *args], code, message)


# ---- almighty and its stages: refused before any pass runs --------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["almighty", "--period", "0"], "'--period'"),
        (["almighty", "--policy", "random"], "'--policy'"),
        (["almighty", "--loop", "extra"], "unexpected extra argument"),
        (["updator", "--loop"], "No such option '--loop'"),
        (["runner", "1"], "unexpected extra argument"),
        (["gridnothing"], "No such command 'gridnothing'"),
    ],
)
def test_cycle_commands_bad_options(state, args, message):
    refuse(state, args, 2, message)


# ---- the state file -----------------------------------------------------------------------------


def test_state_path_is_a_directory(tmp_path):
    for command in (["gridstat"], ["gridclusters"], ["griddel", "1"], ["gridevents"]):
        refuse(tmp_path, command, 7, "state file", str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_state_path_from_the_environment_is_a_directory(tmp_path):
    result = CliRunner().invoke(grid, ["gridstat"], env={"CIGRI_STATE": str(tmp_path)}, catch_exceptions=False)
    assert result.exit_code == 7
    assert result.stderr.count("\n") == 1 and "state file" in result.stderr
    assert "Traceback" not in result.output


def test_state_in_an_unwritable_location(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    refuse(blocker / "state.db", ["gridstat"], 7, "cannot create state file")
    refuse(blocker / "state.db", ["gridclusters", "add", "big", "--adapter", "local"], 7, "state file")
    assert blocker.read_text() == "not a directory\n"


def test_state_that_is_not_a_database(tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not sqlite " * 200)
    path = tmp_path / "campaign.json"
    path.write_text(jdl_json())
    refuse(garbage, ["gridstat"], 7, "cannot open state file", "not a database", snapshot=Path.read_bytes)
    refuse(garbage, ["gridsub", str(path)], 7, "not a database", snapshot=Path.read_bytes)


@pytest.mark.parametrize(
    "adapter, option, value",
    [
        ("slurm-ssh", "--host", "-oProxyCommand=touch /tmp/pwned"),
        ("slurm-ssh", "--user", "-oProxyCommand=x"),
        ("oar-ssh", "--host", "-F/tmp/evil_config"),
        ("slurm-ssh", "--bin-dir", "-x"),
        ("slurm-ssh", "--identity-file", "-oProxyCommand=x"),
    ],
)
def test_a_cluster_option_that_would_read_as_a_command_option_is_refused(state, adapter, option, value):
    """ssh takes a host that begins with "-" as one of its options (ProxyCommand runs a program)."""
    Store(state).close()
    refuse(
        state,
        ["gridclusters", "add", "evil", "--adapter", adapter, option, value],
        4,
        option[2:].replace("-", "_"),
        "-",
    )
