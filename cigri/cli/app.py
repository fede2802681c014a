"""What every command shares: the state file, logging, and the one place where errors become exit codes."""

from __future__ import annotations

import logging
import logging.handlers
import os
import sqlite3
from functools import cached_property
from pathlib import Path

import click

from ..clock import RealClock
from ..errors import CigriError, StoreError
from ..private import open_private
from ..secrets import mask_text

SQLITE_MAX_INT = 2**63 - 1


class App:
    """Built once per invocation; opens the state file on first use."""

    def __init__(self):
        self.state_path: Path | None = None
        self.config_path: Path | None = None  # --config (else $CIGRI_CONFIG, else cigri.yaml beside the state)
        self.trust_owner: str | None = None  # --trust-owner: another user's state, run on purpose (cigri.owner)
        self.layers = None  # the configuration file's and the environment's keys, once the store is open
        self.verbose = 0
        self.clock = RealClock()
        self.server: str | None = None  # --server / $CIGRI_SERVER: the commands ask grid serve, not the state file

    @cached_property
    def source(self):
        """What gridsub, gridstat, griddel, gridevents, gridclusters and gridnotify ask: the state file
        (:class:`cigri.views.Local`), or the service named by ``--server`` (:class:`cigri.client.Remote`)."""
        if self.server is None:
            from ..views import Local

            return Local(self.store, self.clock)
        local = [name for name, given in (("--state", self.state_path), ("--config", self.config_path)) if given]
        if self.trust_owner is not None:
            local.append("--trust-owner")
        if local:
            raise click.UsageError(f"{local[0]} names this machine's state, --server a service: give one of them")
        from .. import client

        connection = client.connect(self.server)
        click.get_current_context().find_root().call_on_close(connection.close)
        return client.Remote(connection)

    def through_service(self, what: str) -> None:
        """Refuse ``what`` (an option, or a command) when the commands speak to a service: it works on the state
        file only."""
        if self.server is not None:
            raise click.UsageError(f"{what} works on the state file, not through --server {self.server}")

    @cached_property
    def bare_store(self):
        """The state without the configuration file's keys (``grid config check`` reads a broken file)."""
        from ..clusters import ensure_default
        from ..store import Store, default_state_path

        store = Store(self.state_path or default_state_path(), trust_owner=self.trust_owner)
        ensure_default(store, self.clock)
        return store

    @cached_property
    def store(self):
        """The state, its configuration overridden by the file's and the environment's keys."""
        from .. import configfile

        store = self.bare_store
        self.layers = self.load_config(store)
        configfile.attach(store, self.layers)
        return store

    def load_config(self, store, path: Path | None = None):
        """The configuration file's (``path``, else the one in use) and the environment's keys, checked."""
        from .. import configfile

        if path is None:
            path, required = configfile.path_for(store.directory, self.config_path, os.environ)
        else:
            required = True
        return configfile.load(store, path, required, os.environ, self.trust_owner)

    def setup_logging(self, *, to_file: bool = False) -> None:
        level = logging.WARNING - 10 * min(self.verbose, 2)
        root = logging.getLogger("cigri")
        root.setLevel(logging.DEBUG)
        for old in [h for h in root.handlers if getattr(h, "cigri_cli", False)]:  # an earlier command, same process
            root.removeHandler(old)
            old.close()
        console = logging.StreamHandler()
        console.setLevel(level)
        console.setFormatter(Masking("%(name)s: %(message)s"))
        console.cigri_cli = True
        root.addHandler(console)
        if to_file:
            log_file = self.store.directory / "almighty.log"
            handler = PrivateLog(log_file, maxBytes=5_000_000, backupCount=3)
            handler.setLevel(logging.INFO)
            handler.setFormatter(Masking("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
            handler.cigri_cli = True
            root.addHandler(handler)


class Masking(logging.Formatter):
    """A log line with its secrets masked (:mod:`cigri.secrets`), tracebacks included."""

    def format(self, record: logging.LogRecord) -> str:
        return mask_text(super().format(record))


class PrivateLog(logging.handlers.RotatingFileHandler):
    """The almighty's log, 0600 whatever the umask (it names users, campaigns and clusters); rotation
    renames it, so the old ones stay 0600 too."""

    def _open(self):
        return open(open_private(Path(self.baseFilename), os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a")


def app() -> App:
    ctx = click.get_current_context()
    return ctx.find_root().ensure_object(App)


class IdType(click.ParamType):
    """A campaign, job or event id: a whole number SQLite can hold (a larger one would crash the query)."""

    name = "id"

    def convert(self, value, param, ctx):
        try:
            number = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not an id (a whole number)", param, ctx)
        if not 1 <= number <= SQLITE_MAX_INT:
            self.fail(f"{value!r} is out of range for an id (1 to {SQLITE_MAX_INT})", param, ctx)
        return number


ID = IdType()


def _set_state(ctx: click.Context, _param, value):
    if value is not None:  # through ctx: completion parses without a current context
        ctx.find_root().ensure_object(App).state_path = Path(value).expanduser()
    return value


def _set_config(ctx: click.Context, _param, value):
    if value is not None:
        app().config_path = Path(value).expanduser()
    return value


def _set_trust_owner(ctx: click.Context, _param, value):
    if value is not None:
        app().trust_owner = value
    return value


def _set_verbose(ctx: click.Context, _param, value):
    if value:
        app().verbose += value
    return value


def policy_option(command):
    """``--policy``: the metascheduler strategy of every cluster for this run, by its registered name (None:
    the configured ones, see ``grid config``)."""
    from ..scheduling import registry

    return click.option(
        "--policy",
        type=click.Choice(sorted(registry())),
        default=None,
        help="Metascheduler strategy of every cluster for this run (default: the configured ones, see grid config).",
    )(command)


def flow_option(command):
    """``--flow``: the flow strategy of every cluster for this run, by its registered name (None: the
    configured ones, see ``grid config``)."""
    from ..flow import registry

    return click.option(
        "--flow",
        type=click.Choice(sorted(registry())),
        default=None,
        help="Flow strategy sizing every cluster's queue for this run, with its configured options "
        "(default: the configured ones, see grid config).",
    )(command)


def _set_server(ctx: click.Context, param: click.Parameter, value):
    if value:  # an empty $CIGRI_SERVER is none
        from ..client import check_server

        try:
            check_server(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        ctx.find_root().ensure_object(App).server = value
    return value


def server_option(command):
    """``--server``: the commands CiGri's users run (gridsub, gridstat, griddel, gridevents, gridclusters,
    gridnotify) ask a ``grid serve`` service instead of opening the state file."""
    return click.option(
        "--server",
        metavar="URL|unix:PATH",
        envvar="CIGRI_SERVER",
        expose_value=False,
        callback=_set_server,
        is_eager=True,
        help="Ask the grid serve service at this URL (behind its proxy) or Unix socket, not the state file "
        "[env CIGRI_SERVER].",
    )(command)


def _print_version(ctx: click.Context, _param, value):
    """``--version``: the command as it was called (``gridstat`` or ``grid gridstat``) and cigri's version."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    click.echo(f"{ctx.command_path}, version {version('cigri')}")
    ctx.exit()


def common(command):
    """``--state``, ``--config``, ``--trust-owner``, ``-v`` and ``--version`` on every command, so that
    standalone gridsub etc. take them too."""
    command = click.option(
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_print_version,
        help="Show cigri's version and exit.",
    )(command)
    command = click.option(
        "--state",
        type=click.Path(),  # a directory or unwritable path is the store's StoreError (exit 7), not a usage error
        # no envvar here: $CIGRI_STATE is read by default_state_path(), so that it never overrides the group's --state
        expose_value=False,
        callback=_set_state,
        is_eager=True,
        help="State file [env CIGRI_STATE; default ~/.local/share/cigri/state.db].",
    )(command)
    command = click.option(
        "--config",
        type=click.Path(dir_okay=False),
        expose_value=False,
        callback=_set_config,
        is_eager=True,
        help="Configuration file [env CIGRI_CONFIG; default cigri.yaml beside the state file].",
    )(command)
    command = click.option(
        "--trust-owner",
        metavar="USER",
        expose_value=False,
        callback=_set_trust_owner,
        is_eager=True,
        help="Open a state file (and its cigri.yaml) that USER owns: their clusters' commands and programs then "
        "run with your rights. Without it, a state another user owns is refused (exit 6).",
    )(command)
    return click.option(
        "-v", "--verbose", count=True, expose_value=False, callback=_set_verbose, help="Say more (repeat for debug)."
    )(command)


def _fail(exc: CigriError, ctx: click.Context) -> None:
    click.echo(f"{ctx.command_path}: error: {mask_text(str(exc))}", err=True)
    ctx.exit(exc.exit_code)


def _usage_error(exc: click.UsageError, command_path: str = "") -> None:
    """Click's usage errors as one line too (click itself prints usage, a hint and the error)."""
    if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        raise exc  # `grid` alone shows the help
    path = exc.ctx.command_path if exc.ctx else command_path
    click.echo(f"{path}: error: {mask_text(exc.format_message().rstrip('.'))} (see {path} --help)", err=True)
    raise click.exceptions.Exit(exc.exit_code)


class _OneLineErrors:
    """Turns cigri's errors and click's usage errors into one line on stderr and the error's exit code."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:  # the parser's errors may come without a context
            _usage_error(exc, f"{parent.command_path} {info_name}" if parent else info_name)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            _usage_error(exc)
        except CigriError as exc:
            _fail(exc, ctx)
        except sqlite3.Error as exc:
            _fail(StoreError(f"state file: {exc}"), ctx)


class GridCommand(_OneLineErrors, click.Command):
    pass


class GridGroup(_OneLineErrors, click.Group):
    command_class = GridCommand


GridGroup.group_class = GridGroup
