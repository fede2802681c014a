"""Job pickers: ``in-order``, ``locality`` (BOINC's locality scheduling) and ``cursors`` (its redesign), and
their ``grid policy`` scenarios."""

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cigri.cli import grid
from cigri.errors import ConfigError
from cigri.scheduling.cursors import Cursors, balanced
from cigri.scheduling.locality import Holdings, InOrder, Locality, Waiting, picker, pickers


def jobs(*files_per_job):
    return tuple(Waiting(i, tuple(files)) for i, files in enumerate(files_per_job, start=1))


def held(**clusters):
    return {name: frozenset(files) for name, files in clusters.items()}


# ---- locality -------------------------------------------------------------------------------------------------


def test_a_cluster_takes_the_jobs_of_the_files_it_holds_first_in_increasing_order():
    waiting = jobs(["f1"], ["f2"], ["f1"], ["f2"], ["f1"])
    picks, _ = Locality().pick(Holdings(waiting, held(A=["f2"])), {"A": 2}, {})
    assert picks == {"A": [2, 4]}


def test_in_order_takes_the_lowest_ids_whatever_the_files():
    waiting = jobs(["f1"], ["f2"], ["f1"], ["f2"], ["f1"])
    picks, _ = InOrder().pick(Holdings(waiting, held(A=["f2"])), {"A": 2}, {})
    assert picks == {"A": [1, 2]}


def test_a_job_needs_all_its_files_held_to_count_as_local():
    waiting = jobs(["f1", "f2"], ["f2"])
    picks, _ = Locality().pick(Holdings(waiting, held(A=["f2"])), {"A": 1}, {})
    assert picks == {"A": [2]}


def test_a_cluster_takes_first_the_job_missing_the_fewest_bytes_not_files():
    # A holds the 2 GB reference: job 1 lacks two 1 kB files there, job 2 one 3 GB file
    waiting = jobs(["ref", "s1", "s2"], ["ref", "big"])
    sizes = {"ref": 2 << 30, "s1": 1024, "s2": 1024, "big": 3 << 30}
    picks, _ = Locality().pick(Holdings(waiting, held(A=["ref"]), sizes=sizes), {"A": 1}, {})
    assert picks == {"A": [1]}
    picks, _ = Locality().pick(Holdings(waiting, held(A=["ref"])), {"A": 1}, {})
    assert picks == {"A": [2]}  # without sizes, files count alike


def test_clusters_with_no_file_spread_over_files_instead_of_flocking():
    waiting = jobs(["f1"], ["f1"], ["f2"], ["f2"], ["f3"], ["f3"])
    picks, _ = Locality().pick(Holdings(waiting), {"A": 2, "B": 2, "C": 2}, {})
    assert picks == {"A": [1, 2], "B": [3, 4], "C": [5, 6]}


def test_a_fresh_cluster_avoids_a_file_another_cluster_holds_even_when_that_one_is_full():
    waiting = jobs(["f1"], ["f1"], ["f2"])
    picks, _ = Locality().pick(Holdings(waiting, held(Busy=["f1"])), {"A": 1}, {})
    assert picks == {"A": [3]}


def test_a_cluster_takes_the_first_file_nobody_holds_before_sharing_one():
    waiting = jobs(["f1"], ["f2"], ["f3"], ["f4"])
    picks, _ = Locality().pick(Holdings(waiting, held(B=["f1", "f2"])), {"A": 1}, {})
    assert picks == {"A": [3]}


def test_once_every_file_has_a_holder_a_cluster_shares_the_first_held_by_fewest():
    waiting = jobs(["f1"], ["f2"], ["f1"], ["f2"])
    picks, _ = Locality().pick(Holdings(waiting, held(B=["f1"], C=["f1", "f2"], D=["f2"], E=["f2"])), {"A": 1}, {})
    assert picks == {"A": [1]}


def test_a_cluster_goes_on_with_the_next_file_when_one_runs_out():
    waiting = jobs(["f1"], ["f2"], ["f2"])
    picks, _ = Locality().pick(Holdings(waiting, held(A=["f1"])), {"A": 3}, {})
    assert picks == {"A": [1, 2, 3]}


def test_no_job_goes_to_two_clusters_nor_to_a_cluster_that_must_not_get_it():
    waiting = jobs(["f1"], ["f1"], ["f1"])
    holdings = Holdings(waiting, held(A=["f1"], B=["f1"]), exclude={"A": frozenset({1})})
    picks, _ = Locality().pick(holdings, {"A": 3, "B": 3}, {})
    assert picks == {"A": [2, 3], "B": [1]}


def test_jobs_without_input_files_go_anywhere_first():
    waiting = jobs(["f1"], [], ["f1"])
    picks, _ = Locality().pick(Holdings(waiting), {"A": 1}, {})
    assert picks == {"A": [2]}


def contiguous(n, width=4):
    """Jobs 1..n, job i reading files f{i}..f{i+width-1}."""
    return tuple(Waiting(i, tuple(f"f{k}" for k in range(i, i + width))) for i in range(1, n + 1))


def test_a_cluster_holding_a_jobs_range_takes_the_next_job_needing_one_new_file():
    # A ran jobs up to 40 (it holds f40..f43), so job 41 needs only f44 there; jobs 11..19 wait nearer B's files
    waiting = tuple(job for job in contiguous(60) if 11 <= job.job_id <= 19 or job.job_id > 40)
    holdings = Holdings(waiting, held(A=["f40", "f41", "f42", "f43"], B=["f20", "f21", "f22", "f23"]))
    picks, _ = Locality().pick(holdings, {"A": 3}, {})
    assert picks == {"A": [41, 42, 43]}


def test_fresh_clusters_on_a_contiguous_sequence_start_far_apart():
    picks, _ = Locality().pick(Holdings(contiguous(100)), {"A": 5, "B": 5}, {})
    assert picks["A"] == [1, 2, 3, 4, 5]
    # B starts near the middle of what A does not reach, not at A's frontier, and keeps to one range
    assert min(picks["B"]) > 40
    assert sorted(picks["B"]) == list(range(min(picks["B"]), min(picks["B"]) + 5))


def test_an_unknown_picker_is_refused_with_the_valid_names():
    assert {"in-order", "locality", "cursors"} <= set(pickers())
    with pytest.raises(ConfigError, match="valid: cursors, in-order, locality"):
        picker("nearest")


# ---- cursors --------------------------------------------------------------------------------------------------


def ids(n):
    return tuple(Waiting(i) for i in range(1, n + 1))


def cursors(state):
    return [(c["first"], c["last"], c["team"]) for c in state["cursors"]]


def test_the_first_pass_splits_the_jobs_by_speed_and_each_cluster_starts_its_range():
    picks, state = Cursors().pick(Holdings(ids(9), speeds={"A": 2, "B": 1}), {"A": 2, "B": 2}, {})
    assert cursors(state) == [(1, 6, ["A"]), (7, 9, ["B"])]
    assert picks == {"A": [1, 2], "B": [7, 8]}


def test_a_cluster_that_finished_its_range_takes_the_upper_part_of_the_largest():
    state = {"cursors": [{"first": 1, "last": 3, "team": ["A"]}, {"first": 4, "last": 12, "team": ["B"]}]}
    holdings = Holdings(tuple(Waiting(i) for i in (3, *range(4, 13))), speeds={"A": 1, "B": 1})
    picks, after = Cursors().pick(holdings, {"A": 2}, state)
    # A finishes its range (job 3) first, then splits B's 9 jobs by speed: it gets the upper 4
    assert picks == {"A": [3, 9]}
    assert cursors(after) == [(1, 8, ["B"]), (9, 12, ["A"])]


def test_a_team_member_moves_when_its_time_left_is_under_half_the_largest():
    state = {"cursors": [{"first": 1, "last": 4, "team": ["A", "B"]}, {"first": 5, "last": 16, "team": ["C"]}]}
    # A and B: 4 jobs at speed 2 (2 s); C: 12 jobs at speed 1 (12 s)
    picks, after = Cursors().pick(Holdings(ids(16), speeds={"A": 1, "B": 1, "C": 1}), {"A": 1}, state)
    assert cursors(after) == [(1, 4, ["B"]), (5, 10, ["C"]), (11, 16, ["A"])]
    assert picks == {"A": [11]}


def test_a_team_member_stays_when_its_time_left_is_at_least_half_the_largest():
    state = {"cursors": [{"first": 1, "last": 6, "team": ["A", "B"]}, {"first": 7, "last": 12, "team": ["C"]}]}
    # A and B: 6 jobs at speed 2 (3 s); C: 6 jobs at speed 1 (6 s): 3 is not under half of 6
    picks, after = Cursors().pick(Holdings(ids(12), speeds={"A": 1, "B": 1, "C": 1}), {"A": 2}, state)
    assert cursors(after) == [(1, 6, ["A", "B"]), (7, 12, ["C"])]
    assert picks == {"A": [1, 2]}


def test_a_new_cluster_joins_the_cursor_with_most_time_left_when_the_team_stays_balanced():
    state = {"cursors": [{"first": 1, "last": 4, "team": ["A", "B"]}, {"first": 5, "last": 12, "team": ["C", "D"]}]}
    speeds = {"A": 1, "B": 1, "C": 1, "D": 1, "E": 1}
    picks, after = Cursors().pick(Holdings(ids(12), speeds=speeds), {"E": 1}, state)
    assert cursors(after)[1] == (5, 12, ["C", "D", "E"])
    assert picks == {"E": [5]}


def test_a_new_cluster_that_would_outrun_the_team_takes_its_upper_part_instead():
    state = {"cursors": [{"first": 1, "last": 12, "team": ["A"]}]}
    picks, after = Cursors().pick(Holdings(ids(12), speeds={"A": 1, "B": 2}), {"B": 1}, state)
    assert cursors(after) == [(1, 4, ["A"]), (5, 12, ["B"])]
    assert picks == {"B": [5]}


def test_a_team_is_balanced_when_no_member_outruns_the_rest_combined():
    assert balanced([3.0]) and balanced([1.0, 1.0]) and balanced([2.0, 1.0, 1.0])
    assert not balanced([2.0, 1.0]) and not balanced([3.0, 1.0, 1.0])


def test_jobs_added_beyond_the_ranges_join_the_last_cursor():
    state = {"cursors": [{"first": 1, "last": 3, "team": ["A"]}, {"first": 4, "last": 6, "team": ["B"]}]}
    _, after = Cursors().pick(Holdings(ids(8), speeds={"A": 1, "B": 1}), {}, state)
    assert cursors(after) == [(1, 3, ["A"]), (4, 8, ["B"])]


# ---- grid policy ----------------------------------------------------------------------------------------------


def policy(name, scenario):
    return CliRunner().invoke(grid, ["policy", name, "-"], input=json.dumps(scenario))


def test_grid_policy_locality_prints_the_picks():
    scenario = {
        "jobs": [{"id": 1, "files": ["f1"]}, {"id": 2, "files": ["f2"]}, {"id": 3, "files": ["f1"]}],
        "clusters": {"A": {"wants": 2, "holds": ["f1"]}, "B": {"wants": 1}},
    }
    result = policy("locality", scenario)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"picks": {"A": [1, 3], "B": [2]}}


def test_grid_policy_locality_weighs_files_by_their_sizes():
    scenario = {
        "jobs": [{"id": 1, "files": ["ref", "s1", "s2"]}, {"id": 2, "files": ["ref", "big"]}],
        "clusters": {"A": {"wants": 1, "holds": ["ref"]}},
        "sizes": {"s1": 10, "s2": 10, "big": 5000},
    }
    assert json.loads(policy("locality", scenario).output) == {"picks": {"A": [1]}}
    assert json.loads(policy("locality", {**scenario, "sizes": {}}).output) == {"picks": {"A": [2]}}


def test_grid_policy_cursors_prints_the_picks_and_the_cursors():
    scenario = {
        "jobs": [{"id": i} for i in range(1, 5)],
        "clusters": {"A": {"wants": 1, "speed": 1}},
        "cursors": [{"first": 1, "last": 4, "team": ["A"]}],
    }
    result = policy("cursors", scenario)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"picks": {"A": [1]}, "cursors": [{"first": 1, "last": 4, "team": ["A"]}]}


@pytest.mark.parametrize(
    ("name", "scenario", "message"),
    [
        ("locality", {"jobs": [{"id": 1, "files": [3]}], "clusters": {}}, "jobs[0].files[0]: must be a file name"),
        ("locality", {"jobs": [], "clusters": {"A": {"wants": -1}}}, "clusters.A.wants: must be >= 0"),
        ("locality", {"jobs": [], "clusters": {"A": {"hold": []}}}, "clusters.A.hold: unknown key"),
        ("locality", {"jobs": [], "clusters": {}, "sizes": {"f": "big"}}, "sizes.f: must be a number of bytes"),
        ("cursors", {"jobs": [], "clusters": {}, "cursors": [{"first": 2, "last": 1}]}, "cursors[0].last"),
        ("cursors", {"jobs": [], "clusters": {}, "cursors": [{"first": 1, "last": 1, "team": ["Z"]}]}, "team[0]"),
    ],
)
def test_a_bad_scenario_is_one_line_naming_the_field_exit_4(name, scenario, message):
    result = policy(name, scenario)
    assert result.exit_code == 4
    assert message in result.output and len(result.output.strip().splitlines()) == 1


# ---- configuration --------------------------------------------------------------------------------------------


def test_the_locality_key_chooses_the_picker_and_refuses_an_unknown_one(cli):
    cli("config", "set", "locality", "cursors")
    cli("config", "set", "locality.generator_wait", "5")
    assert cli.json("config", "show", "--set") == {"locality": "cursors", "locality.generator_wait": 5}
    for key, value, message in (
        ("locality", "nearest", "locality: unknown job picker 'nearest' (valid: cursors, in-order, locality)"),
        ("locality.generator_wait", "0", "locality.generator_wait: expected seconds, more than 0, got 0"),
    ):
        result = cli.runner.invoke(grid, ["--state", str(cli.state), "config", "set", key, value])
        assert result.exit_code == 4 and result.stderr.strip().endswith(message)
    assert cli.json("config", "show", "--set") == {"locality": "cursors", "locality.generator_wait": 5}


# ---- invariants -----------------------------------------------------------------------------------------------

CLUSTERS = ("A", "B", "C")


@st.composite
def situations(draw):
    n = draw(st.integers(0, 30))
    files = [f"f{i}" for i in range(draw(st.integers(1, 6)))]
    waiting = tuple(
        Waiting(job_id, tuple(draw(st.sets(st.sampled_from(files), max_size=2))))
        for job_id in sorted(draw(st.sets(st.integers(1, 60), min_size=n, max_size=n)))
    )
    holds = {c: frozenset(draw(st.sets(st.sampled_from(files)))) for c in CLUSTERS}
    wanted = {c: draw(st.integers(0, 12)) for c in draw(st.permutations(CLUSTERS))}
    speeds = {c: draw(st.floats(0.1, 10)) for c in CLUSTERS}
    return Holdings(waiting, holds, speeds), wanted


@settings(max_examples=100, deadline=None)
@given(situation=situations(), name=st.sampled_from(["in-order", "locality", "cursors"]))
def test_a_picker_fills_every_slot_it_can_and_gives_each_job_once(situation, name):
    holdings, wanted = situation
    picks, _ = picker(name).pick(holdings, wanted, {})
    chosen = [job_id for ids in picks.values() for job_id in ids]
    assert len(chosen) == len(set(chosen))  # never one job to two clusters
    assert set(chosen) <= {job.job_id for job in holdings.jobs}
    assert all(len(picks.get(c, [])) <= n for c, n in wanted.items())
    assert len(chosen) == min(sum(wanted.values()), len(holdings.jobs))  # no slot idle while a job waits
