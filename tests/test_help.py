"""Every command's --help shows how it is used: an ``Example:`` block with at least one line that runs it."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from cigri.cli import STANDALONE, grid


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


@pytest.mark.parametrize("path", _commands(grid), ids=lambda path: " ".join(("grid", *path)))
def test_every_grid_command_has_an_example(path):
    result = CliRunner().invoke(grid, [*path, "--help"])
    assert result.exit_code == 0, result.output
    _assert_example(result.output, path[-1] if path else "grid")


@pytest.mark.parametrize("name", sorted(STANDALONE))
def test_every_standalone_command_has_an_example(name):
    result = CliRunner().invoke(STANDALONE[name], ["--help"], prog_name=name)
    assert result.exit_code == 0, result.output
    _assert_example(result.output, name)


def _assert_example(text: str, name: str) -> None:
    assert "Example" in text, f"{name} --help has no Example block"
    block = text.split("Example", 1)[1].splitlines()[1:]
    lines = [line.strip() for line in block if line.strip()]
    assert lines, f"{name} --help: its Example block is empty"
    assert any(name in line for line in lines[:8]), f"{name} --help: no example line runs {name}"
