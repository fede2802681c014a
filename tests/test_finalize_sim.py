"""finalize in the simulator: its figures come from the simulated world's records of what ran where."""

from __future__ import annotations

import pytest

from cigri.cycle import replicas
from cigri.errors import ConfigError
from cigri.sim.run import simulate
from cigri.sim.scenario import parse


def scenario(finalize: bool) -> dict:
    """Two jobs land on a slow cluster (the first by name); a fast one has idle slots."""
    return {
        "name": "tail",
        "period": 30,
        "finalize": finalize,
        "clusters": [{"name": "a-slow", "slots": 4, "speed": 0.1}, {"name": "b-fast", "slots": 4}],
        "campaigns": [{"name": "c", "user": "u", "jobs": 2, "duration": 100}],
    }


def test_replicas_on_idle_slots_end_the_campaign_sooner_and_the_losers_are_waste():
    plain = simulate(parse(scenario(False)))
    final = simulate(parse(scenario(True)))
    assert (plain["jobs_done"], final["jobs_done"], final["duplicated"]) == (2, 2, 0)
    assert plain["makespan"] >= 1000 and final["makespan"] < 300
    assert plain["superseded"] == 0 and plain["waste"]["killed"] == 0
    assert final["superseded"] == 2  # the originals on the slow cluster, cancelled once their replicas ended
    assert final["waste"]["superseded"] == final["waste"]["killed"] > 0
    assert final["resubmitted"] == 0


def test_a_job_whose_copies_both_end_counts_as_run_twice(monkeypatch):
    monkeypatch.setattr(replicas, "doomed", lambda ctx: {})  # nikita finds no losing copy to kill
    data = scenario(True)  # and a long job keeps the world running until they end
    data["campaigns"].append({"name": "d", "user": "u", "jobs": 1, "duration": 1500, "clusters": ["b-fast"]})
    result = simulate(parse(data))
    assert result["jobs_done"] == 3 and result["duplicated"] == 2
    assert result["waste"]["duplicates"] > 0 and result["superseded"] == 0


def test_the_flag_is_checked_and_a_campaign_may_set_its_own():
    data = scenario(True)
    data["campaigns"][0]["finalize"] = False
    assert parse(data).campaigns[0].finalize is False
    assert parse(scenario(True)).campaigns[0].finalize is True
    with pytest.raises(ConfigError, match=r"campaigns\[0\]\.finalize"):
        parse({**scenario(False), "campaigns": [{"jobs": 1, "duration": 1, "finalize": "yes"}]})
