"""The JDL loader's limits (cigri.jdl's MAX_DEPTH and MAX_VALUES): a tiny YAML whose aliases expand to
hundreds of millions of values, or a JSON nested hundreds deep, is refused at once in one line, not after
minutes of CPU or with a RecursionError. The command runs in a process of its own, so that a loader without
limits fails the test by its timeout instead of holding the test run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from cigri import jdl
from cigri.errors import JdlError
from cigri.store import Store

from .test_cli_errors import GOOD, dump

SECONDS = 20  # far above what the limits take (milliseconds), far below the minutes a bomb takes without them


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The issue's bomb: each level a list of ``width`` aliases of the one before, the last one holding
    ``width ** levels`` strings once expanded (9 of 9: 387 million, from about 550 bytes). Its keys are no
    JDL's: the limits are met before any key is read."""
    lines = [f"l0: &l0 [{', '.join(['x'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def deep_json(depth: int) -> str:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return json.dumps({**GOOD, "prologue": value})


def gridsub(state: Path, jdl_file: Path) -> subprocess.CompletedProcess:
    grid = Path(sys.executable).with_name("grid")  # the installed command, as a user runs it
    argv = [str(grid), "--state", str(state), "gridsub", "-t", "test", str(jdl_file)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=SECONDS)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (alias_bomb(), f"l6: holds more than {jdl.MAX_VALUES:,} values".replace(",", " ")),
        (deep_json(900), f"more than {jdl.MAX_DEPTH} deep"),
    ],
    ids=["yaml_alias_bomb", "json_900_deep"],
)
def test_gridsub_refuses_a_jdl_beyond_the_limits_at_once_in_one_line(tmp_path, text, fragment):
    state = tmp_path / "state.db"
    Store(state).close()
    before = dump(state)
    jdl_file = tmp_path / "bomb.yaml"
    jdl_file.write_text(text)
    done = gridsub(state, jdl_file)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("grid gridsub: error: ") and fragment in line, line
    assert dump(state) == before


def test_the_limits_hold_for_a_mapping_given_to_parse_and_for_json_text():
    """In this process: a smaller bomb (4.8 million values), which a loader without limits walks in seconds."""
    started = time.monotonic()
    with pytest.raises(JdlError, match="values"):
        jdl.parse(yaml.safe_load(alias_bomb(levels=7)))
    with pytest.raises(JdlError, match="deep"):
        jdl.parse(jdl.load_text(deep_json(900)))
    assert time.monotonic() - started < SECONDS


def test_a_recursive_yaml_alias_is_refused_as_too_deep():
    """YAML lets an anchor hold an alias of itself: a list inside itself, endlessly."""
    data = jdl.load_text("name: x\nexec_file: a\nclusters: {local: {}}\nparams: [a]\nprologue: &p [a, *p]\n")
    with pytest.raises(JdlError, match=r"^prologue(\[1\])+: nests lists or mappings more than"):
        jdl.parse(data)


def test_a_jdl_at_the_limits_is_still_accepted():
    """Shared settings through YAML anchors stay usable, as do a deep-enough nesting and a long params list."""
    text = "name: x\nexec_file: /bin/true\nenvironment: &env {A: '1'}\nclusters: {a: {environment: *env}, b: {}}\n"
    data = jdl.load_text(text)
    data["params"] = [f"j{i}" for i in range(jdl.MAX_VALUES // 2)]
    parsed = jdl.parse(data)
    assert parsed.clusters["a"]["environment"] == {"A": "1"} == parsed.clusters["b"]["environment"]
    value: object = "x"
    for _ in range(jdl.MAX_DEPTH - 1):  # in the JDL's mapping (depth 1), the innermost list is at MAX_DEPTH
        value = [value]
    with pytest.raises(JdlError, match=r"prologue: expected a list of shell lines"):  # its own error, not a limit
        jdl.parse({**GOOD, "prologue": value})
