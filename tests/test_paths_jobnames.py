"""A job's name names its folder of outputs (``output_destination/<name>/``): a name holding a /, an empty
one, ``.`` or ``..`` is refused wherever names enter (gridsub, gridsub -c, a work_generator's answer), and
the paths cigri builds from a job's words stay in their folder even for a job recorded before that check."""

from __future__ import annotations

import pytest

from cigri import jdl
from cigri.errors import JdlError
from cigri.model import EventCode

from .conftest import write_jdl
from .test_cli_errors import refuse
from .test_locality_cycle import generating

WHY = "a job's name names its folder of outputs"


@pytest.mark.parametrize(
    ("params", "where", "problem"),
    [
        (["ok 1", "../../escaped_rel 2"], "params[1]", "job name '../../escaped_rel' holds a /"),
        (["/tmp/abs 1"], "params[0]", "job name '/tmp/abs' holds a /"),
        (["sub/dir"], "params[0]", "job name 'sub/dir' holds a /"),
        (["'quoted/name' 1"], "params[0]", "job name 'quoted/name' holds a /"),
        ([".. 1"], "params[0]", "job name '..' is not a file name"),
        (["a", ". 1"], "params[1]", "job name '.' is not a file name"),
        (["'' 1"], "params[0]", "job name '' is empty"),
    ],
)
def test_gridsub_refuses_a_job_name_that_is_no_file_name(cli, tmp_path, params, where, problem):
    cli("gridstat")  # the state exists: nothing may change in it
    jdl_file = write_jdl(tmp_path, exec_file="/bin/true", params=params, output_file="out", output_destination="res")
    refuse(cli.state, ["gridsub", str(jdl_file)], 3, f"{where}: {problem}", WHY)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a 1\nb 2\n../../escaped_rel 3\n", 3),  # plain lines: the block-wise fast path
        ("a 1\n\n'x/y' 2\n", 3),  # a quote: line by line
        ("a 1\r\n/abs/x 2\r\n", 2),  # CRLF: line by line
        ("a\n..\n", 2),
    ],
)
def test_a_param_file_name_is_refused_naming_its_line_whatever_the_way_through(cli, tmp_path, text, line):
    cli("gridstat")
    (tmp_path / "params.txt").write_bytes(text.encode())
    jdl_file = write_jdl(tmp_path, exec_file="/bin/true", param_file=str(tmp_path / "params.txt"))
    refuse(cli.state, ["gridsub", str(jdl_file)], 3, f"param_file line {line}: job name", WHY)


def test_the_fast_path_refuses_such_names_in_any_block(tmp_path):
    (tmp_path / "p.txt").write_text("".join(f"j{i} {i}\n" for i in range(100)) + "j/100 100\n")
    parsed = jdl.parse({"name": "n", "exec_file": "x", "clusters": {"a": {}}, "param_file": str(tmp_path / "p.txt")})
    for size in (1, 7, 16_384):
        with pytest.raises(JdlError, match=r"^param_file line 101: job name 'j/100' holds a /"):
            list(jdl.job_blocks(parsed, size=size))


def test_gridsub_c_refuses_such_a_name_too(cli, tmp_path):
    campaign = cli.submit(write_jdl(tmp_path, exec_file="/bin/true", params=["a"]))
    refuse(cli.state, ["gridsub", "-c", str(campaign), "-J", '["b", "../c 1"]'], 3, "params[1]: job name '../c'", WHY)


GENERATOR = """\
print("fine-1 f2\\n../../escaped_rel f2")
"""


def test_a_work_generators_name_holding_a_slash_is_an_event_and_adds_nothing(tmp_path):
    """On test_locality_cycle's generating(): cluster b holds f2, which no job of the campaign reads."""
    grid, campaign_id = generating(tmp_path, "f2", GENERATOR)
    grid.at(0)
    assert sorted(grid.store.job_names(campaign_id)) == ["j0", "j1"]
    [event] = grid.store.events(campaign_id=campaign_id)
    assert event.code == EventCode.WORK_GENERATOR
    assert "params[1]: job name '../../escaped_rel' holds a /" in event.message, event.message


WRITER = """#!/bin/sh
echo "output of $1" > out.txt
"""


def test_outputs_of_jobs_named_before_the_check_stay_in_output_destination(cli, store, tmp_path):
    """A state written before names were checked may hold such jobs: their outputs are an OUTPUT_ERROR event
    each, and nothing is written outside output_destination."""
    writer = tmp_path / "writer.sh"
    writer.write_text(WRITER)
    writer.chmod(0o755)
    work, results = tmp_path / "work", tmp_path / "dest" / "results"
    work.mkdir()
    absolute = tmp_path / "abs_escape"
    campaign = cli.submit(
        write_jdl(
            tmp_path,
            exec_file=str(writer),
            exec_directory=str(work),
            params=["a", "b", "c"],
            output_file="out.txt",
            output_destination=str(results),
        )
    )
    with store.transaction():
        for job_id, name in ((1, "../../escaped_rel"), (2, str(absolute))):
            store.conn.execute("UPDATE jobs SET name = ?, params = ? WHERE id = ?", (name, name, job_id))
    cli.until_done(code=13)  # held by those events, whichever pass gathered them
    events = cli.json("gridevents", "-c", str(campaign))
    assert sorted((e["code"], e["job_id"]) for e in events) == [("OUTPUT_ERROR", 1), ("OUTPUT_ERROR", 2)]
    assert all("outside output_destination" in e["message"] for e in events), events
    assert not (tmp_path / "escaped_rel").exists() and not absolute.exists()
    assert [p.relative_to(results).as_posix() for p in results.rglob("*")] == ["c", "c/out.txt"]


@pytest.mark.parametrize("name", ["a/b", "", ".", ".."])
def test_check_job_name_refuses_what_is_no_file_name(name):
    with pytest.raises(JdlError, match=r"^params\[0\]: job name "):
        jdl.check_job_name(name, "params[0]")


@pytest.mark.parametrize("name", ["a", "-5", "...", "a..b", ".hidden", "é", "x\\y"])
def test_check_job_name_takes_any_other_name(name):
    jdl.check_job_name(name, "params[0]")


@pytest.mark.parametrize(
    ("folder", "name", "path"),
    [
        ("/dest", "a", "/dest/a"),
        ("/dest/", "a/b", "/dest/a/b"),
        ("/dest", "a/./b", "/dest/a/./b"),  # as written: the key a job's CIGRI_INPUT_DIR is joined with
        ("/dest", "a/../b", "/dest/a/../b"),
        ("/", "a", "/a"),
        ("/dest", "../x", None),
        ("/dest", "a/../../x", None),
        ("/dest", "/etc/passwd", None),
        ("/dest", "..", None),
        ("/dest", ".", None),
        ("/dest", "", None),
        ("/dest/x/..", "../y", None),
    ],
)
def test_under_keeps_a_name_in_its_folder(folder, name, path):
    assert jdl.under(folder, name) == path
