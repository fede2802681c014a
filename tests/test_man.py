"""The pages in man/ are what ``python -m cigri.cli.manpage man/`` writes from the click commands."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cigri.cli import STANDALONE, grid
from cigri.cli.manpage import main

MAN = Path(__file__).resolve().parent.parent / "man"
REGENERATE = "stale man pages: regenerate them with `python -m cigri.cli.manpage man/`"


def _generate(directory: Path) -> dict[str, str]:
    result = CliRunner().invoke(main, [str(directory)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {path.name: path.read_text(encoding="utf-8") for path in directory.iterdir()}


def test_man_pages_are_up_to_date(tmp_path):
    generated = _generate(tmp_path)
    committed = {path.name: path.read_text(encoding="utf-8") for path in MAN.glob("*")}
    assert sorted(committed) == sorted(generated), REGENERATE
    stale = [name for name in generated if committed[name] != generated[name]]
    assert not stale, f"{REGENERATE} ({', '.join(stale)})"


def test_every_command_has_a_page_and_every_script_a_link(tmp_path):
    generated = _generate(tmp_path)
    assert {f"grid-{name}.1" for name in grid.commands} | {"grid.1"} <= set(generated)
    for name in STANDALONE:
        assert generated[f"{name}.1"] == f".so man1/grid-{name}.1\n"


def test_pages_carry_the_help_options_exit_codes_and_subcommands(tmp_path):
    generated = _generate(tmp_path)
    gridsub = generated["grid-gridsub.1"]
    assert ".SH DESCRIPTION" in gridsub and "gridsub jdl\\-examples/sweep.yaml" in gridsub
    assert "\\fB\\-\\-dry\\-run\\fR" in gridsub
    assert ".B 3\nJdlError:" in gridsub and ".B 2\n" in gridsub
    assert '.SS "grid gridclusters add"' in generated["grid-gridclusters.1"]
    assert "\\fB\\-\\-slots\\fR" in generated["grid-gridclusters.1"]
    assert ".BR grid\\-gridsub (1)" in generated["grid.1"]


def test_generation_is_deterministic(tmp_path):
    assert _generate(tmp_path / "a") == _generate(tmp_path / "b")


def test_check_lists_missing_stale_and_extra_pages(tmp_path):
    _generate(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, [str(tmp_path), "--check"], catch_exceptions=False).exit_code == 0

    (tmp_path / "grid-gridstat.1").write_text("old\n")
    (tmp_path / "grid-griddel.1").unlink()
    (tmp_path / "grid-gone.1").write_text("extra\n")
    result = runner.invoke(main, [str(tmp_path), "--check"], catch_exceptions=False)
    assert result.exit_code == 1
    assert "grid-gridstat.1: stale" in result.stderr
    assert "grid-griddel.1: missing" in result.stderr
    assert "grid-gone.1: extra" in result.stderr
    assert (tmp_path / "grid-gridstat.1").read_text() == "old\n"  # --check writes nothing

    _generate(tmp_path)
    assert not (tmp_path / "grid-gone.1").exists()
    assert runner.invoke(main, [str(tmp_path), "--check"], catch_exceptions=False).exit_code == 0
