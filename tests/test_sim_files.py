"""The simulator's staging: cigri's runner stages each campaign's files into the simulated caches, and the
world records the bytes (its own count), the time the link takes, and the deletions."""

from __future__ import annotations

import pytest

from cigri.errors import ConfigError
from cigri.sim.run import Simulation, simulate
from cigri.sim.scenario import parse


def files_scenario(clusters, files, jobs=8, duration=10) -> dict:
    return {
        "name": "files",
        "period": 10,
        "seed": 1,
        "max_time": 20000,
        "clusters": clusters,
        "campaigns": [{"name": "c", "jobs": jobs, "durations": [duration] * jobs, "files": files}],
    }


def test_each_file_is_staged_once_per_cluster_and_deleted_once_no_job_needs_it():
    data = files_scenario([{"name": "a", "slots": 2}], {"count": 4, "size": 1000, "layout": "shared"})
    result = simulate(parse(data))
    a = result["clusters"]["a"]
    assert result["jobs_done"] == 8
    assert (a["bytes_staged"], a["files_staged"], a["files_deleted"]) == (4000, 4, 4)


def test_contiguous_ranges_read_per_job_files():
    data = files_scenario(
        [{"name": "a", "slots": 1}], {"count": 5, "size": 10, "per_job": 2, "layout": "contiguous"}, jobs=5
    )
    plan = parse(data).campaigns[0]
    assert plan.job_files == ((0, 1), (1, 2), (2, 3), (3, 4), (4,))
    assert [plan.file_key(n) for n in (0, 4)] == ["f0.dat", "f4.dat"]
    assert simulate(parse(data))["clusters"]["a"]["bytes_staged"] == 50


def test_staging_takes_the_links_time():
    one = {"count": 1, "size": 1000, "layout": "shared"}
    fast = simulate(parse(files_scenario([{"name": "a", "slots": 1}], one, jobs=1, duration=10)))
    slow = simulate(parse(files_scenario([{"name": "a", "slots": 1, "bandwidth": 10}], one, jobs=1, duration=10)))
    assert slow["makespan"] - fast["makespan"] == pytest.approx(100)  # 1000 bytes at 10 bytes/s


def test_a_bad_files_key_names_its_path():
    with pytest.raises(ConfigError, match=r"scenario campaigns\[0\]\.files\.layout: expected shared or contiguous"):
        parse(files_scenario([{"name": "a", "slots": 1}], {"count": 2, "size": 1, "layout": "striped"}))


def test_replicas_of_the_last_jobs_find_their_files_on_the_other_cluster():
    """The scenario of test_finalize_sim (two jobs on a slow cluster, a fast one idle), each job its own file:
    the replicas on the fast cluster run only if their files are staged there first (else they exit 2)."""
    data = files_scenario(
        [{"name": "a-slow", "slots": 4, "speed": 0.1}, {"name": "b-fast", "slots": 4}],
        {"count": 2, "size": 100, "layout": "shared"},
        jobs=2,
        duration=100,
    )
    data["finalize"] = True
    result = simulate(parse(data))
    assert result["jobs_done"] == 2 and result["superseded"] == 2 and result["makespan"] < 300
    assert result["clusters"]["b-fast"]["files_staged"] == 2


def test_the_world_lists_each_jobs_files_for_the_lower_bound():
    data = files_scenario([{"name": "a", "slots": 1}], {"count": 2, "size": 7, "per_job": 2, "layout": "contiguous"})
    data["campaigns"][0]["jobs"] = 2
    data["campaigns"][0]["durations"] = [1, 1]
    world = Simulation(parse(data))
    assert world.job_inputs() == {"c0j0": ("c0/f0.dat", "c0/f1.dat"), "c0j1": ("c0/f1.dat",)}
    assert world.file_sizes == {"c0/f0.dat": 7, "c0/f1.dat": 7}
