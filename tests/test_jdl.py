"""JDL parsing: CiGri v3 compatibility, defaults, string forms, errors naming the key path."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cigri import jdl
from cigri.errors import JdlError

CIGRI_EXAMPLE = {
    "name": "povray_demo",
    "resources": "core=1",
    "exec_file": "{HOME}/povray/start.bash",
    "exec_directory": "{HOME}/povray/{CAMPAIGN_ID}",
    "params": ["frame1 1", "frame2 2"],
    "test_mode": "false",
    "type": "best-effort",
    "prologue": ["set -e", "mkdir -p {HOME}/povray/{CAMPAIGN_ID}"],
    "epilogue": ["rm -rf ~/povray"],
    "clusters": {
        "luke": {"project": "test", "walltime": "00:5:00", "properties": "host != 'luke20'"},
        "ceciccluster": {"walltime": "00:10:00"},
    },
}


def test_cigri_example_keeps_its_meaning():
    parsed = jdl.parse(json.loads(json.dumps(CIGRI_EXAMPLE)))
    luke, cecic = parsed.clusters["luke"], parsed.clusters["ceciccluster"]
    assert luke["walltime"] == 300 and cecic["walltime"] == 600
    assert luke["project"] == "test" and cecic["project"] == ""
    assert luke["prologue"] == ["set -e", "mkdir -p {HOME}/povray/{CAMPAIGN_ID}"] == cecic["prologue"]
    assert luke["type"] == "best-effort" and luke["test_mode"] is False
    assert luke["prologue_walltime"] == 300  # falls back to the cluster's walltime
    assert parsed.test_mode is False


def test_defaults_are_cigris():
    parsed = jdl.parse({"name": "n", "exec_file": "x", "nb_jobs": 2, "clusters": {"a": None}})
    a = parsed.clusters["a"]
    assert (a["exec_directory"], a["resources"], a["walltime"], a["type"]) == (
        "{HOME}",
        "/resource_id=1",
        3600,
        "best-effort",
    )
    assert a["max_jobs"] is None and a["temporal_grouping"] is False
    assert list(jdl.jobs_of(parsed)) == [("0", "0"), ("1", "1")]


def test_keys_are_case_insensitive_and_cluster_keys_override_globals():
    parsed = jdl.parse(
        {"NAME": "n", "Exec_File": "x", "WallTime": "300", "nb_jobs": "1", "clusters": {"a": {"WALLTIME": 60}, "b": {}}}
    )
    assert parsed.clusters["a"]["walltime"] == 60 and parsed.clusters["b"]["walltime"] == 300


@pytest.mark.parametrize(
    ("text", "seconds"), [("01:00:00", 3600), ("00:5:00", 300), ("300", 300), (90, 90), ("2:30", 9000)]
)
def test_walltime_forms(text, seconds):
    assert jdl.parse_walltime(text, "walltime") == seconds


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"clusters": {"a": {}}, "exec_file": "x", "nb_jobs": 1}, "name"),
        ({"name": "n", "exec_file": "x", "nb_jobs": 1}, "clusters"),
        ({"name": "n", "clusters": {"a": {}}, "nb_jobs": 1}, "clusters.a.exec_file"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {"walltime": "1h"}}, "nb_jobs": 1}, "clusters.a.walltime"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {"bogus": 1}}, "nb_jobs": 1}, "clusters.a.bogus"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "nb_jobs": 1, "colour": 1}, "colour"),
        (
            {"name": "n", "exec_file": "x", "clusters": {"a": {"test_mode": "perhaps"}}, "nb_jobs": 1},
            "clusters.a.test_mode",
        ),
        (
            {"name": "n", "exec_file": "x", "clusters": {"a": {"resources": "/gpus=two"}}, "nb_jobs": 1},
            "clusters.a.resources",
        ),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {"max_jobs": "0"}}, "nb_jobs": 1}, "clusters.a.max_jobs"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "nb_jobs": 1, "params": ["a"]}, "params"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "params": "a b"}, "params"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "nb_jobs": 0}, "nb_jobs"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {"type": "urgent"}}, "nb_jobs": 1}, "clusters.a.type"),
    ],
)
def test_errors_name_the_key_path(data, path):
    with pytest.raises(JdlError) as err:
        jdl.parse(data)
    assert err.value.path == path
    assert str(err.value).startswith(path)


def test_param_lines_split_like_a_shell_without_expansion():
    parsed = jdl.parse(
        {"name": "n", "exec_file": "x", "clusters": {"a": {}}, "params": ["j1 'two words' $(touch pwned) ~ \"a;b\""]}
    )
    [(name, line)] = list(jdl.jobs_of(parsed))
    assert name == "j1"
    assert jdl.split_params(line, "p") == ["j1", "two words", "$(touch", "pwned)", "~", "a;b"]


def test_duplicate_names_and_bad_quotes_are_errors():
    parsed = jdl.parse({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "params": ["a 1", "b", "a 2"]})
    with pytest.raises(JdlError, match=r"params\[2\]: job name 'a' is used twice"):
        list(jdl.jobs_of(parsed))
    parsed = jdl.parse({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "params": ["a 'open"]})
    with pytest.raises(JdlError, match=r"params\[0\]: cannot split"):
        list(jdl.jobs_of(parsed))


def test_param_file_is_relative_to_the_jdl_and_skips_blank_lines(tmp_path):
    (tmp_path / "p.txt").write_text("a 1\n\nb 2\n")
    path = tmp_path / "c.yaml"
    path.write_text("name: n\nexec_file: x\nparam_file: p.txt\nclusters:\n  local:\n")
    parsed = jdl.load(path)
    assert list(jdl.jobs_of(parsed)) == [("a", "a 1"), ("b", "b 2")]


def test_yaml_and_json_give_the_same_campaign(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(CIGRI_EXAMPLE))
    (tmp_path / "a.yaml").write_text(
        "name: povray_demo\nresources: core=1\nexec_file: '{HOME}/povray/start.bash'\n"
        "exec_directory: '{HOME}/povray/{CAMPAIGN_ID}'\nparams: ['frame1 1', 'frame2 2']\ntest_mode: 'false'\n"
        "type: best-effort\nprologue: ['set -e', 'mkdir -p {HOME}/povray/{CAMPAIGN_ID}']\n"
        "epilogue: ['rm -rf ~/povray']\n"
        "clusters:\n  luke: {project: test, walltime: '00:5:00', properties: \"host != 'luke20'\"}\n"
        "  ceciccluster: {walltime: '00:10:00'}\n"
    )
    assert jdl.load(tmp_path / "a.json").clusters == jdl.load(tmp_path / "a.yaml").clusters


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1), min_size=1, max_size=6))
def test_any_words_quoted_reach_the_job_unchanged(words):
    line = " ".join(shlex.quote(w) for w in words)
    assert jdl.split_params(line, "p") == words


@given(st.text(alphabet=st.characters(blacklist_characters="'\"\\", blacklist_categories=("Cs",))))
def test_lines_without_quotes_split_as_shlex_does(line):
    try:
        expected = shlex.split(line)
    except ValueError:
        return
    if expected:
        assert jdl.split_params(line, "p") == expected
