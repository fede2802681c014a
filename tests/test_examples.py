"""jdl-examples/: the valid ones run for real on local clusters, the invalid ones give their error."""

from __future__ import annotations

from pathlib import Path

import pytest

from cigri.cli import grid

EXAMPLES = Path(__file__).parent.parent / "jdl-examples"
INVALID = sorted(p for p in (EXAMPLES / "invalid").iterdir() if p.suffix in (".yaml", ".json"))


def test_every_invalid_example_has_its_expected_error():
    assert INVALID and all(p.with_suffix(".error").exists() for p in INVALID)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_example_is_refused_with_its_error(cli, path):
    expected = path.with_suffix(".error").read_text().strip().replace("{DIR}", str(path.parent))
    result = cli.runner.invoke(grid, ["--state", str(cli.state), "gridsub", str(path)])
    assert result.exit_code == 3
    assert result.stderr.strip() == f"grid gridsub: error: {expected}"
    assert "Traceback" not in result.output
    assert cli.json("gridstat") == []


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_sweep_example_runs_on_the_local_cluster(cli, home):
    cid = cli.submit(EXAMPLES / "sweep.yaml")
    cli.until_done(timeout=120)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", 60, 60)
    out = home / "cigri-sweep" / str(cid)
    assert len(list(out.glob("p*.txt"))) == 60
    results = (out / "all-results.txt").read_text().splitlines()  # written by the epilogue
    assert len(results) == 60 and results[0].startswith("p10_1 a=10 b=1 result=")


def test_two_cluster_example_uses_both_clusters(cli, home):
    cli("gridclusters", "add", "annex", "--adapter", "local", "--slots", "1", "--idle-exit", "2")
    cid = cli.submit(EXAMPLES / "two-clusters.json")
    cli.until_done(timeout=120)
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"]) == ("terminated", 60)
    sent = {c["cluster"]: c["launched"] for c in row["clusters"]}
    assert sent["local"] > 0 and sent["annex"] > 0 and sent["local"] + sent["annex"] == 60


def test_files_example_stages_reads_gathers_and_cleans(cli, home):
    cid = cli.submit(EXAMPLES / "files.yaml")
    cli.until_done(timeout=120)
    assert cli.json("gridstat", "-c", str(cid))["done"] == 4
    counts = {p.parent.name: p.read_text().split() for p in (home / "cigri-files" / "results").glob("*/count_*.txt")}
    assert counts == {"a": ["a", "44"], "b": ["b", "44"], "c": ["c", "44"], "d": ["d", "44"]}  # 41 + 3 lines
    assert [p for p in (home / ".cigri" / "cache").rglob("*") if p.is_file()] == []
