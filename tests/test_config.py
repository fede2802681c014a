"""grid config: choosing the metascheduler strategy and its options, checked before anything is written."""

from __future__ import annotations

import pytest

from cigri import scheduling
from cigri.cli import grid
from cigri.errors import ConfigError
from cigri.scheduling import Decision, TestFirstFifo

from .conftest import write_jdl


class Tuned(TestFirstFifo):
    """fifo with one option, ``depth``: a whole number >= 0."""

    name = "tuned"

    def __init__(self, depth: int = 1):
        self.depth = depth

    @classmethod
    def configure(cls, options: dict) -> Tuned:
        for key, value in options.items():
            if key != "depth":
                raise ConfigError(f"metasched.tuned.{key}: unknown option (valid: depth)")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"metasched.tuned.depth: must be a whole number >= 0, got {value!r}")
        return cls(**options)


class Idle:
    """Launches nothing."""

    name = "idle"

    def decide(self, snapshot, state):
        return Decision()


@pytest.fixture(autouse=True)
def strategies(monkeypatch):
    monkeypatch.setattr("cigri.scheduling._REGISTRY", dict(scheduling._REGISTRY))
    scheduling.register(Tuned)
    scheduling.register(Idle)


def fails(cli, *args: str, code: int = 4) -> str:
    result = cli.runner.invoke(grid, ["--state", str(cli.state), *args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    return result.stderr.strip()


def test_show_set_is_empty_then_lists_what_was_set(cli):
    assert cli.json("config", "show", "--set") == {}
    cli("config", "set", "metasched", "tuned")
    cli("config", "set", "metasched.tuned.depth", "3")
    cli("config", "set", "metasched", "idle", "--cluster", "local")
    assert cli.json("config", "show", "--set") == {
        "metasched": "tuned",
        "metasched.tuned.depth": 3,  # the value is YAML: a number
        "clusters.local.metasched": "idle",
    }
    assert "metasched.tuned.depth: 3  [state]" in cli("config", "show").splitlines()


def test_an_unknown_strategy_is_refused_listing_the_valid_ones_and_nothing_is_written(cli):
    message = fails(cli, "config", "set", "metasched", "nosuch")
    valid = ", ".join(sorted(scheduling.registry()))
    assert message == f"grid config set: error: unknown metascheduler 'nosuch' (valid: {valid})"
    assert "idle" in valid and "tuned" in valid
    fails(cli, "config", "set", "metasched", "nosuch", "--cluster", "local")
    assert cli.json("config", "show", "--set") == {}


def test_an_option_the_strategy_refuses_is_refused_with_its_words(cli):
    assert fails(cli, "config", "set", "metasched.tuned.depth", "-1").endswith(
        "metasched.tuned.depth: must be a whole number >= 0, got -1"
    )
    assert fails(cli, "config", "set", "metasched.tuned.width", "2").endswith(
        "metasched.tuned.width: unknown option (valid: depth)"
    )
    assert "metasched.fifo.depth: fifo has no such option" in fails(cli, "config", "set", "metasched.fifo.depth", "1")
    assert cli.json("config", "show", "--set") == {}


def test_an_unknown_key_is_refused_naming_it(cli):
    assert "color: unknown configuration key" in fails(cli, "config", "set", "color", "red")
    assert "color: unknown configuration key" in fails(cli, "config", "unset", "color")
    assert "--cluster applies to metasched, flow, sensor, reference, users only" in fails(
        cli, "config", "set", "metasched.tuned.depth", "1", "--cluster", "local"
    )
    assert "no cluster named 'far'" in fails(cli, "config", "set", "metasched", "tuned", "--cluster", "far", code=5)
    assert cli.json("config", "show", "--set") == {}


def test_unset_removes_a_key(cli):
    cli("config", "set", "metasched", "tuned", "--cluster", "local")
    cli("config", "unset", "metasched", "--cluster", "local")
    assert cli.json("config", "show", "--set") == {}


def test_the_configured_strategy_decides_and_policy_overrides_it_for_one_run(cli, tmp_path, job_script):
    cid = cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["a ok", "b ok"]))
    cli("config", "set", "metasched", "idle")
    cli("almighty")
    assert cli.json("gridstat", "-c", str(cid))["clusters"][0]["launched"] == 0
    cli("almighty", "--policy", "fifo")
    assert cli.json("gridstat", "-c", str(cid))["clusters"][0]["launched"] == 2
    assert cli.json("config", "show", "--set") == {"metasched": "idle"}


def test_flow_keys_are_set_per_grid_and_per_cluster(cli):
    cli("config", "set", "flow", "constant")
    cli("config", "set", "flow.constant.depth", "4")
    cli("config", "set", "flow", "constant", "--cluster", "local")
    cli("config", "set", "sensor", "load:localhost", "--cluster", "local")
    cli("config", "set", "reference", "2.5", "--cluster", "local")
    assert cli.json("config", "show", "--set") == {
        "flow": "constant",
        "flow.constant.depth": 4,
        "clusters.local.flow": "constant",
        "clusters.local.sensor": "load:localhost",
        "clusters.local.reference": 2.5,
    }
    cli("config", "set", "sensor", "waiting", "--cluster", "local")
    assert cli.json("config", "show", "--set")["clusters.local.sensor"] == "waiting"
    cli("config", "unset", "sensor", "--cluster", "local")
    cli("config", "unset", "flow.constant.depth")
    assert "clusters.local.sensor" not in cli.json("config", "show", "--set")
    assert "flow.constant.depth" not in cli.json("config", "show", "--set")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["flow", "nosuch"], "unknown flow strategy 'nosuch'"),
        (["flow", "3"], "flow: expected a flow strategy name, got 3"),
        (["flow.constant.depth", "-2"], "flow.constant.depth: expected a whole number >= 0, got -2"),
        (["flow.constant.gain", "1"], "flow.constant.gain: constant has no such option"),
        (["flow.drain.passes", "0"], "flow.drain.passes: must be > 0, got 0"),
        (["flow.drain.passes", "few"], "flow.drain.passes: must be a number, got 'few'"),
        (["flow.drain.depth", "4"], "flow.drain.depth: unknown option (valid: passes)"),
        (["clusters.local.flow", "nosuch"], "unknown flow strategy 'nosuch'"),
        (["sensor", "load", "--cluster", "local"], "clusters.local.sensor: expected waiting or load:HOST, got 'load'"),
        (["sensor", "load:", "--cluster", "local"], "clusters.local.sensor: expected waiting or load:HOST"),
        (["sensor", "queue", "--cluster", "local"], "clusters.local.sensor: expected waiting or load:HOST"),
        (["reference", "high", "--cluster", "local"], "clusters.local.reference: expected a number >= 0, got 'high'"),
        (["reference", "-1", "--cluster", "local"], "clusters.local.reference: expected a number >= 0, got -1"),
        (["clusters.local.color", "red"], "clusters.local.color: unknown configuration key"),
        (["flow.constant.depth", "1", "--cluster", "local"], "--cluster applies to metasched, flow, sensor"),
    ],
)
def test_a_bad_flow_key_or_value_is_one_line_naming_it_and_nothing_is_written(cli, args, message):
    assert message in fails(cli, "config", "set", *args)
    assert cli.json("config", "show", "--set") == {}


def test_a_flow_key_of_an_unknown_cluster_is_refused(cli):
    assert "clusters.far.sensor: no cluster named 'far'" in fails(
        cli, "config", "set", "sensor", "waiting", "--cluster", "far", code=5
    )
    assert cli.json("config", "show", "--set") == {}


def test_cluster_flows_read_the_configuration_and_an_override_applies_everywhere(cli):
    from cigri import config
    from cigri.store import Store

    cli("config", "set", "flow.constant.depth", "4")
    cli("config", "set", "sensor", "load:nfs1", "--cluster", "local")
    cli("config", "set", "reference", "3", "--cluster", "local")
    store = Store(cli.state)
    flows = config.cluster_flows(store, ["local"])
    assert (flows["local"].strategy.name, flows["local"].strategy.depth) == ("constant", 4)
    assert (flows["local"].host, flows["local"].reference) == ("nfs1", 3.0)
    store.close()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("resubmit.max_attempts", "0", "resubmit.max_attempts: expected a whole number, at least 1, got 0"),
        ("resubmit.max_resumes", "many", "resubmit.max_resumes: expected a whole number, at least 1, got 'many'"),
        ("resubmit.failure_window", "5", "resubmit.failure_window: expected a whole number, at least 10, got 5"),
        ("resubmit.failure_rate", "1.5", "resubmit.failure_rate: expected a fraction between 0 and 1"),
        ("checkpoint.exit_code", "66", "checkpoint.exit_code: expected an exit status from 1 to 255 other than 66"),
        ("resubmit.error_retries", "-1", "resubmit.error_retries: expected a whole number, at least 0, got -1"),
    ],
)
def test_a_bad_resubmission_or_checkpoint_value_is_refused_and_nothing_is_written(cli, key, value, message):
    assert message in fails(cli, "config", "set", key, value)
    assert cli.json("config", "show", "--set") == {}
    cli("config", "set", key, {"resubmit.failure_rate": "0.75", "checkpoint.exit_code": "99"}.get(key, "12"))
    assert list(cli.json("config", "show", "--set")) == [key]
