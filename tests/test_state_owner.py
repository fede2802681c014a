"""A state file is its owner's: cigri opens only a state (and a configuration file) that the running user owns,
so that a program one user chose (a cluster's ``bin_dir``, a local job, a generator) never runs with another
user's rights. The second user is real: the state is handed to ``nobody`` with chown, as if ``nobody`` had
made it, and root then runs the cycle on it.

These tests need root (to hand files to another user). With CI=true they fail without it; elsewhere they are
skipped with the reason."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from cigri import clusters
from cigri.cli import grid
from cigri.clock import RealClock
from cigri.store import Store

from .conftest import require_root, write_jdl

OTHER = "nobody"


@pytest.fixture(autouse=True)
def _root():
    require_root("handing a state to another user")


@pytest.fixture
def home():
    """A folder of the other user's, as their home would be (in /tmp, as pytest's folders are root's 0700 ones;
    removed at the end)."""
    folder = Path(tempfile.mkdtemp(prefix="cigri-owner-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def give(*paths: Path) -> None:
    other = pwd.getpwnam(OTHER)
    for path in paths:
        os.chown(path, other.pw_uid, other.pw_gid)


def fake_slurm(folder: Path, marker: Path) -> Path:
    """A ``bin_dir`` whose sinfo (the first command a pass or doctor runs) records who ran it."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name in ("sinfo", "squeue", "sbatch", "scontrol", "sacct"):
        command = bin_dir / name
        command.write_text(f"#!/bin/sh\nid -u >> {marker}\nexit 1\n")
        command.chmod(0o755)
    return bin_dir


def others_state(home: Path, marker: Path) -> Path:
    """The state ``nobody`` could make: a slurm-ssh cluster whose commands are nobody's own programs, and a
    campaign on it."""
    state = home / "state.db"
    store = Store(state)
    try:
        clusters.add(store, "evil", "slurm-ssh", {"bin_dir": str(fake_slurm(home, marker))}, RealClock())
    finally:
        store.close()
    give(home, *home.iterdir())
    return state


def run(*args: str):
    return CliRunner().invoke(grid, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", [["almighty"], ["doctor"], ["nikita"], ["gridstat"], ["gridclusters"]])
def test_a_state_another_user_owns_is_refused_and_none_of_its_programs_runs(home, command):
    marker = home / "ran-as"
    state = others_state(home, marker)
    result = run("--state", str(state), *command)
    assert result.exit_code == 6, result.output
    [line] = result.output.splitlines()
    assert f"belongs to {OTHER}" in line and "--trust-owner" in line
    assert not marker.exists(), "nobody's sinfo ran as root"


def test_the_admin_names_the_owner_to_run_their_state_on_purpose(home):
    marker = home / "ran-as"
    state = others_state(home, marker)
    wrong = run("--state", str(state), "--trust-owner", "root", "doctor")
    assert wrong.exit_code == 6 and not marker.exists(), "only the state's owner can be trusted"
    trusted = run("--state", str(state), "--trust-owner", OTHER, "doctor")
    assert "belongs to" not in trusted.output
    assert marker.read_text().split()[0] == "0", "named on purpose: their sinfo runs with the admin's rights"


def test_a_state_in_a_folder_another_user_owns_is_refused(home):
    """Whoever owns the folder can put another file in the state's place, or remove the spools' folder so that
    cigri makes a fresh one (the audit's way around the spools' owner check)."""
    state = home / "state.db"
    Store(state).close()
    give(home)
    result = run("--state", str(state), "gridstat")
    assert result.exit_code == 6 and f"{home} belongs to {OTHER}" in result.output


def test_a_state_in_a_folder_others_may_write_is_refused(home):
    state = home / "state.db"
    Store(state).close()
    home.chmod(0o777)
    result = run("--state", str(state), "gridstat")
    assert result.exit_code == 6 and "may be written by other users" in result.output
    home.chmod(0o1777)  # sticky, as /tmp: no one renames another's files there
    assert run("--state", str(state), "gridstat").exit_code == 0


def test_a_new_state_is_not_made_in_another_users_folder(home):
    give(home)
    result = run("--state", str(home / "state.db"), "gridstat")
    assert result.exit_code == 6 and not (home / "state.db").exists()


def test_a_configuration_file_another_user_owns_is_refused(home, tmp_path):
    """cigri.yaml can declare clusters, and so the programs a pass runs: another user's file (or one they may
    write) is not read."""
    marker = home / "ran-as"
    folder = tmp_path / "grid"
    folder.mkdir()
    state = folder / "state.db"
    Store(state).close()
    config = folder / "cigri.yaml"
    config.write_text(f"clusters:\n  evil:\n    adapter: slurm-ssh\n    bin_dir: {fake_slurm(home, marker)}\n")
    give(config)
    result = run("--state", str(state), "almighty")
    assert result.exit_code == 6 and f"{config} belongs to {OTHER}" in result.output
    assert not marker.exists()
    os.chown(config, 0, 0)
    config.chmod(0o666)
    result = run("--state", str(state), "almighty")
    assert result.exit_code == 6 and "may be written by other users" in result.output
    assert not marker.exists()


def test_the_owner_runs_a_campaign_on_their_own_state(tmp_path):
    """The check costs the owner nothing: a campaign runs to its end."""
    state = tmp_path / "state.db"
    jdl = write_jdl(tmp_path, exec_file="/bin/true", params=["a", "b"])
    assert run("--state", str(state), "gridsub", str(jdl)).exit_code == 0
    done = run("--state", str(state), "almighty", "--until-done", "--period", "0.2", "--timeout", "30")
    assert done.exit_code == 0, done.output
