"""grid policy: what one strategy's core decision would be on a described situation."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from textwrap import indent

import click

from ..errors import ConfigError
from ..scheduling import evaluator, evaluators
from .app import GridCommand, common

_INTRO = """Print, as JSON, what policy NAME decides on the situation SCENARIO describes.

SCENARIO is a JSON file, or - to read standard input. A scenario that cannot be read, is not JSON or has
a bad field is refused with one line naming the field (exit 4); nothing else is printed.

\b
Example:
    echo '{"workers": 10, "classes": {"a": {"load_pct": 60, "running": 0, "waiting": 9},
           "b": {"load_pct": 40, "running": 0, "waiting": 9}}}' | grid policy classload -
    # prints {"start": {"a": 6, "b": 4}, "stop": {}}

The policies and their formats:"""


def _policy_help(name: str) -> str:
    """A policy's section of the help: its name, then its evaluator's docstring, line for line (each
    paragraph made a ``\\b`` block, so that click keeps the formats as written; ``\\b`` markers of the
    docstring's own are dropped)."""
    text = inspect.cleandoc(evaluator(name).__doc__ or "").replace("\b\n", "")
    first, *rest = text.split("\n\n")
    blocks = [f"{name}\n{indent(first, '    ')}", *(indent(paragraph, "    ") for paragraph in rest)]
    return "\n\n".join(f"\b\n{block}" for block in blocks)


def _read(source: str) -> object:
    """The scenario's JSON (NaN and infinities refused: they are no counts)."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text") from exc

    def refuse(constant: str):
        raise ConfigError(f"{source}: not JSON: {constant} is not a number")

    try:
        return json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc


@click.command("policy", cls=GridCommand, help="\n\n".join([_INTRO, *map(_policy_help, evaluators())]))
@click.argument("name")
@click.argument("scenario", type=click.Path(allow_dash=True))
@common
def policy(name: str, scenario: str) -> None:
    decide = evaluator(name)
    click.echo(json.dumps(decide(_read(scenario))))
