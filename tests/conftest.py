"""Shared fixtures: a state file in tmp_path, the CLI on it, and local daemons stopped afterwards."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

from cigri import clusters
from cigri.adapters.local_rm import Spool
from cigri.cli import grid
from cigri.clock import RealClock
from cigri.cycle import Cycle
from cigri.store import Store

from .needs import unavailable
from .oar_local import oar_dir, real_oar  # noqa: F401 (fixtures for the tests that need the real OAR)
from .slurm import shared_dir, slurm  # noqa: F401 (fixtures for the tests that need the real Slurm)

PYTHON = sys.executable
LEFTOVERS = pytest.StashKey[set]()

# a busy machine (CI, two cores shared) makes examples slow, not wrong: no per-example wall-clock deadline
settings.register_profile("cigri", deadline=None)
# CI runs from a temporary clone and must write nothing into it nor into /tmp: no example database (a
# failure prints the blob that replays it), and Hypothesis's caches (Unicode tables, constants), which it
# writes only where it can, sent where nothing can be written
settings.register_profile("cigri-ci", settings.get_profile("cigri"), database=None, print_blob=True)
if os.environ.get("CI"):
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = "/dev/null/hypothesis"
    settings.load_profile("cigri-ci")
else:
    settings.load_profile("cigri")


CLUSTER_HOME = Path("~cigritest").expanduser()  # the cluster user of scripts/slurm-local.sh
OAR_HOME = Path("~oartest").expanduser()  # the OAR user of scripts/oar-local.sh


def watched_leftovers() -> set[Path]:
    """What a test could leave behind: cigri's, OAR's and Slurm's files in /tmp (``slurm-N.out`` is sbatch's
    default output), anything in the cluster users' homes (Slurm's and the real OAR's). Not the
    sockets of ssh masters that outlive their test by ControlPersist: they go with their process."""
    found = {path for pattern in ("cigri*", "OAR.*", "slurm-*.out") for path in Path("/tmp").glob(pattern)}
    for home in (CLUSTER_HOME, OAR_HOME):
        if home.is_dir():
            found |= set(home.rglob("*"))
    return {path for path in found if not path.is_socket()}


def xdist_worker(config) -> bool:
    """Whether this process is one of pytest-xdist's workers (they have ``workerinput``), not the main one."""
    return hasattr(config, "workerinput")


def pytest_sessionstart(session):
    # the main process looks before any worker starts and after all have ended; a worker cannot tell the
    # files another worker's test has not yet cleaned up from leftovers
    if not xdist_worker(session.config):
        session.config.stash[LEFTOVERS] = watched_leftovers()


def pytest_sessionfinish(session):
    """The run fails when it left something new in /tmp or in the cluster user's home."""
    if xdist_worker(session.config):
        return
    new = sorted(str(path) for path in watched_leftovers() - session.config.stash[LEFTOVERS])
    if new:
        shown = ", ".join(new[:10]) + (f" and {len(new) - 10} more" if len(new) > 10 else "")
        session.config.get_terminal_writer().line(f"\ntests left files behind: {shown}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups from the markers
def pytest_collection_modifyitems(config, items):
    """The tests on the real Slurm share its one node (one stops its controller, one preempts every
    best-effort job, the soaks fill it): under pytest-xdist's ``--dist loadgroup`` they form one group, run one
    after the other by one worker while the other workers share the rest. Being the largest group, xdist
    hands it out first, so this longest chain starts at once. (xdist names the group in the test's id, which
    pytest 9.2 no longer lets it change: pyproject.toml keeps pytest below 9.2 until xdist is fixed.)"""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("slurm") or "slurm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif item.get_closest_marker("oar") or "real_oar" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("oar"))  # the real OAR's one node, as Slurm's


SLURM_TIMEOUT = 300  # seconds: the real Slurm's tests wait on its scheduler, and on each other (one node, a lock)
OAR_TIMEOUT = 300  # the real OAR's: 8-10 s a job from submission to its end, walltime kills checked every ~30 s
# the tests that take half a minute or more alone (Slurm checks walltimes every 30 s; the soaks kill an almighty a
# hundred times): on a loaded box, several times that
LONG_TESTS = {
    "test_a_walltime_overrun_is_killed_by_slurm_and_resubmitted": 600,
    "test_a_walltime_kill_is_retried_with_more_walltime_and_a_signal_checkpoint_resumes": 600,
    "test_slurm_over_rest_survives_a_hundred_kills_of_a_looping_almighty": 600,
    "test_slurm_over_ssh_survives_a_hundred_kills_of_a_looping_almighty": 600,
    "test_the_local_cluster_survives_a_hundred_kills_of_a_looping_almighty": 300,
}


def pytest_itemcollected(item):
    """Per-test timeouts (pytest-timeout) beyond pyproject.toml's default: a hang fails in minutes, not at
    CI's limit. A test's own @pytest.mark.timeout wins."""
    if item.get_closest_marker("timeout"):
        return
    seconds = LONG_TESTS.get(getattr(item, "originalname", item.name))
    if seconds is None and (item.get_closest_marker("slurm") or "slurm" in getattr(item, "fixturenames", ())):
        seconds = SLURM_TIMEOUT
    if seconds is None and (item.get_closest_marker("oar") or "real_oar" in getattr(item, "fixturenames", ())):
        seconds = OAR_TIMEOUT
    if seconds is not None:
        item.add_marker(pytest.mark.timeout(seconds))


def require_root(why: str) -> None:
    """Tests that hand files to another real user need root: with CI=true they fail without it (a skipped
    real-system test is not a pass); elsewhere they are skipped, saying why."""
    if os.geteuid() != 0:
        message = f"{why} needs root"
        unavailable(message)


def state_before(path: Path, migration: str):
    """A state file migrated up to, not including, ``migration``: an open sqlite3 connection to it, to write
    the rows an older cigri would have left, then commit and close before a Store opens it."""
    import sqlite3

    from cigri.store import migrations

    assert migration in dict(migrations.MIGRATIONS)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    for name, step in migrations.MIGRATIONS:
        if name == migration:
            break
        step(conn)
        conn.execute("INSERT INTO _migrations VALUES (?, datetime('now'))", (name,))
    return conn


def wait_for(condition, timeout: float = 20.0, interval: float = 0.02):
    """Poll ``condition`` until it returns something true, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


class Grid:
    """Runs ``grid`` commands in-process on one state file."""

    def __init__(self, state: Path):
        self.state = state
        self.runner = CliRunner()

    def __call__(self, *args: str, code: int = 0) -> str:
        result = self.runner.invoke(grid, ["--state", str(self.state), *args], catch_exceptions=False)
        assert result.exit_code == code, f"grid {' '.join(args)} -> {result.exit_code}: {result.output}"
        return result.output

    def json(self, *args: str):
        return json.loads(self(*args, "--json"))

    def submit(self, jdl: Path | str, *extra: str) -> int:
        out = self("gridsub", str(jdl), *extra)
        found = re.search(r"^CAMPAIGN_ID=(\d+)$", out, re.MULTILINE)
        assert found, f"gridsub printed no CAMPAIGN_ID line: {out!r}"
        return int(found.group(1))

    def until_done(self, timeout: float = 60, code: int = 0) -> str:
        return self("almighty", "--until-done", "--period", "0.5", "--timeout", str(timeout), code=code)


@pytest.fixture
def state(tmp_path: Path):
    path = tmp_path / "state" / "state.db"
    store = Store(path)
    clusters.ensure_default(store, RealClock())
    clusters.set_options(store, "local", {"slots": 2, "idle_exit": 2})
    store.close()
    yield path
    stop_local_daemons(path.parent)


def stop_local_daemons(state_dir: Path) -> None:
    """Stop the daemons of the local clusters of the state in ``state_dir`` (their jobs are killed)."""
    for spool in (state_dir / "clusters").glob("*"):
        if (spool / "rm.db").exists():
            s = Spool(spool)
            s.stop_daemon()
            s.close()


@pytest.fixture
def store(state: Path):
    s = Store(state)
    yield s
    s.close()


@pytest.fixture
def cli(state: Path) -> Grid:
    return Grid(state)


@pytest.fixture
def cycle(store: Store):
    c = Cycle(store, RealClock())
    yield c
    c.close()


def write_jdl(directory: Path, **fields) -> Path:
    """A YAML JDL in ``directory`` (JSON is valid YAML, so dump as JSON)."""
    data = {"name": "t", "walltime": "00:01:00", "exec_directory": str(directory), "clusters": {"local": {}}}
    data.update(fields)
    path = directory / f"jdl-{len(list(directory.glob('jdl-*')))}.yaml"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def job_script(tmp_path: Path) -> Path:
    """A job that logs '<name> <args>' to runs.log, and behaves as its first argument says:
    ok, fail (exit 3), sleep:S, once66 (exit 66 the first time only), env (dumps CIGRI_* variables)."""
    script = tmp_path / "job.sh"
    script.write_text(
        """#!/bin/sh
name=$1; shift
echo "$name $*" >> "$(dirname "$0")/runs.log"
case "$1" in
  fail) echo "first line" >&2; echo "failure of $name" >&2; exit 3 ;;
  sleep:*) sleep "${1#sleep:}" ;;
  once66) if [ ! -e "$(dirname "$0")/$name.66" ]; then touch "$(dirname "$0")/$name.66"; exit 66; fi ;;
  env) env | grep '^CIGRI_' | sort > "$(dirname "$0")/$name.env" ;;
esac
echo "done $name"
"""
    )
    script.chmod(0o755)
    return script


def runs(tmp_path: Path) -> list[str]:
    log = tmp_path / "runs.log"
    return log.read_text().splitlines() if log.exists() else []


__all__ = ["PYTHON", "Grid", "runs", "stop_local_daemons", "wait_for", "write_jdl"]
os.environ["CIGRI_STATE"] = "/dev/null/tests-must-use-the-state-fixture"
