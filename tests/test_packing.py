"""Packing short jobs (temporal_grouping, dimensional_grouping): the JDL keys, the pack size, the pack
status lines, and packs run for real on the local cluster (each job's own status, outputs and CIGRI_*
variables; a pack killed midway loses no job)."""

from __future__ import annotations

import pytest

from cigri import jdl
from cigri.adapters import packing
from cigri.errors import JdlError
from cigri.model import RemoteState, RemoteStatus


def parse(**cluster):
    return jdl.parse({"name": "n", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": cluster}}).clusters["a"]


def test_grouping_keys_take_yes_no_or_seconds_per_cluster_and_campaign():
    assert parse()["temporal_grouping"] is False and parse()["dimensional_grouping"] is False
    assert parse(temporal_grouping="yes")["temporal_grouping"] is True
    assert parse(temporal_grouping=True)["temporal_grouping"] is True
    assert parse(temporal_grouping="no")["temporal_grouping"] is False
    assert parse(temporal_grouping=600)["temporal_grouping"] == 600
    assert parse(temporal_grouping="00:10:00")["temporal_grouping"] == 600
    assert parse(dimensional_grouping="true")["dimensional_grouping"] is True
    both = jdl.parse(
        {
            "name": "n",
            "exec_file": "x",
            "nb_jobs": 1,
            "temporal_grouping": "yes",
            "clusters": {"a": {}, "b": {"temporal_grouping": "no"}},
        }
    )
    assert (both.clusters["a"]["temporal_grouping"], both.clusters["b"]["temporal_grouping"]) == (True, False)


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("temporal_grouping", "often", "expected yes, no or the seconds one RM job should run, not 'often'"),
        ("temporal_grouping", 0, "expected yes, no or the seconds one RM job should run (no turns packing off)"),
        ("temporal_grouping", -5, "expected yes, no or the seconds one RM job should run, not -5"),
        ("dimensional_grouping", "sometimes", "expected true or false, not 'sometimes'"),
    ],
)
def test_a_bad_grouping_value_is_one_line_naming_its_key_path(where, value, message):
    with pytest.raises(JdlError) as top:
        jdl.parse({"name": "n", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": {}}, where: value})
    assert str(top.value) == f"clusters.a.{where}: {message}"
    with pytest.raises(JdlError) as own:
        parse(**{where: value})
    assert str(own.value) == f"clusters.a.{where}: {message}"


# pack_size: jobs one lane runs, by hand. Budget = walltime x 0.8, capped by the target; count = budget // mean;
# spread = ceil(jobs / slots); the result is min(count, spread, 1000), at least 1.
@pytest.mark.parametrize(
    ("mean", "walltime", "jobs", "slots", "target", "expected"),
    [
        (None, 3600, 1000, 8, None, 1),  # no job has ended yet: unpacked
        (1.0, 3600, 100_000, 8, None, 1000),  # 2880 by time, 12500 by spread: the cap
        (1.0, 3600, 10_000, 8, 60, 60),  # the target: 60 s of 1 s jobs
        (2.0, 3600, 100, 8, None, 13),  # ceil(100 / 8): every slot gets a pack
        (7.0, 100, 1000, 1, None, 11),  # 80 // 7
        (50.0, 100, 1000, 1, None, 1),  # 80 // 50: one job fits with the margin, not two
        (200.0, 100, 1000, 1, None, 1),  # longer than the walltime: never zero
        (0.0, 3600, 30, 4, None, 8),  # instant jobs: only the spread bounds them, ceil(30 / 4)
        (3.0, 60, 100, 0, 30, 10),  # target 30 // 3; no slot known counts as one
    ],
)
def test_pack_size_from_the_mean_duration_and_the_walltime(mean, walltime, jobs, slots, target, expected):
    assert packing.pack_size(mean, walltime, jobs=jobs, slots=slots, target=target) == expected


def test_a_pack_never_plans_beyond_its_walltime_less_the_margin():
    for mean in (0.5, 1.0, 3.0, 9.9, 30.0):
        for walltime in (60, 300, 3600):
            size = packing.pack_size(mean, walltime, jobs=10**6, slots=1)
            assert size == 1 or size * mean <= walltime * (1 - packing.PACK_MARGIN)


PACK = RemoteStatus("77", RemoteState.RUNNING)
LINES = "start 1 100.5\nend 1 0 101.5\nstart 2 101.5\nend 2 3 102\nstart 3 102.0\nskip 5\nend 9"


def test_each_job_of_a_running_pack_has_its_own_state():
    lines = packing.statuses(LINES)
    one, two, three, four, five = (packing.job_status(f"77+{i}+5", PACK, lines) for i in range(1, 6))
    assert (one.state, one.exit_code, one.started_at, one.ended_at) == (RemoteState.EXITED, 0, 100.5, 101.5)
    assert (two.state, two.exit_code) == (RemoteState.EXITED, 3)
    assert (three.state, three.started_at) == (RemoteState.RUNNING, 102.0)
    assert four.state == RemoteState.PENDING  # waits its turn in the pack
    assert (five.state, five.returned) == (RemoteState.KILLED, True)


def test_a_killed_pack_returns_its_unstarted_jobs_and_kills_the_running_one():
    killed = RemoteStatus("77", RemoteState.KILLED, ended_at=110.0, reason="timeout")
    lines = packing.statuses(LINES)
    one, three, four = (packing.job_status(f"77+{i}+5", killed, lines) for i in (1, 3, 4))
    assert (one.state, one.exit_code) == (RemoteState.EXITED, 0)  # finished: keeps its result
    assert (three.state, three.returned, three.started_at) == (RemoteState.KILLED, False, 102.0)
    assert (four.state, four.returned) == (RemoteState.KILLED, True)
    assert "timeout" in four.reason


def test_jobs_of_a_pending_pack_are_pending():
    pending = RemoteStatus("77", RemoteState.PENDING)
    assert packing.job_status("77+4+5", pending, {}).state == RemoteState.PENDING
