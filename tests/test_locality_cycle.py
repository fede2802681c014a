"""Job pickers and on-demand work through the cycle: which jobs a cluster gets by the files it holds, on
clusters under the test's hand (the fake resource manager of test_placement, a simulated clock)."""

from __future__ import annotations

import sys
from pathlib import Path

from cigri import campaigns as ops
from cigri import config
from cigri.cycle.ondemand import MARKS
from cigri.jdl import parse
from cigri.model import DataFile, EventCode, RemoteState

from .test_placement import FakeRM, Grid


def with_files(grid: Grid, campaign_id: int, files_of: dict[int, str]) -> None:
    """Give the campaign's jobs (by id) their input file, as submission records them."""
    keys = sorted(set(files_of.values()))
    with grid.store.transaction():
        grid.store.add_files(campaign_id, [DataFile(k, 100, "0" * 64) for k in keys], files_of.items())


def hold(grid: Grid, cluster: str, campaign_id: int, key: str) -> None:
    """The cluster's cache holds the file, checksum verified."""
    file_id = grid.store.file_ids(campaign_id, [key])[key]
    with grid.store.transaction():
        grid.store.note_staging(cluster, file_id, 100, 0.0)
        grid.store.set_held(cluster, file_id, 0.0)


def two_clusters(picker: str | None) -> tuple[Grid, FakeRM, FakeRM, int]:
    a, b = FakeRM("a", 2, queue_depth=0), FakeRM("b", 2, queue_depth=0)
    grid = Grid(a, b)
    if picker is not None:
        config.set_value(grid.store, "locality", picker)
    campaign_id = grid.submit(8)
    with_files(grid, campaign_id, {job: "f1" if job <= 4 else "f2" for job in range(1, 9)})
    hold(grid, "b", campaign_id, "f2")
    return grid, a, b, campaign_id


def test_a_cluster_gets_the_jobs_of_the_file_it_holds():
    grid, a, b, _ = two_clusters(None)  # locality is the default
    grid.at(0)
    assert b.holds(RemoteState.PENDING) == [5, 6]
    assert a.holds(RemoteState.PENDING) == [1, 2]


def test_in_order_sends_the_lowest_ids_whatever_a_cluster_holds():
    grid, a, b, _ = two_clusters("in-order")
    grid.at(0)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1, 2], [3, 4])


def test_cursors_keep_their_ranges_from_pass_to_pass():
    grid, a, b, campaign_id = two_clusters("cursors")
    grid.at(0)
    state = grid.store.strategy_states()["picker.cursors"][str(campaign_id)]
    assert state == {"cursors": [{"first": 1, "last": 4, "team": ["a"]}, {"first": 5, "last": 8, "team": ["b"]}]}
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1, 2], [5, 6])
    for job_id in (1, 2):
        a.start(job_id, 1.0)
        a.end(job_id, 10.0)
    grid.at(30)
    assert a.holds(RemoteState.PENDING) == [3, 4]


GENERATOR = """\
import sys
file = sys.argv[1]
if file == "f2":
    print("new-1 x\\nnew-2 y")
elif file == "f3":
    sys.exit(3)
else:
    print("j0 clash")
"""


def generating(tmp_path: Path, holds: str) -> tuple[Grid, FakeRM, int]:
    script = tmp_path / "gen.py"
    script.write_text(GENERATOR)
    b = FakeRM("b", 2, queue_depth=0)
    grid = Grid(b)
    jdl = parse(
        {
            "name": "c",
            "exec_file": "run",
            "clusters": {"b": {}},
            "params": ["j0", "j1"],
            "work_generator": f"{sys.executable} {script}",
        }
    )
    campaign_id = ops.submit(grid.store, jdl, grid.clock, user="alice", adapters=grid.clusters.__getitem__)[0]
    with_files(grid, campaign_id, {1: "f1", 2: "f1"})
    with grid.store.transaction():
        grid.store.add_files(campaign_id, [DataFile(holds, 100, "0" * 64)], [])
    hold(grid, "b", campaign_id, holds)
    return grid, b, campaign_id


def test_a_cluster_out_of_work_for_its_file_asks_the_generator(tmp_path):
    grid, _, campaign_id = generating(tmp_path, "f2")
    grid.at(0)
    names = sorted(grid.store.job_names(campaign_id))
    assert names == ["j0", "j1", "new-1", "new-2"]
    assert grid.store.strategy_states().get(MARKS, {}) == {}


def test_no_more_work_marks_the_file_and_it_is_not_asked_again(tmp_path):
    grid, _, campaign_id = generating(tmp_path, "f3")
    grid.at(0)
    assert grid.store.strategy_states()[MARKS] == {str(campaign_id): ["f3"]}
    assert not grid.store.events(campaign_id=campaign_id)


def test_bad_generator_output_is_an_event_and_adds_nothing(tmp_path):
    grid, _, campaign_id = generating(tmp_path, "f9")
    grid.at(0)
    assert sorted(grid.store.job_names(campaign_id)) == ["j0", "j1"]
    events = grid.store.events(campaign_id=campaign_id)
    assert [e.code for e in events] == [EventCode.WORK_GENERATOR]
    assert "f9" in events[0].message and "'j0' is used twice" in events[0].message
