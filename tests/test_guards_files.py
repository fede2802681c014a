"""Guards of file checks an audit found unpinned (each fails when its check is removed): an output damaged on
its way back is an event and is not kept; a local copy reports the checksum of what arrived; ``grid admin
check`` names a live replica on a cluster the state does not know. scripts/mutations.py holds the mutations they
catch."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from cigri import campaigns as ops
from cigri.adapters.files import LocalFiles
from cigri.cli import grid as grid_command
from cigri.jdl import parse
from cigri.model import DataFile, EventCode, JobState, RemoteState

from .test_placement import FakeRM, Grid


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Outputs(FakeRM):
    """A fake cluster whose jobs write ``result <name>`` in their exec_directory; ``damage`` flips the last
    byte of what arrives at the destination (the sum it reports is the one read at the source)."""

    damage = False

    def job_path(self, directory: str, name: str) -> str:
        return f"{directory}/{name}"

    def put_file(self, source: Path, target: str, expected: DataFile) -> str:
        return expected.sha256

    def get_file(self, source: str, target: Path) -> str | None:
        written = f"result {Path(source).name}\n".encode()
        arrived = written[:-1] + b"?" if self.damage else written
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(arrived)
        return sha256(written)

    def remove_paths(self, paths) -> None:
        pass


def gathered(tmp_path: Path, damage: bool) -> tuple[Grid, Path]:
    """A job of a campaign whose outputs go to tmp_path/results ends on a cluster; the next pass gathers them."""
    a = Outputs("a", 1, queue_depth=0)
    a.damage = damage
    grid = Grid(a)
    jdl = parse(
        {
            "name": "c",
            "exec_file": "run",
            "clusters": {"a": {}},
            "params": ["j1"],
            "output_file": "out_{1}.txt",
            "output_destination": str(tmp_path / "results"),
        }
    )
    ops.submit(grid.store, jdl, grid.clock, user="alice", adapters=grid.clusters.__getitem__)
    grid.at(0)
    a.start(1, 1)
    a.end(1, 10)
    grid.at(11)
    assert grid.job(1).state == JobState.TERMINATED
    grid.at(20)
    return grid, tmp_path / "results" / "j1" / "out_j1.txt"


def test_an_output_gathered_whole_is_kept_without_an_event(tmp_path: Path):
    grid, output = gathered(tmp_path, damage=False)
    assert output.read_text() == "result out_j1.txt\n"
    assert grid.store.events(open_only=False) == []


def test_an_output_damaged_in_transfer_is_an_event_and_is_not_kept(tmp_path: Path):
    grid, output = gathered(tmp_path, damage=True)
    assert not output.exists(), "a damaged copy is not left for the user to read"
    [event] = grid.store.events()
    assert (event.code, event.job_id) == (EventCode.OUTPUT_ERROR, 1)
    assert "output out_j1.txt of job j1: damaged in transfer" in event.message


class Here(LocalFiles):
    """The local clusters' file moves (their adapter's), with this folder as home."""

    def __init__(self, home: Path):
        self.home = str(home)
        self.config: dict = {}


def test_a_local_copy_reports_the_checksum_of_what_arrived(tmp_path: Path):
    """The file sent is not the one expected (changed since it was checked): the copy's own sum says so, and
    staging refuses it (tests/test_staging.py)."""
    source = tmp_path / "data.bin"
    source.write_bytes(b"changed since\n")
    expected = DataFile("data.bin", 6, sha256(b"as it was checked\n"))
    target = tmp_path / "cache" / "1" / "data.bin"
    assert Here(tmp_path).put_file(source, str(target), expected) == sha256(b"changed since\n")
    assert target.read_bytes() == b"changed since\n"


def test_grid_admin_check_names_a_live_replica_on_an_unknown_cluster(tmp_path: Path):
    """A state whose job 1 runs on a, with a running replica on 'atlantis', a cluster the state does not know:
    no pass could follow or kill it."""
    state = tmp_path / "state.db"
    a = FakeRM("a", 2)
    grid = Grid(a, state=state)
    grid.submit(2)
    grid.at(0)
    a.start(1, 1)
    grid.at(10)
    grid.cycle.close()
    grid.store.close()

    def check() -> tuple[int, str]:
        result = CliRunner().invoke(grid_command, ["--state", str(state), "admin", "check"])
        return result.exit_code, result.output

    assert check() == (0, "")
    with sqlite3.connect(state) as conn:
        conn.execute(
            "INSERT INTO replicas (job_id, campaign_id, cluster, state, remote_id, created_at) "
            "VALUES (1, 1, 'atlantis', 'running', '77', 10)"
        )
        conn.execute(
            "INSERT INTO replicas (job_id, campaign_id, cluster, state, remote_id, created_at) "
            "VALUES (1, 1, 'atlantis', 'killed', '78', 10)"
        )
    conn.close()
    code, out = check()
    assert code == 11
    assert out.splitlines()[0] == "replicas: replica 1 (running): on unknown cluster atlantis", out
    assert "replica 2" not in out, "a replica over is nothing to follow"
    assert a.holds(RemoteState.RUNNING) == [1]
