"""The state file. This package is the only code that writes SQL.

One SQLite file per user (WAL, busy timeout, mode 0600), opened through sqlite-utils and migrated on
open. Writes go through :meth:`Store.transaction` (``BEGIN IMMEDIATE``: a writer waits for the lock
instead of failing half-way). Hot paths use the connection directly with ``executemany`` and indexes
chosen so that a pass touches the rows it works on, not the whole table.

:class:`Store` is the one entry point: this module opens the file (connection, transaction, ``_one``); the
queries live in mixins, one module an aggregate, each owning its SQL:

- :mod:`.campaigns`: campaigns, their clusters (settings, prologue/epilogue progress), figures on their row
- :mod:`.jobs`: jobs: submission, the metascheduler's picks, their run, ends and failures, admission counts
- :mod:`.states`: what a change of jobs' states keeps up to date (job counts, files' counts, outputs due),
  for the mixins that change states (jobs, batches, replicas)
- :mod:`.batches`: batches (a pass's submissions) and their pack layout
- :mod:`.controls`: take-backs, kills (nikita), holds, stops, and orphan copies to cancel
- :mod:`.events`: events and blacklists
- :mod:`.blackholes`: black-hole streaks (:mod:`cigri.cycle.blackhole`)
- :mod:`.clusters`: clusters, removed clusters, their flow of jobs and capacity readings
- :mod:`.usage`: Spritz's figures (stats), the forecast history, users' decayed usage
- :mod:`.settings`: configuration keys in the state, the strategies' state
- :mod:`.notifications`: gridnotify's subscriptions, marks and outbox
- :mod:`.replicas`: replicas (finalize)
- :mod:`.integrity`: the reads of ``grid admin check``
- :mod:`.files`: input files, the jobs using them, the clusters' caches; gathered outputs
- :mod:`.picking`: the reads of the job pickers and of on-demand work
- :mod:`.service`: ``grid serve``'s pages of jobs and events, and a campaign's new name
- :mod:`.migrations`: the schema; :mod:`._sql`: helpers shared by the mixins (``CHUNK``, ``_chunks``, ``_marks``)
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
from collections.abc import Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path

from ..errors import NotFound, StoreError
from ..owner import check_state
from ..private import open_private, private_dir
from . import migrations
from .batches import Batches
from .blackholes import BlackHoles
from .campaigns import Campaigns
from .clusters import Clusters
from .controls import Controls
from .events import Events
from .files import Files
from .integrity import Integrity
from .jobs import Jobs
from .notifications import Notifications
from .picking import Picking
from .replicas import Replicas
from .service import Service
from .settings import Settings
from .usage import Usage

# prepared statements the connection keeps: a pass runs well over a thousand distinct ones (the batched
# writes' texts differ with their row counts), and Python's default 128 re-prepared most of them every pass
CACHED_STATEMENTS = 4096


_MEMDB = itertools.count(1)


def _memdb_uri() -> str:
    """A new database of SQLite's memdb VFS, named for this Store alone (a name is shared by the process's
    connections that open it; the database goes with the last one closed). Not the legacy ``:memory:``:
    that one keeps every page of the database dirty, and each commit walks them all: the commit of the same
    60 changed rows cost 40 times more in an indexed table of 2M rows than in one of 100,000."""
    return f"file:/cigri-{os.getpid()}-{next(_MEMDB)}?vfs=memdb"


def default_state_path() -> Path:
    env = os.environ.get("CIGRI_STATE")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "cigri" / "state.db"


class Store(
    Campaigns,
    Jobs,
    Batches,
    Controls,
    Events,
    BlackHoles,
    Clusters,
    Usage,
    Settings,
    Notifications,
    Replicas,
    Integrity,
    Files,
    Picking,
    Service,
):
    def __init__(
        self, path: str | os.PathLike, *, clock_now=None, readonly: bool = False, trust_owner: str | None = None
    ):
        """Open (creating it when missing) and migrate the state file; ``readonly`` opens an existing one as
        it is, for reading only (``grid admin check``). A state another user owns (or may replace) is refused
        unless ``trust_owner`` names its owner (:mod:`cigri.owner`)."""
        self.path = Path(path)
        self.memory = str(path) == ":memory:"
        if not self.memory:
            check_state(self.path, trust_owner)
        try:
            if readonly:
                conn = self._open_readonly()
            else:
                if not self.memory:
                    self._create_file()
                conn = sqlite3.connect(
                    _memdb_uri() if self.memory else str(self.path),
                    isolation_level=None,
                    timeout=30,
                    check_same_thread=False,
                    cached_statements=CACHED_STATEMENTS,
                    uri=self.memory,
                )
            conn.execute("PRAGMA busy_timeout = 30000")
            if self.memory:
                conn.execute("PRAGMA journal_mode = MEMORY")  # rolled back as the legacy :memory: was
            if not self.memory and not readonly:
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self.conn = conn
            self.applied = [] if readonly else migrations.apply(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open state file {self.path}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot create state file {self.path}: {exc.strerror}") from exc
        self._depth = 0
        self._jdls: dict[int, tuple[str, dict]] = {}  # the campaigns' parsed JDLs (Campaigns._jdl)
        self.overrides: dict[str, object] = {}  # the configuration file's and environment's keys (cigri.configfile)
        self.origins: dict[str, str] = {}  # where each of them comes from: the file's path or the variable

    def _open_readonly(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise NotFound(f"no state file {self.path}")
        uri = self.path.resolve().as_uri() + "?mode=ro"
        return sqlite3.connect(
            uri,
            uri=True,
            isolation_level=None,
            timeout=30,
            check_same_thread=False,
            cached_statements=CACHED_STATEMENTS,
        )

    @cached_property
    def db(self):
        """The state through sqlite-utils, for inspection (tests, benchmarks, a user's own scripts). Imported
        on first use: the import alone (with numpy, which it loads when installed) costs more than a gridstat."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    @property
    def instance(self) -> str:
        return self._one("SELECT value FROM meta WHERE key = 'instance'")[0]

    def _create_file(self) -> None:
        """Create a new state file 0600 (in a private folder when cigri makes it). An existing one is only made
        0600 by its path: closing any descriptor of it would drop the POSIX locks this process's other
        connections hold on it (SQLite's), and another process closing its last connection would then believe
        it the last user and delete the WAL index under them."""
        if self.path.exists():
            if self.path.stat().st_mode & 0o077:
                with contextlib.suppress(PermissionError):  # a state someone else owns: theirs to mend
                    self.path.chmod(0o600)
            return
        if not self.path.parent.exists():  # a folder cigri makes is private; one the user chose stays theirs
            private_dir(self.path.parent)
        with contextlib.suppress(FileExistsError):
            os.close(open_private(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR))

    @property
    def directory(self) -> Path:
        """Where per-state files live (local clusters' spools, logs, the almighty lock)."""
        if self.memory:
            raise StoreError("an in-memory state has no directory")
        return self.path.parent

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self):
        """A write transaction; nested calls join the outer one."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self.conn.execute("ROLLBACK")
            raise
        self._depth = 0
        self.conn.execute("COMMIT")

    def _one(self, sql: str, params: Sequence = ()) -> tuple | None:
        return self.conn.execute(sql, params).fetchone()
