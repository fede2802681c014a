"""JDL files written for CiGri (issue 24, items 1-5): JSON as CiGri's Ruby parser reads it, duplicate keys,
$HOME and {HOME}, the macros, and the values CiGri accepts."""

from __future__ import annotations

import json

import pytest

from cigri import jdl, macros
from cigri.adapters import expand_home
from cigri.errors import JdlError

BASE = {"name": "n", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": {}}}


def _parse(**fields) -> jdl.Jdl:
    return jdl.parse({**BASE, **fields})


def _error(data: dict | str) -> str:
    with pytest.raises(JdlError) as err:
        jdl.parse(jdl.load_text(data) if isinstance(data, str) else data)
    return str(err.value)


# ---- item 1: JSON as CiGri reads it ---------------------------------------------------------------------------


def test_a_backslash_before_any_character_is_that_character_as_rubys_json_reads_it():
    # CiGri's README writes "\$HOME", its tmp/test1.json "tchernobyl_prologue_\$1": Ruby's parser takes both
    text = r"""{"name": "n", "exec_file": "\$HOME/run", "nb_jobs": 1, "clusters": {"a": {}},
    "prologue": ["touch t_\$1_works", "cd \\$HOME", "a\tb \u00e9 \/ \"q\" \'s\'"]}"""
    data = jdl.load_text(text)
    assert data["exec_file"] == "$HOME/run"
    assert data["prologue"] == ["touch t_$1_works", "cd \\$HOME", "a\tb é / \"q\" 's'"]


def test_a_backslash_outside_strings_is_still_invalid_json():
    assert "not valid JSON" in _error(r'{"name": "n"\$}')


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"name": "a", "name": "b", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": {}}}', "name"),
        (
            '{"name": "a", "exec_file": "x", "nb_jobs": 1, "clusters": {"luke": {"walltime": 60, "walltime": 90}}}',
            "clusters.luke.walltime",
        ),
        ('{"name": "a", "exec_file": "x", "nb_jobs": 1, "clusters": {"a": {}, "a": {}}}', "clusters.a"),
        ("name: a\nexec_file: x\nnb_jobs: 1\nclusters:\n  a: {}\nexec_file: y\n", "exec_file"),
        (
            "name: a\nexec_file: x\nnb_jobs: 1\nclusters:\n  a:\n    max_jobs: 1\n    max_jobs: 2\n",
            "clusters.a.max_jobs",
        ),
    ],
)
def test_a_key_given_twice_is_refused_naming_it(text, path):
    assert _error(text) == f"{path}: given twice"


def test_yaml_merge_keys_are_not_duplicates():
    data = jdl.load_text(
        "name: a\nexec_file: x\nnb_jobs: 1\nclusters:\n  a: &d {walltime: 60, max_jobs: 2}\n"
        "  b:\n    <<: *d\n    walltime: 90\n"
    )
    parsed = jdl.parse(data)
    assert parsed.clusters["b"]["walltime"] == 90 and parsed.clusters["b"]["max_jobs"] == 2


# ---- item 2: $HOME and {HOME} -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("{HOME}/povray/start.bash", "/home/u/povray/start.bash"),
        ("$HOME/povray/start.bash", "/home/u/povray/start.bash"),
        ("${HOME}/a", "/home/u/a"),
        ("\\$HOME/a", "/home/u/a"),  # CiGri's README writes "\\$HOME" in JSON
        ("~/a", "/home/u/a"),
        ("~", "/home/u"),
        ("$HOME", "/home/u"),
        ("$HOMEDIR/a", "$HOMEDIR/a"),  # another variable
        ("/data/~x/a", "/data/~x/a"),
    ],
)
def test_the_cluster_home_stands_for_home_in_what_runs_there(text, expanded):
    assert expand_home(text, "/home/u") == expanded


def test_files_read_at_submission_are_in_the_submitters_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "params.txt").write_text("a 1\n")
    for written in ("$HOME/params.txt", "{HOME}/params.txt", "~/params.txt", "${HOME}/params.txt"):
        parsed = jdl.parse(_without_nb(written))
        assert parsed.param_file == tmp_path / "params.txt", written
        assert list(jdl.jobs_of(parsed)) == [("a", "a 1")]
    folder = jdl.parse({**BASE, "data_source": "$HOME", "input_files": "{name}"}).data_source
    assert folder == tmp_path


def _without_nb(param_file: str) -> dict:
    data = {**BASE, "param_file": param_file}
    del data["nb_jobs"]
    return data


# ---- item 4: macros --------------------------------------------------------------------------------------------


def test_stage_scripts_expand_cigris_macros():
    script = macros.stage_script(
        [
            "mkdir -p {HOME}/povray/{CAMPAIGN_ID}",
            "echo {OAR_JOB_ID} > ~/id",
            "cd \\$HOME",  # CiGri's README: "cd \\\\$HOME" in JSON
            "imkdir -p povray_results/\\$CIGRI_CAMPAIGN_ID",
            "echo \\$OAR_JOB_ID",
        ],
        campaign_id=7,
        job_id_variable="SLURM_JOB_ID",
    )
    assert script.split("\n") == [
        "mkdir -p $HOME/povray/7",
        "echo $SLURM_JOB_ID > ~/id",
        "cd $HOME",
        "imkdir -p povray_results/$CIGRI_CAMPAIGN_ID",
        "echo $OAR_JOB_ID",  # CiGri's own meaning: OAR's variable
    ]


def test_every_adapter_names_its_job_id_variable():
    from cigri.adapters import JOB_ID_VARIABLES, registry

    assert set(JOB_ID_VARIABLES) == set(registry())
    assert JOB_ID_VARIABLES["oar-ssh"] == JOB_ID_VARIABLES["oar-rest"] == "OAR_JOB_ID"
    assert JOB_ID_VARIABLES["slurm-ssh"] == JOB_ID_VARIABLES["slurm-rest"] == "SLURM_JOB_ID"


def test_the_macros_section_lists_every_macro_the_code_expands():
    from cigri.cli.manpage import jdl_page

    page = jdl_page()
    assert ".SH MACROS" in page
    for macro in macros.MACROS:
        assert macro.name.replace("-", "\\-") in page
    names = {macro.name for macro in macros.MACROS}
    assert {"{HOME}", "~", "$HOME", "{CAMPAIGN_ID}", "{OAR_JOB_ID}", "{JDL_DIR}"} <= names


# ---- item 5: values CiGri accepts ------------------------------------------------------------------------------


def test_nb_jobs_zero_is_a_campaign_without_jobs_yet():
    parsed = _parse(nb_jobs=0)
    assert parsed.nb_jobs == 0 and list(jdl.jobs_of(parsed)) == []
    assert _error({**BASE, "nb_jobs": -1}) == "nb_jobs: must be at least 0"


@pytest.mark.parametrize("value", ["None", "none", "NONE", None])
def test_checkpointing_type_none_is_no_checkpointing(value):
    assert _parse(checkpointing_type=value).clusters["a"]["checkpointing_type"] is None


def test_a_checkpointing_type_cigri_named_but_did_not_build_says_what_to_write():
    assert _error({**BASE, "checkpointing_type": "BLCR"}) == (
        "clusters.a.checkpointing_type: expected signal, exit-code or none, not 'BLCR'"
    )


@pytest.mark.parametrize(
    "resources",
    [
        "nodes=3+other_type_of_resource=2",
        "/nodes=1/core=4+/licence=1",
        "{gpu='YES'}/nodes=1/core=2",
        "{cluster = 'dahu' AND mem > 100}/host=1/core=8",
        "/nodes=2+{type='disk'}/resource_id=1",
    ],
)
def test_oar_resources_with_groups_or_filters_are_kept_as_written(resources):
    assert _parse(resources=resources).clusters["a"]["resources"] == resources


def test_oar_resources_count_the_slots_of_their_first_group():
    assert jdl.resource_slots(jdl.parse_resources("nodes=3+other_type_of_resource=2", "r")) == (3, 1)
    assert jdl.resource_slots(jdl.parse_resources("{gpu='YES'}/nodes=1/core=2", "r")) == (1, 2)


@pytest.mark.parametrize(
    "resources",
    ["nodes=3+", "{gpu='YES'/nodes=1", "nodes=1}", "nodes=1\n+core=2", "+nodes=1", "{x}"],
)
def test_broken_oar_resources_are_refused(resources):
    assert _error({**BASE, "resources": resources}).startswith("clusters.a.resources: ")


def test_one_hierarchy_refuses_oars_own_syntax_saying_what_to_write():
    with pytest.raises(JdlError) as err:
        jdl.plain_resources("nodes=3+other_type_of_resource=2", "clusters.dahu.resources", "the Slurm cluster 'dahu'")
    assert str(err.value) == (
        "clusters.dahu.resources: 'nodes=3+other_type_of_resource=2' is OAR's syntax (+ or a {...} filter), which "
        "the Slurm cluster 'dahu' does not take: give it one hierarchy of nodes and cores, such as /nodes=1/core=4"
    )


@pytest.mark.parametrize("value", ["normal", "NORMAL", "Normal"])
def test_jobs_type_normal_is_cigris_default(value):
    assert _parse(jobs_type=value).name == "n"


def test_jobs_type_desktop_computing_is_refused_saying_what_to_write():
    assert _error({**BASE, "jobs_type": "desktop_computing"}) == (
        "jobs_type: desktop_computing is not built (CiGri refused such campaigns too): give the jobs with params, "
        "param_file or nb_jobs and write jobs_type: normal, or leave it out"
    )
    assert _error({**BASE, "clusters": {"a": {"jobs_type": "normal"}}}) == (
        "clusters.a.jobs_type: a campaign-wide key: give it at the top level, not for one cluster"
    )


def test_cluster_job_type_is_kept_per_cluster():
    parsed = _parse(cluster_job_type="deploy", clusters={"a": {}, "b": {"cluster_job_type": "night, idempotent"}})
    assert parsed.clusters["a"]["cluster_job_type"] == "deploy"
    assert parsed.clusters["b"]["cluster_job_type"] == "night,idempotent"
    assert _parse().clusters["a"]["cluster_job_type"] == ""
    assert _error({**BASE, "cluster_job_type": "besteffort"}) == (
        "clusters.a.cluster_job_type: besteffort is cigri's to add: write type: best-effort"
    )
    assert _error({**BASE, "cluster_job_type": "a b"}).startswith("clusters.a.cluster_job_type: ")


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (
            "semi-best-effort",
            "clusters.a.type: semi-best-effort is not built (cigri has no day and night): write best-effort or normal",
        ),
        ("nightly", "clusters.a.type: nightly is not built (cigri has no day and night): write best-effort or normal"),
    ],
)
def test_cigris_day_and_night_types_are_refused_saying_what_to_write(kind, message):
    assert _error({**BASE, "type": kind}) == message


def test_scp_gathering_is_the_copy_through_the_clusters_transport(tmp_path):
    parsed = _parse(output_gathering_method="scp", output_file="{name}.out", output_destination=str(tmp_path))
    assert parsed.output_files == ("{name}.out",) and parsed.output_destination == tmp_path


@pytest.mark.parametrize("method", ["iRods", "collector"])
def test_other_gathering_methods_are_refused_saying_what_to_write(method):
    assert _error({**BASE, "output_gathering_method": method}) == (
        f"output_gathering_method: {method} is not built: write copy (or scp: outputs are copied back through the "
        "cluster's transport), or none and gather them in the epilogue"
    )


def test_cigris_parser_examples_load():
    # CiGri's spec/3_jdl-parser: minimal campaigns it accepts
    for text in (
        '{"name":"n", "nb_jobs":0,"clusters":{"c":{"exec_file":"e"}}}',
        '{"name":"n", "nb_jobs":0,"exec_file":"e","clusters":{"c":{}}}',
        '{"name":"n","params":["p1", "p2"],"clusters":{"c":{"exec_file":"e"}}}',
    ):
        jdl.parse(json.loads(text))
