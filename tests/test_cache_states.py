"""Two states (two state files of one login) staging into one cluster cache: their campaign ids are the same
numbers, so each state's copies live in a folder of its own (``<cache_dir>/<state instance>/<campaign id>``),
and one state's clean-up never deletes the files another state's jobs read."""

from __future__ import annotations

import hashlib
from pathlib import Path

from cigri.model import RemoteState

from .conftest import Grid as Cli
from .conftest import stop_local_daemons, wait_for, write_jdl
from .test_locality_cycle import CachingRM, submit
from .test_placement import Grid


def test_each_state_stages_into_its_own_folder_and_cleans_only_its_own_copies(tmp_path):
    cluster = CachingRM("a", 4)  # one cluster, one cache, two states using it
    first, second = Grid(cluster), Grid(cluster)
    assert first.store.instance != second.store.instance
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    assert submit(first, tmp_path / "first", ["j1 f1"]) == submit(second, tmp_path / "second", ["j1 f1"]) == 1
    first.at(0)
    second.at(0)
    copies = {f"/cache/a/{grid.store.instance}/1/f1" for grid in (first, second)}
    assert set(cluster.cached) == copies
    job = cluster.remote_of(1)  # the second state's job (the latest job 1 on the cluster) ends...
    cluster.start(1, 1.0)
    cluster.end(1, 2.0)
    assert cluster.jobs[job].state == RemoteState.EXITED
    second.at(30)  # ...so that the second state deletes its copy of f1, which no job of its needs any more
    assert list(cluster.cached) == [f"/cache/a/{first.store.instance}/1/f1"]
    assert cluster.holds(RemoteState.PENDING) == [1]  # the first state's job, whose copy is still there


READER = """#!/bin/sh
# says it started, waits for the test's go (the other state runs meanwhile), writes the checksum of its input
touch started
while [ ! -e "$2" ]; do sleep 0.1; done
sha256sum "$CIGRI_INPUT_DIR/in.dat" | cut -d' ' -f1 > "out_$1.txt"
"""


def reading(folder: Path, reader: Path, content: bytes, go: Path) -> Path:
    data = folder / "data"
    data.mkdir()
    (data / "in.dat").write_bytes(content)
    work = folder / "work"
    work.mkdir()
    return write_jdl(
        folder,
        exec_file=str(reader),
        exec_directory=str(work),
        params=[f"j {go}"],
        data_source=str(data),
        input_files="in.dat",
        output_file="out_{1}.txt",
        output_destination=str(folder / "results"),
    )


def test_a_job_reads_its_own_states_input_while_another_state_cleans_the_shared_cache(cli, tmp_path):
    """The issue: two states, campaign 1 each, one cache_dir. The second state's campaign runs whole (its
    copy staged, read, deleted) while the first state's job waits: that job still reads its own bytes."""
    reader = tmp_path / "reader.sh"
    reader.write_text(READER)
    reader.chmod(0o755)
    cache = tmp_path / "cache"
    other = Cli(tmp_path / "other" / "state.db")
    try:
        for grid in (cli, other):
            grid("gridclusters", "set", "local", "--cache-dir", str(cache), "--slots", "2")
        (tmp_path / "one").mkdir()
        (tmp_path / "two").mkdir()
        mine, theirs = b"first state's input\n", b"second state's input\n"
        assert cli.submit(reading(tmp_path / "one", reader, mine, tmp_path / "go")) == 1
        cli("almighty")  # one pass: the first state's job is staged, sent, and waits for the go
        wait_for((tmp_path / "one" / "work" / "started").exists, timeout=30)
        assert other.submit(reading(tmp_path / "two", reader, theirs, tmp_path / "two" / "go-now")) == 1
        (tmp_path / "two" / "go-now").touch()
        other.until_done()
        (tmp_path / "go").touch()
        cli.until_done()
        for folder, content in (("one", mine), ("two", theirs)):
            gathered = tmp_path / folder / "results" / "j" / "out_j.txt"
            assert gathered.read_text().strip() == hashlib.sha256(content).hexdigest(), folder
        assert cli.json("gridevents", "--all") == [] == other.json("gridevents", "--all")
    finally:
        stop_local_daemons(other.state.parent)


def test_copies_staged_before_caches_were_kept_apart_are_staged_again(tmp_path):
    """A state upgraded from migration 020 holds copies at ``<cache_dir>/<campaign id>/``, where no job looks
    any more: they are forgotten (a job would otherwise find no input)."""
    from cigri.store import Store

    from .conftest import state_before

    path = tmp_path / "state.db"
    conn = state_before(path, "021_cache_by_state")
    try:
        conn.execute("INSERT INTO cluster_files VALUES ('a', 1, 'held', 10, 0.0, 0.0)")
        conn.commit()
    finally:
        conn.close()
    store = Store(path)
    try:
        assert store.conn.execute("SELECT count(*) FROM cluster_files").fetchone() == (0,)
    finally:
        store.close()
