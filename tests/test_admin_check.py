"""grid admin check: each invariant broken in a real state (campaigns run on the local cluster) is named by
its check; the state as the cycle left it is consistent; the check changes nothing."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from cigri import clusters
from cigri.cli import grid
from cigri.clock import RealClock
from cigri.integrity import CHECKS
from cigri.store import Store

from .conftest import Grid, stop_local_daemons, wait_for, write_jdl


@pytest.fixture(scope="module")
def template(tmp_path_factory, request) -> Path:
    """A state with a campaign over (two jobs done, one failed on an open event) and one whose jobs are
    queued or running on the local cluster, as the cycle left it."""
    folder = tmp_path_factory.mktemp("template")
    path = folder / "state" / "state.db"
    store = Store(path)
    clusters.ensure_default(store, RealClock())
    clusters.set_options(store, "local", {"slots": 1, "idle_exit": 2})
    store.close()
    request.addfinalizer(lambda: stop_local_daemons(path.parent))
    script = folder / "job.sh"
    script.write_text('#!/bin/sh\ncase "$2" in fail) exit 3 ;; sleep) sleep 60 ;; esac\n')
    script.chmod(0o755)
    cli = Grid(path)
    cli.submit(write_jdl(folder, exec_file=str(script), params=["a ok", "b ok", "c fail"]))
    cli.until_done(code=13)  # c's event blocks the campaign
    second = cli.submit(write_jdl(folder, exec_file=str(script), params=["d sleep", "e sleep", "f sleep"]))
    wait_for(lambda: (cli("almighty"), cli.json("gridstat", "-c", str(second))["running"])[1])
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        states = dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
    assert states["terminated"] == 2 and states["event"] == 1 and states["running"] == 1
    return path


@pytest.fixture
def state(template, tmp_path) -> Path:
    copy = tmp_path / "state.db"
    shutil.copy(template, copy)
    return copy


def check(state: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(grid, ["--state", str(state), "admin", "check", *args], catch_exceptions=False)
    return result.exit_code, result.output


def breaking(state: Path, sql: str) -> None:
    conn = sqlite3.connect(state, isolation_level=None)
    conn.executescript(sql)
    conn.close()


# (the check that must name the problem, SQL that breaks its invariant in the template state)
BREAKS = [
    # an index that no longer matches its table
    (
        "sqlite",
        "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = "
        "'CREATE INDEX jobs_campaign_state ON jobs(state, campaign_id, id)' WHERE name = 'jobs_campaign_state';",
    ),
    ("migrations", "DELETE FROM _migrations WHERE name = '010_nikita';"),
    ("migrations", "INSERT INTO _migrations VALUES ('999_future', datetime('now'));"),
    ("values", "UPDATE jobs SET state = 'lost' WHERE state = 'running';"),
    ("values", "UPDATE jobs SET nikita = 'bored' WHERE state = 'submitted';"),
    ("values", "UPDATE batches SET state = 'half' WHERE id = 1;"),
    ("counts", "UPDATE job_counts SET n = n + 1 WHERE state = 'terminated';"),
    ("counts", "UPDATE campaigns SET nb_jobs = 7 WHERE id = 1;"),
    ("references", "UPDATE events SET job_id = 9999;"),
    ("references", "UPDATE events SET job_id = (SELECT id FROM jobs WHERE campaign_id = 2 LIMIT 1);"),
    ("references", "UPDATE jobs SET cluster = 'atlantis' WHERE state = 'terminated';"),
    ("placement", "DELETE FROM campaign_clusters WHERE campaign_id = 2;"),
    ("placement", "UPDATE jobs SET cluster = NULL WHERE state = 'running';"),
    ("remote-ids", "UPDATE jobs SET remote_id = NULL WHERE state = 'running';"),
    ("batches", "UPDATE jobs SET state = 'launching' WHERE state = 'running';"),
    ("batches", "UPDATE jobs SET state = 'launching', batch_id = NULL, cluster = 'local' WHERE name = 'a';"),
    ("campaigns", "UPDATE campaigns SET state = 'terminated', ended_at = 1 WHERE id = 2;"),
    ("campaigns", "UPDATE campaigns SET state = 'cancelled', ended_at = 1 WHERE id = 2;"),
    ("campaigns", "UPDATE campaigns SET state = 'cancelled' WHERE id = 1;"),
    ("campaigns", "UPDATE campaigns SET ended_at = 5 WHERE id = 2;"),
    ("flags", "UPDATE jobs SET kill_requested = 1, remote_id = NULL WHERE state = 'terminated';"),
    (
        "replicas",
        "INSERT INTO replicas (job_id, campaign_id, cluster, state, created_at) "
        "SELECT id, campaign_id, 'local', 'running', 0 FROM jobs WHERE state = 'running';",
    ),
    (
        "replicas",
        "INSERT INTO replicas (job_id, campaign_id, cluster, state, remote_id, created_at) "
        "SELECT id, 1, 'local', 'submitted', '77', 0 FROM jobs WHERE state = 'running';",
    ),
    ("orphans", "INSERT INTO orphans (cluster, remote_id, batch_key) VALUES ('local', NULL, NULL);"),
    ("orphans", "INSERT INTO orphans (cluster, remote_id, batch_key) VALUES ('atlantis', '12', NULL);"),
    ("events", "UPDATE events SET closed_at = 1 WHERE state = 'open';"),
    ("events", "UPDATE events SET state = 'closed' WHERE state = 'open';"),
]


def test_every_check_is_pinned_by_a_break():
    assert {name for name, _ in BREAKS} == set(CHECKS)


def test_the_state_the_cycle_left_is_consistent(state):
    assert check(state) == (0, "")


@pytest.mark.parametrize(("name", "sql"), BREAKS, ids=[f"{name}-{i}" for i, (name, _) in enumerate(BREAKS)])
def test_a_broken_invariant_is_named_by_its_check(state, name, sql):
    breaking(state, sql)
    code, out = check(state)
    assert code == 11
    *lines, last = out.splitlines()
    assert name in {line.split(":", 1)[0] for line in lines}, out
    assert last == f"grid admin check: error: {len(lines)} problem{'s' if len(lines) > 1 else ''} found"


def test_json_lists_each_problem_with_its_check(state):
    breaking(state, "UPDATE job_counts SET n = n + 1 WHERE state = 'terminated';")
    result = CliRunner().invoke(grid, ["--state", str(state), "admin", "check", "--json"])
    assert result.exit_code == 11
    assert json.loads(result.stdout) == [
        {"check": "counts", "problem": "campaign 1: job_counts says 3 terminated, the jobs 2"}
    ]


def test_the_check_changes_nothing_not_even_a_missing_migration(state):
    breaking(state, "DELETE FROM _migrations WHERE name = '010_nikita';")
    before = hashlib.sha256(state.read_bytes()).hexdigest()
    assert check(state) == (11, "migrations: 010_nikita not applied\ngrid admin check: error: 1 problem found\n")
    assert hashlib.sha256(state.read_bytes()).hexdigest() == before
    assert not Path(f"{state}-wal").exists() or Path(f"{state}-wal").stat().st_size == 0


def test_a_missing_state_file_is_an_error_and_is_not_created(tmp_path):
    code, out = check(tmp_path / "none.db")
    assert (code, out) == (5, f"grid admin check: error: no state file {tmp_path / 'none.db'}\n")
    assert not (tmp_path / "none.db").exists()
