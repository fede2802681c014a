"""The README's test command is what CI runs, and its first command names things that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert commands()[1] == ci


def test_the_first_command_runs_a_shipped_example():
    first = commands()[0]
    jdl = re.search(r"gridsub (\S+)", first).group(1)
    assert (ROOT / jdl).is_file()
    assert "grid almighty --until-done" in first
