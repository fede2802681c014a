"""CiGri's own documented JDLs (jdl-examples/cigri/) run end to end on local clusters (issue 24, "done when"):
gridsub, then grid almighty --until-done, with a home of the test's own holding what the JDLs expect there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "jdl-examples" / "cigri"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The home the examples expect ({HOME}, $HOME and ~ for the submitter and the local clusters alike), a
    copy of jdl-examples/cigri/home/ in the test's folder."""
    folder = tmp_path / "home"
    shutil.copytree(EXAMPLES / "home", folder)
    for script in ("irods/povray/start.bash", "cigri-3/tmp/test1.sh"):
        (folder / script).chmod(0o755)
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _clusters(cli, *names: str) -> None:
    for name in names:
        cli("gridclusters", "add", name, "--adapter", "local", "--slots", "1", "--idle-exit", "2")


def test_cigris_documentation_example_runs(cli, home):
    _clusters(cli, "local2")
    cid = cli.submit(EXAMPLES / "example.json")
    cli.until_done(timeout=120)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", 6, 6)
    results = home / "irods" / "povray_results" / str(cid)
    frames = sorted(p.name for p in results.iterdir())
    assert frames == [f"frame_{i:02d}.png" for i in range(1, 7)]
    assert (results / "frame_03.png").read_text() == f"frame_03: frame 3 rendered in {home}/povray/{cid}\n"
    assert "irods" in (home / "modules-loaded").read_text().split()  # the prologue sourced env.bash: bash
    assert not (home / "povray").exists()  # the epilogue's rm -rf ~/povray


def test_cigris_readme_sample_runs(cli, home):
    _clusters(cli, "local2", "local3", "local4")
    cid = cli.submit(EXAMPLES / "readme-sample.json")
    cli.until_done(timeout=120)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["type"]) == ("terminated", 4, "test")  # one job per cluster
    assert len(list((home / "irods" / "povray_results" / str(cid)).glob("frame_*.png"))) == 4
    assert (home / "povray" / "start.bash").exists()  # fetched by iget into $HOME, the exec_directory


def test_cigris_test1_runs_its_jobs_where_the_prologue_did_not_fail(cli, home):
    _clusters(cli, "local2")
    cid = cli.submit(EXAMPLES / "test1.json")
    cli.until_done(timeout=300, code=13)  # blocked: the first cluster's prologue fails on purpose (exit 2)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["total"]) == (50, 50)
    assert {c["cluster"]: c["launched"] for c in row["clusters"]} == {"local": 0, "local2": 50}
    [event] = cli.json("gridevents", "-c", str(cid))
    assert (event["code"], event["cluster"]) == ("PROLOGUE_ERROR", "local")
    assert (home / "param7").read_text() == "7\n" and (home / "workdir" / "prologue_works").exists()
    cli("gridevents", "-c", str(cid), "-f")
    cli.until_done(timeout=120)
    assert cli.json("gridstat", "-c", str(cid))["state"] == "terminated"
    assert (home / "workdir" / "epilogue_works").exists()
    assert not (home / "workdir" / "epilogue_tchernobyl_works").exists()  # no job ran there
