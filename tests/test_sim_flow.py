"""The simulator's flow sensors and metrics: a file server whose load follows the running grid jobs' I/O
weight with a time constant, local load in steps, local users' wait, and the flow figures taken from the
simulated queues (never from cigri's counts)."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest
import yaml

from cigri import cycle, flow
from cigri.cli import grid
from cigri.errors import ConfigError
from cigri.flow import Allowance
from cigri.model import EventClass
from cigri.sim.fileserver import FileServer, FileServerSpec
from cigri.sim.run import Simulation, simulate
from cigri.sim.scenario import parse

from .conftest import Grid


class Recorder:
    """The constant allowance, remembering each reading."""

    name = "recorder"
    readings: ClassVar[list] = []

    def allow(self, reading, state):
        Recorder.readings.append(reading)
        return Allowance(reading.depth), state


class Alternate:
    """Lets 8 slots wait at one pass, none at the next."""

    name = "alternate"

    def allow(self, reading, state):
        odd = not state.get("odd", False)
        return Allowance(8 if odd else 0), {"odd": odd}


@pytest.fixture(autouse=True)
def strategies(monkeypatch):
    monkeypatch.setattr("cigri.flow._REGISTRY", dict(flow._REGISTRY))
    flow.register(Recorder)
    flow.register(Alternate)
    Recorder.readings = []


def scenario(**overrides) -> dict:
    data = {
        "name": "flow",
        "period": 30,
        "seed": 3,
        "max_time": 20000,
        "clusters": [{"name": "a", "slots": 8, "queue_depth": 4}],
        "campaigns": [{"name": "c", "arrival": 0, "jobs": 60, "duration": 120}],
    }
    data.update(overrides)
    return data


def test_a_file_servers_load_follows_the_weight_with_its_time_constant_and_counts_the_time_above():
    server = FileServer(FileServerSpec("nfs", tau=100.0, per_weight=0.5, base=1.0, reference=2.0))
    server.change("a", 0.0, 4.0)  # target 1 + 0.5 x 4 = 3
    assert server.load_at(100.0) == pytest.approx(3 - 2 * math.exp(-1))
    crossing = 100 * math.log(2)  # 3 - 2 e^(-t/100) = 2
    assert server.seconds_above == pytest.approx(100 - crossing)
    server.change("a", 100.0, 0.0)  # back towards 1 from 3 - 2/e
    start = 3 - 2 * math.exp(-1)
    assert server.load_at(300.0) == pytest.approx(1 + (start - 1) * math.exp(-2))
    below_after = 100 * math.log((start - 1) / (2 - 1))
    assert server.seconds_above == pytest.approx(100 - crossing + below_after)


def test_changes_reported_out_of_order_by_two_clusters_apply_in_time_order():
    server = FileServer(FileServerSpec("nfs", tau=0.0, per_weight=1.0, reference=1.5))
    server.change("b", 50.0, 1.0)
    server.change("a", 10.0, 1.0)
    server.change("a", 80.0, 0.0)
    assert server.load_at(100.0) == 1.0
    assert server.seconds_above == pytest.approx(30.0)  # both ran from 50 to 80


def test_the_load_sensor_reads_the_simulated_file_server_and_the_metrics_count_the_time_above():
    data = scenario(
        file_server={"host": "nfs", "tau": 30, "per_weight": 0.5},
        campaigns=[{"name": "c", "arrival": 0, "jobs": 60, "duration": 120, "io_weight": 2}],
        config={"flow": "recorder", "clusters.a.sensor": "load:nfs", "clusters.a.reference": 3},
    )
    result = simulate(parse(data))
    sensed = [r.sensor for r in Recorder.readings]
    assert max(sensed) > 3 and min(sensed) == 0.0  # 8 jobs x 2 x 0.5 = 8 at most, nothing before the first start
    assert all(r.reference == 3.0 for r in Recorder.readings)
    later = [r for r in Recorder.readings if r.now > 200 and r.running]  # every job takes 120 s: the mean is known
    assert later and all(r.expected_ends == pytest.approx(r.running * r.period / 120) for r in later)
    assert sum(r.started for r in Recorder.readings) == 60  # every job started once, seen by one reading
    server = result["flow"]["file_server"]
    assert server["reference"] == 3.0  # the configured reference of the cluster that reads it
    assert 0.5 < server["time_above_reference"] < 1.0
    assert 3 < server["peak_load"] <= 8.0


def test_an_unknown_file_server_is_a_sensor_failure_of_that_cluster():
    data = scenario(
        clusters=[{"name": "a", "slots": 8}, {"name": "b", "slots": 4}],
        file_server={"host": "nfs"},
        config={"clusters.a.sensor": "load:elsewhere"},
    )
    simulation = Simulation(parse(data))
    result = simulation.run()
    assert result["clusters"]["a"]["started"] == 0
    assert result["jobs_done"] == 60
    events = simulation.store.events(open_only=False, cls=EventClass.CLUSTER)
    assert events and all(e.cluster == "a" and "cannot read the load of elsewhere" in e.message for e in events)


def test_local_load_steps_take_cores_then_give_them_back_and_local_wait_is_recorded():
    data = scenario(
        clusters=[{"name": "a", "slots": 8, "best_effort": False, "local_load": {"steps": [[300, 6], [900, 0]]}}],
        campaigns=[{"name": "c", "arrival": 0, "jobs": 100, "duration": 600}],
    )
    simulation = Simulation(parse(data))
    result = simulation.run()
    local = result["clusters"]["a"]["local_slot_seconds"]
    assert 0 < local <= 6 * 600
    wait = result["flow"]["clusters"]["a"]["local_wait_core_seconds"]
    assert wait > 0  # grid jobs, not best-effort, held the cores the step asked for
    assert result["flow"]["local_wait_core_seconds"] == wait


def test_best_effort_grid_jobs_make_room_for_a_step_at_once():
    data = scenario(
        clusters=[{"name": "a", "slots": 8, "local_load": {"steps": [[300, 6], [900, 0]]}}],
        campaigns=[{"name": "c", "arrival": 0, "jobs": 100, "duration": 600}],
    )
    result = simulate(parse(data))
    assert result["clusters"]["a"]["local_slot_seconds"] == pytest.approx(6 * 600)
    assert result["clusters"]["a"]["killed"] >= 6
    assert result["flow"]["local_wait_core_seconds"] == 0


def test_queued_slots_and_passes_over_the_allowance_come_from_the_simulated_queues(monkeypatch):
    within = simulate(parse(scenario()))["flow"]
    assert within["clusters"]["a"]["waiting_p99"] <= 4 and within["over_allowance"] == 0.0
    assert within["strategy"] == "constant"
    killed = simulate(parse(scenario()), flow="alternate")["flow"]
    assert killed["strategy"] == "alternate"
    assert killed["over_allowance"] == 0.0  # nikita took back what the next pass did not allow
    monkeypatch.setitem(cycle.RUNS, "nikita", lambda ctx: None)
    kept = simulate(parse(scenario()), flow="alternate")["flow"]
    assert 0.2 < kept["over_allowance"] < 0.8  # what one pass queued, the next pass does not allow
    assert kept["clusters"]["a"]["waiting_p99"] == 8


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"file_server": {"tau": 3}}, "scenario file_server: expected a mapping with at least a host"),
        ({"file_server": {"host": "nfs", "speed": 3}}, "scenario file_server.speed: unknown key"),
        ({"file_server": {"host": "nfs", "tau": -1}}, "scenario file_server.tau: must be at least 0"),
        ({"file_server": {"host": "nfs", "clusters": ["z"]}}, "scenario file_server.clusters: expected a list"),
        (
            {"clusters": [{"name": "a", "slots": 8, "local_load": {"steps": [[0, 9]]}}]},
            "scenario clusters[0].local_load.steps[0][1]: expected a whole number of cores from 0 to 8",
        ),
        (
            {"clusters": [{"name": "a", "slots": 8, "local_load": {"steps": [[10, 1], [5, 2]]}}]},
            "scenario clusters[0].local_load.steps[1][0]: times must increase",
        ),
        (
            {"clusters": [{"name": "a", "slots": 8, "local_load": {"step": []}}]},
            "scenario clusters[0].local_load.step: unknown key",
        ),
        (
            {"campaigns": [{"name": "c", "jobs": 1, "duration": 1, "io_weight": "heavy"}]},
            "scenario campaigns[0].io_weight: expected a number",
        ),
        ({"config": {"flow": "nosuch"}}, "scenario config: unknown flow strategy 'nosuch'"),
    ],
)
def test_bad_flow_scenarios_are_one_line_errors_naming_the_key(overrides, message):
    with pytest.raises(ConfigError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        Simulation(parse(scenario(**overrides)))


def test_grid_simulate_flow_overrides_the_configured_strategy_and_shows_the_figures(tmp_path, state):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(file_server={"host": "nfs", "reference": 2}, config={"flow": "alternate"})))
    cli = Grid(state)
    assert cli.json("simulate", str(path))["flow"]["strategy"] == "alternate"
    assert cli.json("simulate", str(path), "--flow", "constant")["flow"]["strategy"] == "constant"
    text = cli("simulate", str(path), "--flow", "constant")
    assert "flow constant" in text and "Passes over allowance" in text and "file server nfs" in text
    bad = cli.runner.invoke(grid, ["--state", str(state), "simulate", str(path), "--flow", "nosuch"])
    assert bad.exit_code == 2 and "Invalid value for '--flow'" in bad.output and "Traceback" not in bad.output


def test_a_cluster_whose_rm_says_it_is_stressed_reads_as_stalled():
    """oar-rest says so (its stress_factor); any adapter with a true ``stressed`` attribute does."""
    simulation = Simulation(parse(scenario(config={"flow": "recorder"}, max_time=100)))
    simulation.clusters["a"].stressed = True
    simulation.run()
    assert Recorder.readings and all(r.stalled for r in Recorder.readings)
    last = Recorder.readings[-1]
    assert simulation.cycle.ctx.allowed["a"] == last.free + last.depth  # a stalled queue is not a flood to kill


class Closed:
    """Sends nothing, ever."""

    name = "closed"

    def allow(self, reading, state):
        return Allowance(0, submit=0, campaigns={c.campaign_id: 0 for c in reading.campaigns}), state


def test_a_stalled_clusters_free_slots_are_filled_whatever_the_strategy_answers(monkeypatch):
    """The stall ends only when one of cigri's jobs starts there: sending nothing would keep it for good."""
    flow.register(Closed)
    simulation = Simulation(parse(scenario(config={"flow": "closed"}, max_time=400)))
    simulation.clusters["a"].stressed = True
    result = simulation.run()
    assert result["clusters"]["a"]["started"] >= 8
    assert max(simulation.trace.waiting["a"]) == 0  # and nothing queued
