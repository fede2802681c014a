"""Rendering: rich tables on a terminal, plain aligned text when piped, JSON on request; secrets masked in
each (:mod:`cigri.secrets`). A table row and a ``key: value`` pair stay one line: a line break in a value (an
event's message with a job's stderr, a reason given on two lines) is shown as the two characters ``\\n``,
trailing ones dropped (JSON keeps the value as it is)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime

import click

from ..model import CampaignState
from ..secrets import mask, mask_text


def is_tty() -> bool:
    return sys.stdout.isatty()


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "-"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = round(seconds)
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}d {text}" if days else text


def campaign_state(state: CampaignState, open_events: int = 0) -> str:
    """A campaign's state as every command shows it: CiGri's name (in_treatment, paused, terminated,
    cancelled), with the open events counted when there are some (CiGri's 'e' flag)."""
    return state.value + (f" ({open_events} open events)" if open_events else "")


def emit_json(data) -> None:
    click.echo(json.dumps(mask(data), indent=2, default=str))


def one_line(text: str) -> str:
    """``text`` on one line: trailing line breaks dropped, the others (CR LF, LF, CR) shown as ``\\n``."""
    return text.rstrip("\r\n").replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")


def table(columns: Sequence[str], rows: Iterable[Sequence], *, headers: bool = True, title: str | None = None) -> None:
    rows = [[("" if v is None else one_line(mask_text(str(v)))) for v in row] for row in rows]
    if is_tty():
        from rich.console import Console
        from rich.table import Table

        t = Table(title=title, show_header=headers, header_style="bold")
        for column in columns:
            t.add_column(column, overflow="fold")
        for row in rows:
            t.add_row(*row)
        Console().print(t)
        return
    if title:
        click.echo(title)
    widths = [len(c) if headers else 0 for c in columns]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=False)]
    if headers:
        click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=False)).rstrip())
    for row in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=False)).rstrip())


def pairs(items: Sequence[tuple[str, object]]) -> None:
    width = max(len(k) for k, _ in items)
    for key, value in items:
        click.echo(f"{key + ':':<{width + 1}} {'-' if value is None else one_line(mask_text(str(value)))}")
