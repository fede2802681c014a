"""Users: campaigns, jobs and events act only for their owner (root excepted), on every command that changes
or reveals private things (a real second user, ``nobody``, tries each); lists show every campaign of the state
(a state is one user's: tests/test_state_owner.py; the service that will share one grid needs these checks).
Secrets (tokens, passwords, keys) are never printed,
logged, or kept in the saved JDL or the events: each place is tried with a real secret value."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from cigri import campaigns as ops
from cigri import clusters
from cigri.cli import grid
from cigri.clock import RealClock
from cigri.jdl import load
from cigri.secrets import mask, mask_text
from cigri.store import Store

from .conftest import require_root, write_jdl
from .second_user import as_user

SECRET = "Zq7-very-secret-4Kx"


def as_bob(monkeypatch) -> None:
    monkeypatch.setattr("cigri.campaigns.current_user", lambda: "bob")


def alices_campaign(state: Path, tmp_path: Path, job_script: Path, params: list[str], user: str = "alice") -> int:
    store = Store(state)
    try:
        jdl = load(write_jdl(tmp_path, exec_file=str(job_script), params=params))
        return ops.submit(store, jdl, RealClock(), user=user)[0]
    finally:
        store.close()


def state_text(state: Path, table: str) -> str:
    conn = sqlite3.connect(state)
    try:
        return "\n".join(str(row) for row in conn.execute(f"SELECT * FROM {table}"))
    finally:
        conn.close()


@pytest.mark.parametrize(
    "args",
    [
        ["griddel", "{cid}"],
        ["griddel", "-p", "{cid}"],
        ["griddel", "-r", "{cid}"],
        ["griddel", "-j", "1"],
        ["gridevents", "-c", "{cid}", "-f"],
        ["gridevents", "-c", "{cid}", "-f", "-r"],
        ["gridsub", "-c", "{cid}", "-J", '["z 9"]'],
        ["gridsub", "-c", "{cid}", "-J", '["z 9"]', "--dry-run"],
        ["gridstat", "-j", "1", "-O"],
        ["gridstat", "-j", "1", "-E"],
        ["gridstat", "-c", "{cid}", "-J"],
    ],
)
def test_another_user_is_refused_with_one_line_and_nothing_changes(tmp_path, job_script, args):
    """``nobody``, a real second user, runs the command in a child process (its rights are dropped after the
    imports: the checkout and Python may be root's alone), on a state it owns holding root's campaign."""
    with others_folder() as folder:
        state = folder / "state.db"
        store = Store(state)
        clusters.ensure_default(store, RealClock())
        store.close()
        cid = alices_campaign(state, tmp_path, job_script, ["a 1", "b 2"], user="root")
        before = state_text(state, "campaigns") + state_text(state, "jobs") + state_text(state, "events")
        give_to_nobody(folder)
        code, stderr = as_nobody(["--state", str(state), *(a.format(cid=cid) for a in args)])
        assert code == 6, stderr
        assert stderr.splitlines() == [f"grid {args[0]}: error: campaign {cid} belongs to root, not nobody"]
        assert state_text(state, "campaigns") + state_text(state, "jobs") + state_text(state, "events") == before


@contextmanager
def others_folder():
    require_root("a second user's rights")
    folder = Path(tempfile.mkdtemp(prefix="cigri-users-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def give_to_nobody(folder: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    for path in (folder, *folder.iterdir()):
        os.chown(path, nobody.pw_uid, nobody.pw_gid)


def as_nobody(args: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of ``grid ARGS`` run as nobody in a forked child."""
    CliRunner().invoke(grid, ["--help"])  # the imports a command needs, done while they can be read

    def work() -> bytes:
        result = CliRunner().invoke(grid, args)
        return json.dumps([result.exit_code, result.stderr or repr(result.exception)]).encode()

    code, out = as_user(work)
    assert code == 0, out
    exit_code, stderr = json.loads(out)
    return exit_code, stderr


def test_lists_show_every_campaign_of_the_state(cli, state, tmp_path, job_script, monkeypatch):
    cid = alices_campaign(state, tmp_path, job_script, ["a 1"])
    as_bob(monkeypatch)
    assert [row["user"] for row in cli.json("gridstat")] == ["alice"]
    assert cli.json("gridstat", "-c", str(cid))["user"] == "alice"
    assert ["1", "to_launch", "a", "a", "1"] in [
        line.split() for line in cli("gridstat", "-f", "-c", str(cid)).splitlines()
    ]
    assert cli.json("gridevents", "-c", str(cid)) == []


def test_the_owner_and_root_see_the_saved_jdl(cli, state, tmp_path, job_script, monkeypatch):
    cid = alices_campaign(state, tmp_path, job_script, ["a 1"])
    assert cli.json("gridstat", "-c", str(cid), "-J")["name"] == "t"  # the tests run as root
    monkeypatch.setattr("cigri.campaigns.current_user", lambda: "alice")
    assert cli.json("gridstat", "-c", str(cid), "-J")["clusters"]["local"]["exec_file"] == str(job_script)


def test_a_secret_in_the_jdls_environment_reaches_the_job_and_nothing_else(cli, state, tmp_path):
    script = tmp_path / "show.sh"
    script.write_text('#!/bin/sh\nprintf "%s" "$API_TOKEN" > "$(dirname "$0")/got.$1"\n')
    script.chmod(0o755)
    environment = {"API_TOKEN": SECRET, "DB_PASSWORD": SECRET, "MY_SECRET": SECRET, "ssh_key": SECRET, "MODE": "fast"}
    jdl = write_jdl(tmp_path, exec_file=str(script), params=["a"], environment=environment)
    dry = cli("gridsub", str(jdl), "--dry-run")
    cid = cli.submit(jdl)
    ran = cli("-vv", "almighty", "--until-done", "--period", "0.5", "--timeout", "60")
    assert (tmp_path / "got.a").read_text() == SECRET, "the job gets the real value"
    assert "cigri.cycle" in ran, "-vv logs were read"
    saved = cli.json("gridstat", "-c", str(cid), "-J")
    assert saved["clusters"]["local"]["environment"] == {
        "API_TOKEN": "***",
        "DB_PASSWORD": "***",
        "MY_SECRET": "***",
        "ssh_key": "***",
        "MODE": "fast",
    }
    shown = dry + ran + cli("gridstat", "-c", str(cid)) + cli("gridstat", "-c", str(cid), "--json")
    shown += cli("gridstat", "-f", "-c", str(cid)) + cli("gridevents", "-a") + cli("gridstat", "-c", str(cid), "-J")
    assert SECRET not in shown
    assert SECRET not in state_text(state, "campaigns") + state_text(state, "events")


def test_a_password_in_a_clusters_url_is_never_shown_nor_kept_in_its_events(cli, state, tmp_path, job_script):
    url = f"https://bob:{SECRET}@127.0.0.1:9/oarapi"
    shown = cli("gridclusters", "add", "r", "--adapter", "oar-rest", "--url", url, "--timeout", "2")
    shown += cli("gridclusters", "set", "r", "--timeout", "3")
    assert "url=https://bob:***@127.0.0.1:9/oarapi" in shown
    shown += cli("gridclusters") + cli("gridclusters", "--json")
    jdl = write_jdl(tmp_path, exec_file=str(job_script), params=["a"], clusters={"r": {}})
    shown += cli("gridsub", str(jdl))
    logged = cli("-vv", "almighty")  # r cannot be reached: an event, and a warning naming its url
    assert "cannot reach OAR's API at https://bob:***@127.0.0.1:9/oarapi" in logged
    shown += logged
    [event] = cli.json("gridevents", "-g")
    assert "https://bob:***@127.0.0.1:9" in event["message"]
    shown += cli("gridevents", "-g", "-a")
    result = CliRunner().invoke(
        grid, ["--state", str(state), "gridclusters", "set", "r", "--url", f"ftp://x:{SECRET}@h"]
    )
    assert result.exit_code == 4 and "ftp://x:***@h" in result.stderr
    shown += result.output
    assert SECRET not in shown
    assert "bob:***@" in (state.parent / "almighty.log").read_text()  # the almighty's own log, masked too
    assert SECRET not in (state.parent / "almighty.log").read_text()
    assert SECRET not in state_text(state, "events")
    assert SECRET in state_text(state, "clusters"), "the cluster's own configuration keeps it: cigri connects with it"


def test_config_show_masks_a_secret_value(cli, state):
    store = Store(state)
    try:
        with store.transaction():
            store.set_setting("clusters.local.api_token", SECRET)  # no key takes a secret today: masked if one did
    finally:
        store.close()
    shown = cli("config", "show") + cli("config", "show", "--json")
    assert "clusters.local.api_token: '***'" in shown or "clusters.local.api_token: ***" in shown
    assert SECRET not in shown


@pytest.mark.parametrize(
    "text, shown",
    [
        (f"cannot reach https://bob:{SECRET}@h/api", "cannot reach https://bob:***@h/api"),
        (f"Authorization: Bearer {SECRET}", "Authorization: Bearer ***"),
        ("SLURM_JWT=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjaWdyaSJ9.c2ln", "SLURM_JWT=***"),
        (f"job 3 exited; stderr ends with: API_TOKEN={SECRET} not accepted", "API_TOKEN=*** not accepted"),
        (f'{{"db_password": "{SECRET}"}}', '{"db_password": "***"}'),
        ("clusters.local.environment.API_TOKEN: expected a string", "API_TOKEN: expected a string"),
    ],
)
def test_secrets_in_a_text_are_masked_and_the_rest_kept(text, shown):
    assert SECRET not in mask_text(text) and "eyJzdWIi" not in mask_text(text)
    assert shown in mask_text(text)


def test_a_secret_named_value_is_masked_and_a_path_to_one_is_not():
    given = {"environment": {"GITHUB_TOKEN": SECRET, "api_key": SECRET, "keyboard": "us"}, "token_file": "/p"}
    masked = {"GITHUB_TOKEN": "***", "api_key": "***", "keyboard": "us"}
    assert mask(given) == {"environment": masked, "token_file": "/p"}
