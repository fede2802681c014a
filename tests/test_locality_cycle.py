"""Job pickers and on-demand work through the cycle: which jobs a cluster gets by the files it holds, and
what it stages, on clusters under the test's hand (test_placement's fake resource manager with a cache in
memory, a simulated clock), the campaign's input files real ones in a data_source folder."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from cigri import campaigns as ops
from cigri import config
from cigri.adapters.files import sha256_of
from cigri.cycle.ondemand import MARKS
from cigri.jdl import parse
from cigri.model import DataFile, EventCode, RemoteState

from .test_placement import FakeRM, Grid


class CachingRM(FakeRM):
    """A fake cluster that can stage files: its cache is a mapping of paths, its copies always good."""

    def __init__(self, name: str, slots: int):
        super().__init__(name, slots, queue_depth=0)
        self.cached: dict[str, str] = {}  # path -> sha256
        self.staged: list[str] = []  # file names, in the order they were sent

    def cache_dir(self) -> str:
        return f"/cache/{self.name}"

    def job_path(self, directory: str, name: str) -> str:
        return f"{directory}/{name}"

    def put_file(self, source: Path, target: str, expected: DataFile) -> str:
        self.cached[target] = sha256_of(source)
        self.staged.append(source.name)
        return self.cached[target]

    def get_file(self, source: str, target: Path) -> str | None:
        return None

    def remove_paths(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.cached.pop(path, None)


def submit(grid: Grid, data: Path, params: list[str], **extra) -> int:
    """A campaign whose job ``NAME FILE`` reads FILE from ``data``."""
    for line in params:
        (data / line.split()[1]).write_text(line.split()[1])
    jdl = parse(
        {
            "name": "c",
            "exec_file": "run",
            "clusters": {name: {} for name in grid.clusters},
            "params": params,
            "data_source": str(data),
            "input_files": "{2}",
            **extra,
        }
    )
    return ops.submit(grid.store, jdl, grid.clock, user="alice", adapters=grid.clusters.__getitem__)[0]


def hold(grid: Grid, cluster: str, campaign_id: int, key: str) -> None:
    """The state says the cluster's cache holds the file (it staged it earlier)."""
    file_id = grid.store.file_ids(campaign_id, [key])[key]
    with grid.store.transaction():
        grid.store.note_staging(cluster, file_id, 2, 0.0)
        grid.store.set_held(cluster, file_id, 0.0)


def two_clusters(tmp_path: Path, picker: str | None) -> tuple[Grid, CachingRM, CachingRM]:
    """Clusters a and b of two slots; jobs 1-4 read f1, jobs 5-8 read f2; b holds f2."""
    a, b = CachingRM("a", 2), CachingRM("b", 2)
    grid = Grid(a, b)
    if picker is not None:
        config.set_value(grid.store, "locality", picker)
    campaign_id = submit(grid, tmp_path, [f"j{i} {'f1' if i <= 4 else 'f2'}" for i in range(1, 9)])
    hold(grid, "b", campaign_id, "f2")
    return grid, a, b


def run_all(grid: Grid, *clusters: CachingRM) -> None:
    """Two passes, every job sent in the first one ending before the second."""
    grid.at(0)
    for cluster in clusters:
        for job_id in cluster.holds(RemoteState.PENDING):
            cluster.start(job_id, 1.0)
            cluster.end(job_id, 10.0)
    grid.at(30)


def test_a_cluster_gets_the_jobs_of_the_file_it_holds_and_stages_nothing_twice(tmp_path):
    grid, a, b = two_clusters(tmp_path, "locality")
    grid.at(0)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1, 2], [5, 6])
    run_all(grid, a, b)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([3, 4], [7, 8])
    assert (a.staged, b.staged) == (["f1"], [])


def test_in_order_sends_the_lowest_ids_whatever_a_cluster_holds(tmp_path):
    grid, a, b = two_clusters(tmp_path, "in-order")
    run_all(grid, a, b)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([5, 6], [7, 8])
    assert (a.staged, b.staged) == (["f1", "f2"], ["f1"])


def test_cursors_keep_their_ranges_from_pass_to_pass(tmp_path):
    grid, a, b = two_clusters(tmp_path, None)  # cursors is the default
    grid.at(0)
    (campaign_id,) = grid.store.strategy_states()["picker.cursors"]
    state = grid.store.strategy_states()["picker.cursors"][campaign_id]
    assert state == {"cursors": [{"first": 1, "last": 4, "team": ["a"]}, {"first": 5, "last": 8, "team": ["b"]}]}
    run_all(grid, a, b)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([3, 4], [7, 8])


GENERATOR = """\
import sys
file = sys.argv[1]
if file == "f2":
    print("new-1 f2\\nnew-2 f2")
elif file in ("f1", "f3"):
    sys.exit(3)
else:
    print("j0 clash")
"""


def generating(tmp_path: Path, spare: str, generator: str = GENERATOR) -> tuple[Grid, int]:
    """One cluster b holding ``spare``, a file of the campaign no waiting job reads; jobs j0, j1 read f1; the
    campaign's work generator is ``generator``'s script."""
    script = tmp_path / "gen.py"
    script.write_text(generator)
    data = tmp_path / "data"
    data.mkdir()
    grid = Grid(CachingRM("b", 2))
    campaign_id = submit(grid, data, ["j0 f1", "j1 f1"], work_generator=f"{sys.executable} {script}")
    (data / spare).write_text(spare)
    with grid.store.transaction():
        grid.store.add_files(campaign_id, [DataFile(spare, 2, sha256_of(data / spare))], [])
    hold(grid, "b", campaign_id, spare)
    return grid, campaign_id


def test_a_cluster_out_of_work_for_its_file_asks_the_generator(tmp_path):
    grid, campaign_id = generating(tmp_path, "f2")
    grid.at(0)
    assert sorted(grid.store.job_names(campaign_id)) == ["j0", "j1", "new-1", "new-2"]
    new = [job.id for job in grid.store.jobs(campaign_id) if job.name.startswith("new")]
    assert {job_id: [f.key for f in files] for job_id, files in grid.store.job_files(new).items()} == {
        new[0]: ["f2"],
        new[1]: ["f2"],
    }
    assert grid.store.strategy_states().get(MARKS, {}) == {}


def test_no_more_work_marks_the_file_and_it_is_not_asked_again(tmp_path):
    grid, campaign_id = generating(tmp_path, "f3")
    grid.at(0)
    assert grid.store.strategy_states()[MARKS] == {str(campaign_id): ["f3"]}
    assert not grid.store.events(campaign_id=campaign_id)


def test_bad_generator_output_is_an_event_and_adds_nothing(tmp_path):
    grid, campaign_id = generating(tmp_path, "f9")
    grid.at(0)
    assert sorted(grid.store.job_names(campaign_id)) == ["j0", "j1"]
    events = grid.store.events(campaign_id=campaign_id)
    assert [e.code for e in events] == [EventCode.WORK_GENERATOR]
    assert "f9" in events[0].message and "'j0' is used twice" in events[0].message
    assert grid.store.strategy_states()[MARKS] == {str(campaign_id): ["f9"]}


def test_every_file_out_of_work_is_asked_for_in_the_pass_before_its_copy_is_deleted(tmp_path):
    grid, campaign_id = generating(tmp_path, "f2")
    (tmp_path / "data" / "f3").write_text("f3")
    with grid.store.transaction():
        grid.store.add_files(campaign_id, [DataFile("f3", 2, sha256_of(tmp_path / "data" / "f3"))], [])
    hold(grid, "b", campaign_id, "f3")
    grid.at(0)
    assert len(grid.store.job_names(campaign_id)) == 4  # f2's two new jobs
    assert grid.store.strategy_states()[MARKS] == {str(campaign_id): ["f3"]}
    assert "f3" not in grid.store.cluster_files("b", campaign_id)  # no job needs it: deleted by nikita


def test_a_cluster_takes_the_job_missing_the_fewest_bytes_there(tmp_path):
    """a holds ref and ref2; job 1 lacks two 10-byte files there, job 2 one of 5000 bytes: job 1 goes first
    (counting files would send job 2, and 5000 bytes)."""
    a = CachingRM("a", 1)
    grid = Grid(a)
    config.set_value(grid.store, "locality", "locality")
    for name, size in (("ref", 100), ("ref2", 100), ("s1", 10), ("s2", 10), ("big", 5000)):
        (tmp_path / name).write_bytes(b"x" * size)
    params = ["j1 ref s1 s2", "j2 ref ref2 big"]
    campaign_id = submit(grid, tmp_path, params, input_files=["{2}", "{3}", "{4}"])
    for key in ("ref", "ref2"):
        hold(grid, "a", campaign_id, key)
    grid.at(0)
    assert a.holds(RemoteState.PENDING) == [1] and sorted(a.staged) == ["s1", "s2"]


MEETING = """\
import os, sys, time
file, here = sys.argv[1], os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, "asked-" + file), "w").close()
other = os.path.join(here, "asked-" + {"f2": "f3", "f3": "f2"}[file])
deadline = time.monotonic() + 30
while not os.path.exists(other) and time.monotonic() < deadline:  # answers once the other file is asked too
    time.sleep(0.02)
print("new-" + file + " " + file)
"""


def test_the_files_out_of_work_are_asked_for_at_once(tmp_path):
    """Each generator call may take up to generator_wait: the calls of a pass run side by side, so that a pass
    waits once, not once per file. Here each call answers only once the other has started, which calls one
    after the other never reach (the first is cut at generator_wait: an event)."""
    grid, campaign_id = generating(tmp_path, "f2")
    (tmp_path / "gen.py").write_text(MEETING)
    (tmp_path / "data" / "f3").write_text("f3")
    with grid.store.transaction():
        grid.store.add_files(campaign_id, [DataFile("f3", 2, sha256_of(tmp_path / "data" / "f3"))], [])
    hold(grid, "b", campaign_id, "f3")
    config.set_value(grid.store, "locality.generator_wait", 10)
    grid.at(0)
    assert grid.store.events(campaign_id=campaign_id) == []
    assert sorted(grid.store.job_names(campaign_id)) == ["j0", "j1", "new-f2", "new-f3"]
