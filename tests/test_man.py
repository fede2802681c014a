"""The pages in man/ are what ``python -m cigri.cli.manpage man/`` writes from the click commands and the JDL's
key table; every page renders without a warning; the package installs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from cigri import jdl, jdl_keys
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


def test_every_command_and_script_has_a_full_page(tmp_path):
    generated = _generate(tmp_path)
    assert {f"grid-{name}.1" for name in grid.commands} | {"grid.1", "cigri-jdl.5"} <= set(generated)
    for name in STANDALONE:
        page = generated[f"{name}.1"]
        assert not page.startswith(".so"), name  # man -l cannot follow a link
        assert f".TH {name.upper()} 1" in page and f".B {name}\n" in page
        assert ".SH OPTIONS" in page and "\\fB\\-\\-state\\fR" in page
    assert '.SS "gridclusters add"' in generated["gridclusters.1"]


@pytest.mark.skipif(
    shutil.which("groff") is None and not os.environ.get("CI"),  # .ci/run installs it: in CI a missing groff fails
    reason="needs groff (man's formatter)",
)
def test_every_page_renders_without_warnings():
    for page in sorted(MAN.iterdir()):
        run = subprocess.run(["groff", "-man", "-ww", "-z", str(page)], capture_output=True, text=True, check=False)
        assert run.returncode == 0 and run.stderr == "", f"{page.name}: {run.stderr}"
    text = subprocess.run(
        ["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=80n", str(MAN / "gridsub.1")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "gridsub [OPTIONS] [JDL_FILE]" in text and "--dry-run" in text and "EXIT STATUS" in text


def test_the_jdl_key_table_is_what_the_parser_accepts():
    documented = {key.name: key for key in jdl_keys.KEYS}
    assert len(documented) == len(jdl_keys.KEYS), "a key documented twice"
    accepted = set(jdl.GLOBAL_ONLY) | set(jdl.CLUSTER_DEFAULTS)
    assert set(documented) - accepted == set(), "documented keys jdl.py does not accept"
    assert accepted - set(documented) == set(), "keys jdl.py accepts with no row in cigri/jdl_keys.py"
    for name, key in documented.items():
        assert key.per_cluster == (name in jdl.CLUSTER_DEFAULTS), name
        assert key.description.endswith(".") and key.type, name
        default = jdl.CLUSTER_DEFAULTS.get(name)
        if default is not None:
            spelled = json.dumps(default) if isinstance(default, (bool, list, dict)) else str(default)
            assert key.default == spelled, name


def test_the_jdl_page_documents_every_key_and_its_example_parses(tmp_path):
    page = _generate(tmp_path)["cigri-jdl.5"]
    for key in jdl_keys.KEYS:
        assert f".TP\n\\fB{key.name}\\fR (" in page, key.name
    example = page.split(".SH EXAMPLE")[1].split(".nf\n")[1].split("\n.fi")[0].replace("\\-", "-")
    parsed = jdl.parse(yaml.safe_load(example))
    assert parsed.name == "sweep" and set(parsed.clusters) == {"luke", "dahu"}


def test_the_package_installs_every_page_into_share_man():
    data_files = tomllib.loads((MAN.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    installed = set()
    for target, patterns in data_files.items():
        for pattern in patterns:
            for page in MAN.parent.glob(pattern):
                assert re.fullmatch(rf"share/man/man{page.suffix[1:]}", target), (target, page.name)
                installed.add(page.name)
    assert installed == {page.name for page in MAN.iterdir()}


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
