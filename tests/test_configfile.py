"""The configuration file and the environment's overrides (grid config show|check), and the admission rules
gridsub checks (issue 14, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cigri.cli import grid

from .conftest import write_jdl


def run(cli, *args: str, env: dict | None = None):
    return cli.runner.invoke(grid, ["--state", str(cli.state), *args], env=env)


def refused(cli, *args: str, code: int = 4, env: dict | None = None) -> str:
    result = run(cli, *args, env=env)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    return result.stderr.strip()


@pytest.fixture
def conf(cli):
    """The default configuration file: cigri.yaml beside the state."""
    return cli.state.parent / "cigri.yaml"


def test_the_file_overrides_the_state_and_the_environment_overrides_both(cli, conf):
    cli("config", "set", "nikita.queue_timeout", "900")
    cli("config", "set", "spritz.window", "600")
    conf.write_text("nikita:\n  queue_timeout: 300\nmetasched: fairshare\nmetasched.fairshare.half_life: 60\n")
    assert cli.json("config", "show", "--set", "--origins") == {
        "metasched": {"value": "fairshare", "from": str(conf)},
        "metasched.fairshare.half_life": {"value": 60, "from": str(conf)},
        "nikita.queue_timeout": {"value": 300, "from": str(conf)},
        "spritz.window": {"value": 600, "from": "state"},
    }
    result = run(cli, "config", "show", "--json", env={"CIGRI_METASCHED": "srpt", "CIGRI_NIKITA__QUEUE_TIMEOUT": "5"})
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["metasched"] == "srpt" and shown["nikita.queue_timeout"] == 5
    assert "flow: constant  [default]" in cli("config", "show").splitlines()
    assert "spritz.window: 600  [state]" in cli("config", "show").splitlines()


def test_an_unknown_key_in_the_file_is_refused_with_the_file_and_the_key(cli, conf):
    conf.write_text("nikita:\n  queue_timout: 300\n")
    message = f"{conf}: nikita.queue_timout: unknown configuration key"
    assert message in refused(cli, "config", "check")
    assert message in refused(cli, "gridstat")  # every command reads it
    other = conf.parent / "other.yaml"
    other.write_text("colour: red\n")
    assert f"{other}: colour: unknown configuration key" in refused(cli, "config", "check", str(other))


def test_a_bad_value_names_its_key(cli, conf):
    conf.write_text("blackhole: {streak: 0}\n")
    assert f"{conf}: blackhole.streak: expected a whole number of jobs, at least 1, got 0" in refused(
        cli, "config", "check"
    )
    conf.write_text("clusters: {far: {flow: pi}}\n")
    assert "clusters.far.flow: no cluster named 'far'" in refused(cli, "config", "check")


def test_the_environment_spelling(cli):
    assert "$CIGRI_NIKITA__QUEU: nikita.queu: unknown configuration key" in refused(
        cli, "config", "show", env={"CIGRI_NIKITA__QUEU": "1"}
    )
    assert "$CIGRI_SMTP: notify.smtp: expected host:port, got 'a:b:c'" in refused(
        cli, "config", "show", env={"CIGRI_SMTP": "a:b:c"}
    )
    result = run(cli, "config", "show", "--json", "--origins", env={"CIGRI_SMTP": "mail.example.org:2525"})
    assert '"from": "$CIGRI_SMTP"' in result.output and result.exit_code == 0


def test_set_refuses_a_key_the_file_gives(cli, conf):
    conf.write_text("metasched: fairshare\n")
    assert f"metasched: set by {conf}, which overrides the state" in refused(cli, "config", "set", "metasched", "srpt")
    assert cli.json("config", "show", "--set") == {"metasched": "fairshare"}


def test_check_names_a_missing_file_and_a_file_given_by_option(cli, tmp_path):
    assert "no such configuration file" in refused(cli, "--config", str(tmp_path / "none.yaml"), "gridstat", code=5)
    assert "none.yaml: no such configuration file" in refused(cli, "config", "check", str(tmp_path / "none.yaml"))
    given = tmp_path / "given.yaml"
    given.write_text("spritz: ewma\n")
    assert cli.json("--config", str(given), "config", "show", "--set") == {"spritz": "ewma"}


def test_declared_clusters_are_created_by_check_apply(cli, conf):
    conf.write_text("clusters:\n  big:\n    adapter: local\n    slots: 3\n    flow: pi\n")
    assert "cluster big: to add (local)" in cli("config", "check")
    assert "big" not in [c["name"] for c in cli.json("gridclusters")]
    assert "cluster big: added (local)" in cli("config", "check", "--apply")
    assert [c["slots"] for c in cli.json("gridclusters") if c["name"] == "big"] == [3]
    conf.write_text("clusters:\n  big:\n    adapter: local\n    slots: 0\n")
    assert f"{conf}: clusters.big:" in refused(cli, "config", "check", "--apply")
    conf.write_text("clusters:\n  big:\n    slots: 4\n")
    assert "clusters.big.slots: unknown configuration key" in refused(cli, "config", "check")


def test_admission_rules_refuse_at_gridsub_naming_the_rule_and_write_nothing(cli, conf, tmp_path):
    jdl = write_jdl(tmp_path, exec_file="/bin/true", nb_jobs=12)
    conf.write_text("admission: {test_jobs: 5}\n")
    assert refused(cli, "gridsub", "-t", "test", str(jdl), code=6) == (
        "grid gridsub: error: refused by admission.test_jobs (5): the test campaign has 12 jobs"
    )
    conf.write_text("clusters: {local: {users: [somebody-else]}}\n")
    assert "refused by clusters.local.users:" in refused(cli, "gridsub", str(jdl), code=6)
    conf.write_text("admission: {jobs_per_campaign: 20, jobs_per_user: 20}\n")
    campaign = cli.submit(jdl)
    assert "refused by admission.jobs_per_user (20):" in refused(cli, "gridsub", str(jdl), code=6)
    assert "refused by admission.jobs_per_campaign (20): the campaign has 21 jobs" in refused(
        cli, "gridsub", "-c", str(campaign), "-J", json.dumps([f"x{i}" for i in range(9)]), code=6
    )
    assert [c["id"] for c in cli.json("gridstat")] == [campaign]
    assert cli.json("gridstat", "-c", str(campaign))["total"] == 12


def test_the_documented_example_checks_and_applies(cli):
    example = Path(__file__).resolve().parent.parent / "docs" / "cigri.example.yaml"
    assert "cluster dahu: to add (slurm-ssh)" in cli("config", "check", str(example))
    assert "cluster dahu: added (slurm-ssh)" in cli("--config", str(example), "config", "check", "--apply")
    shown = cli.json("--config", str(example), "config", "show", "--origins")
    assert shown["clusters.dahu.flow"] == {"value": "pi", "from": str(example)}
    assert shown["admission.test_jobs"]["value"] == 20


def test_the_environment_names_a_cluster_whatever_its_case_or_dashes(cli):
    """Variable names are capitals and underscores: CIGRI_CLUSTERS__DAHU_2__FLOW sets the cluster Dahu-2's."""
    cli("gridclusters", "add", "Dahu-2", "--adapter", "local", "--slots", "1")
    shown = run(cli, "config", "show", "--json", env={"CIGRI_CLUSTERS__DAHU_2__FLOW": "pi"})
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["clusters.Dahu-2.flow"] == "pi"
    cli("gridclusters", "add", "dahu_2", "--adapter", "local", "--slots", "1")
    assert "$CIGRI_CLUSTERS__DAHU_2__FLOW: clusters Dahu-2 and dahu_2 read the same" in refused(
        cli, "config", "show", env={"CIGRI_CLUSTERS__DAHU_2__FLOW": "pi"}
    )


def test_show_gives_every_keys_effective_value_and_origin_even_with_only_defaults(cli, conf):
    lines = cli("config", "show").splitlines()
    assert "metasched: lpt  [default]" in lines and "locality: cursors  [default]" in lines
    assert "spritz.window: 3600.0  [default]" in lines and "notify.smtp: null  [default]" in lines
    assert cli.json("config", "show", "--set") == {}
    conf.write_text("metasched: fairshare\n")
    cli("config", "set", "spritz.window", "600")
    result = run(cli, "config", "show", "--json", "--origins", env={"CIGRI_NIKITA__QUEUE_TIMEOUT": "5"})
    shown = json.loads(result.output)
    assert shown["metasched"] == {"value": "fairshare", "from": str(conf)}
    assert shown["spritz.window"] == {"value": 600, "from": "state"}
    assert shown["nikita.queue_timeout"] == {"value": 5, "from": "$CIGRI_NIKITA__QUEUE_TIMEOUT"}
    assert shown["flow"] == {"value": "constant", "from": "default"}
    assert shown["locality.generator_wait"] == {"value": 30.0, "from": "default"}
    assert cli.json("config", "show", "--set") == {"metasched": "fairshare", "spritz.window": 600}
