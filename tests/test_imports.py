"""The library's imports go one way (issue 20, the house): no two modules need each other, whether at the top of
a module or inside a function (an import put off until it is used hides a circle; it does not break it). The
one shape allowed is a package whose ``__init__`` names its own strategies (``cigri.scheduling``,
``cigri.flow``): the registry pattern, inside one package.

A command imports what it uses only: the ``grid`` command line loads a command's module when that command runs,
and the heavy third-party modules are loaded by the functions that need them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import cigri

ROOT = Path(cigri.__file__).parent


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The cigri modules ``name`` imports anywhere in its text (functions included, type-checking blocks too)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {module for module in found if module in known and module != name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while (member := stack.pop()) != node:
                group.append(member)
            group.append(node)
            if len(group) > 1:
                out.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return out


def test_no_circle_crosses_a_package():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    crossing = [group for group in circles(graph) if len({".".join(m.split(".")[:2]) for m in group}) > 1]
    assert crossing == []


def test_a_circle_through_a_deferred_import_is_found():
    graph = {
        "cigri.campaigns": {"cigri.cycle"},
        "cigri.cycle": {"cigri.cycle.ondemand"},
        "cigri.cycle.ondemand": {"cigri.campaigns"},
    }
    assert circles(graph) == [["cigri.campaigns", "cigri.cycle", "cigri.cycle.ondemand"]]


# What gridsub and gridstat must not pay for at start-up: the HTTP client (the REST adapters', notifications' and
# --server's) with what it loads when installed (rich and pygments, for httpx's own command line), mail, the
# service's web stack, plots, sqlite-utils (the store's inspection view), PyYAML (a JDL in JSON needs none).
HEAVY = ["httpx", "rich", "pygments", "smtplib", "starlette", "uvicorn", "matplotlib", "sqlite_utils", "yaml"]

# runs the grid commands of argv[1] in one interpreter; prints the command modules and heavy packages it then holds
LOADED = """
import json, sys
from cigri.cli import grid
commands, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for args in commands:
    assert not grid.main(args, prog_name="grid", standalone_mode=False), args  # its exit code
modules = {name.split(".")[0] if name.split(".")[0] in heavy else name for name in sys.modules}
print(json.dumps(sorted(name for name in modules if name in heavy or name.startswith("cigri.cli."))))
"""


def loaded(*commands: list[str]) -> set[str]:
    """The command modules and heavy packages a fresh interpreter holds once it has run ``commands``."""
    run = subprocess.run(
        [sys.executable, "-c", LOADED, json.dumps(commands), json.dumps(HEAVY)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout.splitlines()[-1]))


def test_gridsub_and_gridstat_import_only_what_they_use(tmp_path):
    state = ["--state", str(tmp_path / "state.db")]
    jdl = {"name": "t", "exec_file": "/bin/true", "clusters": {"local": {}}, "params": ["a"]}
    commands = [[*state, "gridsub", "-j", json.dumps(jdl)], [*state, "gridstat"], [*state, "gridstat", "-c", "1"]]
    assert loaded(*commands) == {
        "cigri.cli.app",
        "cigri.cli.campaign_cmds",
        "cigri.cli.completion",  # its options complete campaign ids
        "cigri.cli.output",
    }


def test_the_command_line_alone_imports_no_command():
    assert loaded() == {"cigri.cli.app"}
