"""The simulator and the strategies: every registered one runs, the scenario configures them, --oracle hands
them the true durations, and the metrics judge them by the simulated world's records."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from click.testing import CliRunner

from cigri import scheduling
from cigri.cli import grid
from cigri.errors import ConfigError
from cigri.scheduling import TestFirstFifo
from cigri.sim.run import simulate
from cigri.sim.scenario import parse

SCENARIO = {
    "name": "two-users",
    "period": 10,
    "clusters": [{"name": "a", "slots": 4}, {"name": "b", "slots": 2}],
    "campaigns": [
        {"name": "quick", "user": "alice", "jobs": 12, "duration": 300},
        {"name": "slow", "user": "bob", "arrival": 5, "jobs": 6, "duration": 900},
    ],
}


class Probe(TestFirstFifo):
    """fifo, remembering the estimates it was given."""

    name = "probe"
    estimates: ClassVar[list[dict[str, tuple]]] = []

    def decide(self, snapshot, state):
        Probe.estimates.append({c.id: (c.estimate, c.confidence) for c in snapshot.campaigns})
        return super().decide(snapshot, state)


class Shares(TestFirstFifo):
    """Stands for the fairshare strategy: fifo's launches, and a ``shares`` option."""

    name = "fairshare"

    @classmethod
    def configure(cls, options):
        if set(options) - {"shares"}:
            raise ConfigError(f"metasched.fairshare.{sorted(set(options) - {'shares'})[0]}: unknown option")
        return cls()


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr("cigri.scheduling._REGISTRY", dict(scheduling._REGISTRY))
    scheduling.register(Probe)
    scheduling.register(Shares)
    Probe.estimates = []


@pytest.mark.parametrize("policy", sorted(scheduling.registry()))
def test_every_registered_strategy_runs_a_scenario_to_its_end(policy):
    result = simulate(parse(SCENARIO), policy=policy)
    assert result["policy"] == policy
    assert (result["jobs_done"], result["lost"]) == (18, 0)


def test_campaigns_are_short_or_long_by_their_true_mean_duration_against_600_s_by_default():
    result = simulate(parse(SCENARIO))
    assert {c["name"]: c["kind"] for c in result["campaigns"]} == {"quick": "short", "slow": "long"}
    assert result["completion_time"]["short"]["n"] == 1 and result["completion_time"]["long"]["p90"] is not None


def test_the_oracle_hands_strategies_the_true_mean_duration(registered):
    simulate(parse(SCENARIO), policy="probe")
    assert Probe.estimates[0] == {1: (None, 0)}  # learnt: nothing ended yet
    Probe.estimates = []
    simulate(parse(SCENARIO), policy="probe", oracle=True)
    assert Probe.estimates[0] == {1: (300.0, 0)}
    assert Probe.estimates[-1][2] == (900.0, 0)


def test_the_scenario_configures_the_strategy_and_fairness_is_judged_against_its_shares(registered):
    result = simulate(parse({**SCENARIO, "config": {"metasched": "probe"}}))
    assert result["policy"] == "probe"
    assert result["users"]["alice"]["share"] == 0.5  # no shares configured: equal ones
    shares = {"metasched": "fairshare", "metasched.fairshare.shares": {"alice": 3, "bob": 1}}
    result = simulate(parse({**SCENARIO, "config": shares}))
    assert result["policy"] == "fairshare"
    assert (result["users"]["alice"]["share"], result["users"]["bob"]["share"]) == (0.75, 0.25)
    assert result["fairness_maxmin_jain"] is not None


def test_a_bad_scenario_configuration_names_the_key():
    with pytest.raises(ConfigError, match=r"^scenario config: color: unknown configuration key"):
        simulate(parse({**SCENARIO, "config": {"color": "red"}}))
    with pytest.raises(ConfigError, match=r"^scenario config: unknown metascheduler 'nosuch'"):
        simulate(parse({**SCENARIO, "config": {"metasched": "nosuch"}}))


def test_grid_simulate_oracle(tmp_path, registered):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    result = CliRunner().invoke(grid, ["simulate", str(path), "--oracle", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert (figures["oracle"], figures["jobs_done"]) == (True, 18)


LONG_FIRST = {
    "name": "long-first",
    "period": 30,
    "short_cutoff": 300,
    "clusters": [{"name": "big", "slots": 20, "delay": 5}, {"name": "small", "slots": 10}],
    "campaigns": [
        {"name": "long", "user": "ann", "jobs": 60, "duration": {"dist": "uniform", "min": 1500, "max": 2000}},
        {"name": "short", "user": "cal", "arrival": 600, "jobs": 30, "duration": 20},
    ],
}


def test_under_srpt_a_short_campaign_behind_long_ones_starts_within_a_few_passes():
    """Issue 21, item 7, from the simulated clusters' records: the long campaign arrives first and would hold
    every slot for 1,500 s; srpt leaves the short share to the short campaign behind it (fifo: it waits for
    the first long jobs to end)."""
    times = {}
    for policy in ("fifo", "srpt"):
        result = simulate(parse(LONG_FIRST), policy=policy)
        assert (result["jobs_done"], result["lost"], result["duplicated"]) == (90, 0, 0)
        times[policy] = {c["name"]: c["completion_time"] for c in result["campaigns"]}
    assert times["fifo"]["short"] > 900  # behind the long jobs
    assert times["srpt"]["short"] <= 8 * 30  # 30 jobs of 20 s on the 2-slot share, and a probe first
