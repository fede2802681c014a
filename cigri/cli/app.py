"""What every command shares: the state file, logging, and the one place where errors become exit codes."""

from __future__ import annotations

import logging
import logging.handlers
import sqlite3
from functools import cached_property
from pathlib import Path

import click

from ..clock import RealClock
from ..errors import CigriError, StoreError


class App:
    """Built once per invocation; opens the state file on first use."""

    def __init__(self):
        self.state_path: Path | None = None
        self.verbose = 0
        self.clock = RealClock()

    @cached_property
    def store(self):
        from ..clusters import ensure_default
        from ..store import Store, default_state_path

        store = Store(self.state_path or default_state_path())
        ensure_default(store, self.clock)
        return store

    def setup_logging(self, *, to_file: bool = False) -> None:
        level = logging.WARNING - 10 * min(self.verbose, 2)
        root = logging.getLogger("cigri")
        root.setLevel(logging.DEBUG)
        console = logging.StreamHandler()
        console.setLevel(level)
        console.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        root.addHandler(console)
        if to_file:
            log_file = self.store.directory / "almighty.log"
            handler = logging.handlers.RotatingFileHandler(log_file, maxBytes=5_000_000, backupCount=3)
            handler.setLevel(logging.INFO)
            handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
            root.addHandler(handler)


def app() -> App:
    ctx = click.get_current_context()
    return ctx.find_root().ensure_object(App)


def _set_state(ctx: click.Context, _param, value):
    if value is not None:
        app().state_path = Path(value).expanduser()
    return value


def _set_verbose(ctx: click.Context, _param, value):
    if value:
        app().verbose += value
    return value


def common(command):
    """``--state`` and ``-v`` on every command, so that standalone gridsub etc. take them too."""
    command = click.option(
        "--state",
        type=click.Path(dir_okay=False),
        envvar="CIGRI_STATE",
        expose_value=False,
        callback=_set_state,
        is_eager=True,
        help="State file [env CIGRI_STATE; default ~/.local/share/cigri/state.db].",
    )(command)
    return click.option(
        "-v", "--verbose", count=True, expose_value=False, callback=_set_verbose, help="Say more (repeat for debug)."
    )(command)


def _fail(exc: CigriError, ctx: click.Context) -> None:
    click.echo(f"{ctx.command_path}: error: {exc}", err=True)
    ctx.exit(exc.exit_code)


class GridCommand(click.Command):
    """Converts cigri's errors into one line on stderr and the error's exit code."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CigriError as exc:
            _fail(exc, ctx)
        except sqlite3.Error as exc:
            _fail(StoreError(f"state file: {exc}"), ctx)


class GridGroup(click.Group):
    command_class = GridCommand

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CigriError as exc:
            _fail(exc, ctx)
        except sqlite3.Error as exc:
            _fail(StoreError(f"state file: {exc}"), ctx)


GridGroup.group_class = GridGroup
