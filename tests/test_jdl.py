"""JDL parsing: CiGri v3 compatibility, defaults, string forms, errors naming the key path."""

from __future__ import annotations

import json
import shlex

import pytest
from hypothesis import HealthCheck, given, settings
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
    assert a["max_jobs"] is None and a["temporal_grouping"] is False and a["dimensional_grouping"] is False
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
        (  # levels run together without their / (hypothesis found a ValueError here)
            {"name": "n", "exec_file": "x", "clusters": {"a": {"resources": "core=1core=1"}}, "nb_jobs": 1},
            "clusters.a.resources",
        ),
        (  # the same in OAR's own syntax
            {"name": "n", "exec_file": "x", "clusters": {"a": {"resources": "core=1core=1+nodes=1"}}, "nb_jobs": 1},
            "clusters.a.resources",
        ),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {"max_jobs": "0"}}, "nb_jobs": 1}, "clusters.a.max_jobs"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "nb_jobs": 1, "params": ["a"]}, "params"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "params": "a b"}, "params"),
        ({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "nb_jobs": -1}, "nb_jobs"),
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


def _reference_jobs(lines: list[str], where) -> list[tuple[str, str]] | str:
    """What a param source means, line by line through the shell-like split: the jobs, or the error."""
    jobs, seen = [], set()
    for number, line in lines:
        try:
            name = jdl.split_params(line, where(number))[0]
        except JdlError as exc:
            return str(exc)
        if not name or "/" in name or name in (".", ".."):  # names no folder of outputs can have
            with pytest.raises(JdlError) as refused:
                jdl.check_job_name(name, where(number))
            return str(refused.value)
        if name in seen:
            return f"{where(number)}: job name {name!r} is used twice in the campaign"
        seen.add(name)
        jobs.append((name, line))
    return jobs


def _blocks_or_error(parsed, size: int) -> list[tuple[str, str]] | str:
    try:
        return [job for block in jdl.job_blocks(parsed, size=size) for job in zip(*block, strict=True)]
    except JdlError as exc:
        return str(exc)


# words that take each way through job_blocks: plain ones, quotes, tabs, CR, a shell-blank-but-not-str.split
# blank (\x0b), a Unicode space, names that repeat, and names that are no file names (plain, quoted, empty)
_WORD = st.sampled_from(
    ["a", "b", "j1", "j10", "x=1", "'q r'", '"s"', "\\t", "é", "\x0b", "\u2003", "-", "$(x)", "a/b", "..", "'.'", "''"]
)
_LINE = st.lists(_WORD, max_size=4).map(lambda words: " ".join(words)) | st.sampled_from(["", "  ", "\t", "a\tb"])


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(lines=st.lists(_LINE, max_size=12), size=st.integers(1, 5), crlf=st.booleans())
def test_param_file_blocks_mean_what_each_line_means(tmp_path, lines, size, crlf):
    """The block-wise fast path gives the jobs (or the error, naming the same line) that reading the file
    line by line gives, whatever the block size."""
    (tmp_path / "p.txt").write_text("".join(line + ("\r\n" if crlf else "\n") for line in lines), newline="")
    parsed = jdl.parse({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "param_file": str(tmp_path / "p.txt")})
    numbered = [(number, line) for number, line in enumerate(lines, 1) if line and not line.isspace()]
    assert _blocks_or_error(parsed, size) == _reference_jobs(numbered, lambda n: f"param_file line {n}")


@given(lines=st.lists(_LINE, min_size=1, max_size=12), size=st.integers(1, 5))
def test_params_blocks_mean_what_each_line_means(lines, size):
    parsed = jdl.parse({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "params": lines})
    expected = _reference_jobs(list(enumerate(lines)), lambda n: f"params[{n}]")
    assert _blocks_or_error(parsed, size) == expected


BASE = {"name": "n", "exec_file": "run", "clusters": {"local": {}}, "params": ["a"]}


def test_campaign_scheduling_keys_have_defaults_and_reach_the_record():
    plain = jdl.parse(dict(BASE))
    assert (plain.priority, plain.klass, plain.finalize) == (0, "", False)
    given = jdl.parse({**BASE, "priority": "-3", "Class": "physics", "finalize": "true"})
    assert (given.priority, given.klass, given.finalize) == (-3, "physics", True)
    record = given.as_record()
    assert (record["priority"], record["class"], record["finalize"]) == (-3, "physics", True)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("priority", 1.5, "priority: expected a whole number"),
        ("priority", True, "priority: expected a whole number"),
        ("class", ["a"], "class: expected a string"),
        ("finalize", "maybe", "finalize: expected true or false"),
    ],
)
def test_bad_campaign_scheduling_keys_name_the_key(key, value, message):
    with pytest.raises(JdlError, match=f"^{message}"):
        jdl.parse({**BASE, key: value})


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        (
            {"checkpointing_type": "blcr"},
            "clusters.a.checkpointing_type: expected signal, exit-code or none, not 'blcr'",
        ),
        ({"checkpointing_signal": "USR1"}, "clusters.a.checkpointing_signal: goes with checkpointing_type: signal"),
        (
            {"checkpointing_type": "signal", "checkpointing_signal": "KILL"},
            "clusters.a.checkpointing_signal: expected one of USR1, USR2, TERM, INT, HUP, ALRM, URG, XCPU, not 'KILL'",
        ),
        (
            {"checkpointing_type": "exit-code", "checkpointing_exit_code": 66},
            "clusters.a.checkpointing_exit_code: expected an exit status from 1 to 255 other than 66 and 67, not 66",
        ),
        ({"retry_resources": {"walltime": 1}}, "clusters.a.retry_resources.walltime: expected a factor above 1"),
        ({"retry_resources": {"walltime": 2}}, "clusters.a.retry_resources.max_walltime: required"),
        (
            {"retry_resources": {"walltime": 2, "max_walltime": "00:30:00"}},
            "clusters.a.retry_resources.max_walltime: must be above the walltime (01:00:00)",
        ),
        ({"retry_resources": {"cores": 2}}, "clusters.a.retry_resources.cores: unknown key"),
        (
            {"checkpointing_type": "signal", "temporal_grouping": True},
            "clusters.a.checkpointing_type: signal does not go with temporal_grouping (use exit-code)",
        ),
    ],
)
def test_checkpointing_and_retry_resources_are_checked(settings, error):
    with pytest.raises(JdlError) as bad:
        jdl.parse({"name": "n", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": settings}})
    assert str(bad.value).startswith(error)


def test_checkpointing_and_retry_resources_defaults():
    parsed = jdl.parse(
        {
            "name": "n",
            "exec_file": "x",
            "nb_jobs": 1,
            "checkpointing_type": "Signal",
            "retry_resources": {"walltime": 2, "max_walltime": "04:00:00"},
            "clusters": {"a": {}, "b": {"checkpointing_type": "exit_code", "checkpointing_exit_code": "99"}},
        }
    )
    a, b = parsed.clusters["a"], parsed.clusters["b"]
    assert (a["checkpointing_type"], a["checkpointing_signal"], a["checkpointing_grace"]) == ("signal", "USR2", 300)
    assert a["retry_resources"] == {"walltime": 2.0, "max_walltime": 4 * 3600}
    assert (b["checkpointing_type"], b["checkpointing_exit_code"], b["checkpointing_signal"]) == ("exit-code", 99, None)


@pytest.mark.parametrize(
    "extra",
    [{}, {"checkpointing_type": "signal"}, {"retry_resources": {"walltime": 2, "max_walltime": "04:00:00"}}],
)
def test_a_walltime_given_as_null_is_the_default_walltime(extra):
    """Found by fuzzing: ``walltime: null`` reached the checkpoint grace check (and the runner) as None."""
    parsed = jdl.parse(
        {"name": "n", "exec_file": "/bin/true", "params": ["a"], "walltime": None, **extra, "clusters": {"c": {}}}
    )
    settings = parsed.clusters["c"]
    assert (settings["walltime"], settings["prologue_walltime"], settings["epilogue_walltime"]) == (3600, 3600, 3600)


BASE = {"name": "n", "exec_file": "x", "params": ["a 1", "b 2"], "clusters": {"c": {}}}


def test_input_files_go_with_a_local_data_source(tmp_path):
    parsed = jdl.parse({**BASE, "data_source": str(tmp_path), "input_files": ["in_{2}.dat", "common.dat"]})
    assert parsed.data_source == tmp_path and parsed.input_files == ("in_{2}.dat", "common.dat")
    assert jdl.expand_files(parsed.input_files, ["a", "1"], "x") == ["in_1.dat", "common.dat"]
    assert jdl.expand_files(("{name}/x", "{name}/x"), ["a"], "x") == ["a/x"]  # each file once


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"input_files": "a"}, "data_source: required with input_files (the local folder they are read from)"),
        ({"data_source": "."}, "input_files: required with data_source (the files each job reads)"),
        ({"data_source": "host:/data", "input_files": "a"}, "data_source: only a local folder is built"),
        ({"data_source": "s3://b/x", "input_files": "a"}, "data_source: only a local folder is built"),
        ({"data_source": "nowhere", "input_files": "a"}, "data_source: "),
        ({"data_source": ".", "input_files": "{x}.dat"}, "input_files: unknown field {x}"),
        ({"data_source": ".", "input_files": ["a", "/etc/passwd"]}, "input_files[1]: '/etc/passwd' is not a relative"),
        ({"data_source": ".", "input_files": "../up"}, "input_files: '../up' is not a relative"),
        ({"data_source": ".", "input_files": []}, "input_files: expected a file name template"),
        ({"output_gathering_method": "ftp"}, "output_gathering_method: only copy, scp, none are built, not 'ftp'"),
        ({"output_file": "o"}, "output_destination: required to gather outputs"),
        ({"output_gathering_method": "none", "output_file": "o"}, "output_file: goes with output_gathering_method"),
        ({"output_destination": "out"}, "output_file: required to gather outputs"),
        ({"clusters": {"c": {"input_files": "a"}}}, "clusters.c.input_files: a campaign-wide key"),
    ],
)
def test_bad_file_keys_name_their_field(tmp_path, fields, message):
    with pytest.raises(JdlError) as error:
        jdl.parse({**BASE, **fields}, base_dir=tmp_path)
    assert str(error.value).startswith(message)


def test_a_template_field_beyond_the_line_is_an_error():
    with pytest.raises(JdlError, match=r"job a: \{3\} but the job's param line has 2 words"):
        jdl.expand_files(("in_{3}",), ["a", "1"], "job a")


def test_outputs_are_gathered_by_copy_to_a_local_folder(tmp_path):
    parsed = jdl.parse({**BASE, "output_file": "out_{1}.txt", "output_destination": "results"}, base_dir=tmp_path)
    assert parsed.output_files == ("out_{1}.txt",) and parsed.output_destination == tmp_path / "results"
    record = parsed.as_record()
    assert record["output_file"] == ["out_{1}.txt"] and record["output_destination"] == str(tmp_path / "results")
