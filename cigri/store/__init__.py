"""The state file. This package is the only code that writes SQL.

One SQLite file per user (WAL, busy timeout, mode 0600), opened through sqlite-utils and migrated on
open. Writes go through :meth:`Store.transaction` (``BEGIN IMMEDIATE``: a writer waits for the lock
instead of failing half-way). Hot paths use the connection directly with ``executemany`` and indexes
chosen so that a pass touches the rows it works on, not the whole table.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property, lru_cache
from itertools import chain
from pathlib import Path

from ..errors import NotFound, StoreError
from ..model import (
    Campaign,
    CampaignState,
    CampaignType,
    Capacity,
    Cluster,
    Event,
    EventClass,
    EventCode,
    EventState,
    Job,
    JobState,
)
from ..private import open_private, private_dir
from ..secrets import mask_text
from . import migrations
from .files import Files
from .integrity import Integrity
from .picking import Picking

CHUNK = 900  # stays under SQLite's default limit of host parameters per statement
ROWS_PER_INSERT = 4096
MINUTE, HOUR = 60.0, 3600.0  # the forecast history's grains: per minute for the last hour, per hour before
STATS = (
    "duration_sum",
    "duration_n",
    "duration_sq",
    "duration_max",
    "first_start",
    "sample_at",
    "sample_done",
    "throughput",
    "eta",
    "rate",
    "left",
    "eta_low",
    "eta_high",
)
CLUSTER_STATS = (
    "duration_sum",
    "duration_n",
    "duration_sq",
    "duration_max",
    "rate",
    "left",
    "eta",
    "eta_low",
    "eta_high",
)


@lru_cache(maxsize=8)
def _insert_rows_sql(n: int) -> str:
    """INSERT of ``n`` jobs of one campaign: ?1 is the campaign, then a name and a param line per row."""
    return "INSERT INTO jobs (campaign_id, name, params, state) VALUES " + ", ".join(["(?1, ?, ?, 'to_launch')"] * n)


def default_state_path() -> Path:
    env = os.environ.get("CIGRI_STATE")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "cigri" / "state.db"


def _duration_sums(
    rows: Iterable[tuple[int, str, float, float]], bucket: float
) -> tuple[list[tuple[float, int, float, float, int, str]], dict[tuple[int, str, float], int]]:
    """Of (campaign, cluster, seconds, ended at) rows: per (campaign, cluster), (sum, n, sum of squares,
    longest, campaign, cluster); and the ends per (campaign, cluster, start of their ``bucket``-wide bucket)."""
    per: dict[tuple[int, str], list[float]] = {}
    ends: dict[tuple[int, str, float], int] = {}
    for campaign_id, cluster, seconds, ended in rows:
        per.setdefault((campaign_id, cluster), []).append(seconds)
        key = (campaign_id, cluster, math.floor(ended / bucket) * bucket)
        ends[key] = ends.get(key, 0) + 1
    sums = [(sum(v), len(v), sum(x * x for x in v), max(v), cid, cluster) for (cid, cluster), v in per.items()]
    return sums, ends


def _chunks(items: Sequence, size: int = CHUNK) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)


class Store(Integrity, Files, Picking):
    def __init__(self, path: str | os.PathLike, *, clock_now=None, readonly: bool = False):
        """Open (creating it when missing) and migrate the state file; ``readonly`` opens an existing one as
        it is, for reading only (``grid admin check``)."""
        self.path = Path(path)
        self.memory = str(path) == ":memory:"
        try:
            if readonly:
                conn = self._open_readonly()
            else:
                if not self.memory:
                    self._create_file()
                conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=30, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 30000")
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
        self.overrides: dict[str, object] = {}  # the configuration file's and environment's keys (cigri.configfile)
        self.origins: dict[str, str] = {}  # where each of them comes from: the file's path or the variable

    def _open_readonly(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise NotFound(f"no state file {self.path}")
        uri = self.path.resolve().as_uri() + "?mode=ro"
        return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30, check_same_thread=False)

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

    # ---- clusters -------------------------------------------------------------------------------

    def clusters(self) -> list[Cluster]:
        rows = self.conn.execute("SELECT name, adapter, config FROM clusters ORDER BY name")
        return [Cluster(name, adapter, json.loads(config)) for name, adapter, config in rows]

    def cluster(self, name: str) -> Cluster:
        return self._named_cluster("SELECT name, adapter, config FROM clusters WHERE name = ?", (name,), name)

    def _named_cluster(self, query: str, args: tuple, name: str) -> Cluster:
        row = self._one(query, args)
        if row is None:
            raise NotFound(f"no cluster named {name!r}")
        return Cluster(row[0], row[1], json.loads(row[2]))

    def has_cluster(self, name: str) -> bool:
        return self._one("SELECT 1 FROM clusters WHERE name = ?", (name,)) is not None

    def add_cluster(self, name: str, adapter: str, config: dict, now: float) -> None:
        self.conn.execute(
            "INSERT INTO clusters (name, adapter, config, created_at) VALUES (?, ?, ?, ?)",
            (name, adapter, json.dumps(config, sort_keys=True), now),
        )

    def set_cluster_config(self, name: str, config: dict) -> None:
        self.conn.execute("UPDATE clusters SET config = ? WHERE name = ?", (json.dumps(config, sort_keys=True), name))

    def remove_cluster(self, name: str, now: float) -> None:
        """Remove the cluster; its settings stay in removed_clusters for reading its jobs' outputs."""
        self.conn.execute(
            "INSERT OR REPLACE INTO removed_clusters (name, adapter, config, removed_at) "
            "SELECT name, adapter, config, ? FROM clusters WHERE name = ?",
            (now, name),
        )
        self.conn.execute("DELETE FROM clusters WHERE name = ?", (name,))

    def cluster_of_outputs(self, name: str) -> Cluster:
        """The cluster that ran a job, to read its outputs: the cluster, else the one removed by that name."""
        return self._named_cluster(
            "SELECT name, adapter, config FROM clusters WHERE name = ? "
            "UNION ALL SELECT name, adapter, config FROM removed_clusters WHERE name = ? LIMIT 1",
            (name, name),
            name,
        )

    def cluster_in_use(self, name: str) -> bool:
        """Does a campaign that is not over still name this cluster?"""
        row = self._one(
            "SELECT 1 FROM campaign_clusters cc JOIN campaigns c ON c.id = cc.campaign_id "
            "WHERE cc.cluster = ? AND c.state IN ('in_treatment', 'paused') LIMIT 1",
            (name,),
        )
        return row is not None

    # ---- campaigns ------------------------------------------------------------------------------

    _CAMPAIGN_COLUMNS = "id, name, user, type, state, submitted_at, ended_at, nb_jobs, jdl"

    @staticmethod
    def _campaign(row: tuple) -> Campaign:
        return Campaign(
            id=row[0],
            name=row[1],
            user=row[2],
            type=CampaignType(row[3]),
            state=CampaignState(row[4]),
            submitted_at=row[5],
            ended_at=row[6],
            nb_jobs=row[7],
            jdl=json.loads(row[8]),
        )

    def create_campaign(
        self, name: str, user: str, type: CampaignType, jdl: dict, clusters: dict[str, dict], now: float
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO campaigns (name, user, type, state, submitted_at, jdl) VALUES (?, ?, ?, ?, ?, ?)",
            (name, user, type.value, CampaignState.IN_TREATMENT.value, now, json.dumps(jdl)),
        )
        campaign_id = cur.lastrowid
        self.conn.executemany(
            "INSERT INTO campaign_clusters (campaign_id, cluster, settings, prologue_state, epilogue_state) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (
                    campaign_id,
                    cluster,
                    json.dumps(settings),
                    "todo" if settings.get("prologue") else "none",
                    "todo" if settings.get("epilogue") else "none",
                )
                for cluster, settings in clusters.items()
            ],
        )
        self.conn.execute("INSERT INTO campaign_stats (campaign_id, sample_at) VALUES (?, ?)", (campaign_id, now))
        return campaign_id

    def add_jobs(self, campaign_id: int, blocks: Iterable[list[tuple[str, str]]]) -> int:
        """Insert blocks of ``(name, params)`` pairs as to_launch jobs; return how many.

        Thousands of rows go in per statement (``VALUES (...), (...), ...``): SQLite binds them in one call,
        less than half the cost of ``executemany`` binding them one by one."""
        total = 0
        per_statement = self._rows_per_insert()
        for block in blocks:
            for start in range(0, len(block), per_statement):
                rows = block[start : start + per_statement]
                self.conn.execute(_insert_rows_sql(len(rows)), [campaign_id, *chain.from_iterable(rows)])
            total += len(block)
        self.conn.execute(
            "INSERT INTO job_counts (campaign_id, state, n) VALUES (?, 'to_launch', ?) "
            "ON CONFLICT (campaign_id, state) DO UPDATE SET n = n + excluded.n",
            (campaign_id, total),
        )
        self.conn.execute("UPDATE campaigns SET nb_jobs = nb_jobs + ? WHERE id = ?", (total, campaign_id))
        return total

    def _rows_per_insert(self) -> int:
        """Rows per multi-row INSERT: two parameters a row, within the library's parameter limit."""
        limit = self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        return max(1, min(ROWS_PER_INSERT, (limit - 1) // 2))

    def job_names(self, campaign_id: int) -> set[str]:
        return {row[0] for row in self.conn.execute("SELECT name FROM jobs WHERE campaign_id = ?", (campaign_id,))}

    def campaign(self, campaign_id: int) -> Campaign:
        row = self._one(f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?", (campaign_id,))
        if row is None:
            raise NotFound(f"no campaign {campaign_id}")
        return self._campaign(row)

    def campaigns(self, *, user: str | None = None, states: Sequence[CampaignState] | None = None) -> list[Campaign]:
        sql = f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaigns"
        where, params = [], []
        if user:
            where.append("user = ?")
            params.append(user)
        if states:
            where.append(f"state IN ({_marks(len(states))})")
            params.extend(s.value for s in states)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._campaign(row) for row in self.conn.execute(sql + " ORDER BY id", params)]

    def purge_campaign(self, campaign_id: int) -> list[tuple[str, str]]:
        """Delete a campaign and everything recorded about it (jobs, events, batches, statistics,
        forecasts, replicas, ...: every table with a ``campaign_id``, and the job-keyed ``job_ends``);
        return the (cluster, remote id) of its jobs and their earlier runs, whose files the caller removes."""
        runs = self.conn.execute(
            "SELECT cluster, remote_id FROM jobs WHERE campaign_id = ? AND remote_id IS NOT NULL "
            "UNION SELECT e.cluster, e.remote_id FROM job_ends e JOIN jobs j ON j.id = e.job_id "
            "WHERE j.campaign_id = ? AND e.remote_id IS NOT NULL",
            (campaign_id, campaign_id),
        ).fetchall()
        self.conn.execute(
            "DELETE FROM job_ends WHERE job_id IN (SELECT id FROM jobs WHERE campaign_id = ?)", (campaign_id,)
        )
        tables = [row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}
            if "campaign_id" in columns and table != "jobs":
                self.conn.execute(f"DELETE FROM {table} WHERE campaign_id = ?", (campaign_id,))
        self.conn.execute("DELETE FROM jobs WHERE campaign_id = ?", (campaign_id,))
        self.conn.execute("DELETE FROM campaigns WHERE id = ?", (campaign_id,))
        return runs

    def set_campaign_state(self, campaign_id: int, state: CampaignState, now: float | None = None) -> None:
        ended = now if state in (CampaignState.TERMINATED, CampaignState.CANCELLED) else None
        self.conn.execute(
            "UPDATE campaigns SET state = ?, ended_at = ? WHERE id = ?", (state.value, ended, campaign_id)
        )

    def counts(self, campaign_id: int) -> dict[JobState, int]:
        rows = self.conn.execute("SELECT state, n FROM job_counts WHERE campaign_id = ?", (campaign_id,))
        counts = {state: 0 for state in JobState}
        for state, n in rows:
            counts[JobState(state)] = n
        return counts

    def campaign_clusters(self, campaign_id: int, *, settings: bool = True) -> dict[str, dict]:
        """Each cluster of a campaign: its progress (prologue, epilogue, jobs sent) and, unless told not
        to, its settings (JSON decoded: callers on a hot path cache them, they never change)."""
        rows = self.conn.execute(
            f"SELECT cluster, {'settings' if settings else 'NULL'}, prologue_state, prologue_remote, "
            "epilogue_state, epilogue_remote, launched FROM campaign_clusters WHERE campaign_id = ?",
            (campaign_id,),
        )
        return {
            cluster: {
                "settings": json.loads(raw) if raw is not None else None,
                "prologue_state": ps,
                "prologue_remote": pr,
                "epilogue_state": es,
                "epilogue_remote": er,
                "launched": launched,
            }
            for cluster, raw, ps, pr, es, er, launched in rows
        }

    def set_stage(self, campaign_id: int, cluster: str, stage: str, state: str, remote: str | None = None) -> None:
        """Record a prologue or epilogue's progress (stage is 'prologue' or 'epilogue')."""
        if stage not in ("prologue", "epilogue"):
            raise ValueError(stage)
        self.conn.execute(
            f"UPDATE campaign_clusters SET {stage}_state = ?, {stage}_remote = ? WHERE campaign_id = ? AND cluster = ?",
            (state, remote, campaign_id, cluster),
        )

    def stages_in(self, states: Sequence[str]) -> list[tuple[int, str, str, str, str | None]]:
        """(campaign, cluster, stage, state, remote) for prologues/epilogues in the given states."""
        out = []
        for stage in ("prologue", "epilogue"):
            rows = self.conn.execute(
                f"SELECT cc.campaign_id, cc.cluster, cc.{stage}_state, cc.{stage}_remote FROM campaign_clusters cc "
                f"JOIN campaigns c ON c.id = cc.campaign_id WHERE c.state IN ('in_treatment', 'paused', 'cancelled') "
                f"AND cc.{stage}_state IN ({_marks(len(states))})",
                list(states),
            )
            out.extend((cid, cluster, stage, state, remote) for cid, cluster, state, remote in rows)
        return out

    # ---- jobs -----------------------------------------------------------------------------------

    _JOB_COLUMNS = (
        "id, campaign_id, name, params, state, cluster, remote_id, exit_code, submitted_at, started_at, "
        "ended_at, resubmits, preemptions, resumes, checkpoint_cluster"
    )

    @staticmethod
    def _job(row: tuple) -> Job:
        return Job(*row[:4], JobState(row[4]), *row[5:])

    def job(self, job_id: int) -> Job:
        row = self._one(f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        if row is None:
            raise NotFound(f"no job {job_id}")
        return self._job(row)

    def jobs(self, campaign_id: int, states: Sequence[JobState] | None = None) -> Iterator[Job]:
        """Stream a campaign's jobs in id order."""
        sql = f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE campaign_id = ?"
        params: list = [campaign_id]
        if states:
            sql += f" AND state IN ({_marks(len(states))})"
            params.extend(s.value for s in states)
        for row in self.conn.execute(sql + " ORDER BY id", params):
            yield self._job(row)

    def next_jobs(
        self,
        campaign_id: int,
        limit: int,
        avoiding: tuple[str, float] | None = None,
        cluster: str | None = None,
    ) -> list[tuple[int, str, str, bool, float | None]]:
        """(id, name, params, resumes, walltime scale) of the next ``limit`` to_launch jobs of a campaign for
        ``cluster``: first those resuming from a checkpoint held there (no other cluster gets them), then the
        others in id order, and the deferred ones (exit 67) only once no other job of the campaign waits.
        With ``avoiding`` (cluster, now), only jobs that do not avoid that cluster."""
        rows: list[tuple] = []
        if cluster is not None:
            rows += self.conn.execute(
                "SELECT id, name, params, 1, walltime_scale FROM jobs WHERE campaign_id = ? "
                "AND checkpoint_cluster = ? AND state = 'to_launch' ORDER BY id LIMIT ?",
                (campaign_id, cluster, limit),
            ).fetchall()
        avoid, args = "", ()
        if avoiding is not None:
            avoid, args = " AND (avoid_cluster IS NULL OR avoid_cluster != ? OR avoid_until <= ?)", avoiding
        for deferred in (0, 1):
            wanted = limit - len(rows)
            if wanted <= 0:
                break
            if deferred and self._fresh_left(campaign_id, avoiding):
                break
            rows += self.conn.execute(
                "SELECT id, name, params, 0, walltime_scale FROM jobs WHERE campaign_id = ? AND state = 'to_launch' "
                f"AND checkpoint_cluster IS NULL AND deferred = ?{avoid} ORDER BY id LIMIT ?",
                (campaign_id, deferred, *args, wanted),
            ).fetchall()
        return [(job_id, name, params, bool(resumes), scale) for job_id, name, params, resumes, scale in rows]

    def _fresh_left(self, campaign_id: int, avoiding: tuple[str, float] | None) -> bool:
        """Called once the fresh jobs a cluster may take are all taken: do some wait for another cluster?"""
        if avoiding is None:
            return False
        return (
            self._one(
                "SELECT 1 FROM jobs WHERE avoid_cluster = ? AND campaign_id = ? AND avoid_until > ? "
                "AND state = 'to_launch' AND deferred = 0 AND checkpoint_cluster IS NULL LIMIT 1",
                (avoiding[0], campaign_id, avoiding[1]),
            )
            is not None
        )

    def checkpointed(self) -> dict[tuple[int, str], int]:
        """How many to_launch jobs of each (campaign, cluster) resume from a checkpoint held there."""
        rows = self.conn.execute(
            "SELECT campaign_id, checkpoint_cluster, count(*) FROM jobs WHERE checkpoint_cluster IS NOT NULL "
            "AND state = 'to_launch' GROUP BY campaign_id, checkpoint_cluster"
        )
        return {(campaign_id, cluster): n for campaign_id, cluster, n in rows}

    def avoided(self, now: float) -> dict[tuple[int, str], int]:
        """How many to_launch jobs of each (campaign, cluster) may not go to that cluster yet."""
        rows = self.conn.execute(
            "SELECT campaign_id, avoid_cluster, count(*) FROM jobs WHERE avoid_cluster IS NOT NULL "
            "AND state = 'to_launch' AND avoid_until > ? GROUP BY campaign_id, avoid_cluster",
            (now,),
        )
        return {(campaign_id, cluster): n for campaign_id, cluster, n in rows}

    def has_jobs_in(self, campaign_id: int, state: JobState) -> bool:
        return (
            self._one("SELECT 1 FROM jobs WHERE campaign_id = ? AND state = ? LIMIT 1", (campaign_id, state.value))
            is not None
        )

    def create_batch(self, cluster: str, campaign_id: int, job_ids: Sequence[int], now: float) -> int:
        cur = self.conn.execute(
            "INSERT INTO batches (cluster, campaign_id, state, created_at) VALUES (?, ?, 'submitting', ?)",
            (cluster, campaign_id, now),
        )
        batch_id = cur.lastrowid
        self.conn.executemany(
            "UPDATE jobs SET state = 'launching', cluster = ?, batch_id = ? WHERE id = ? AND state = 'to_launch'",
            [(cluster, batch_id, job_id) for job_id in job_ids],
        )
        self.conn.execute(
            "UPDATE campaign_clusters SET launched = launched + ? WHERE campaign_id = ? AND cluster = ?",
            (len(job_ids), campaign_id, cluster),
        )
        return batch_id

    def unfinished_batches(self) -> list[tuple[int, str, int]]:
        """(batch, cluster, campaign) of submissions a pass began and did not record as done."""
        return self.conn.execute(
            "SELECT id, cluster, campaign_id FROM batches WHERE state = 'submitting' ORDER BY id"
        ).fetchall()

    def batch_jobs(self, batch_id: int) -> list[tuple[int, str, str]]:
        return self.conn.execute(
            "SELECT id, name, params FROM jobs WHERE batch_id = ? AND state = 'launching' ORDER BY id", (batch_id,)
        ).fetchall()

    def batch_kind(self, batch_id: int) -> tuple[bool, float | None]:
        """(resumes from a checkpoint, walltime scale) its jobs share (the metascheduler groups them so)."""
        row = self._one(
            "SELECT checkpoint_cluster IS NOT NULL, walltime_scale FROM jobs WHERE batch_id = ? LIMIT 1", (batch_id,)
        )
        return (bool(row[0]), row[1]) if row else (False, None)

    def finish_batch(self, batch_id: int, remote_ids: dict[int, str], now: float) -> None:
        self.conn.executemany(
            "UPDATE jobs SET state = 'submitted', remote_id = ?, submitted_at = ? WHERE id = ? AND state = 'launching'",
            [(remote, now, job_id) for job_id, remote in remote_ids.items()],
        )
        self.conn.execute("UPDATE batches SET state = 'done' WHERE id = ?", (batch_id,))

    def batch_pack(self, batch_id: int) -> dict | None:
        """A batch's pack layout, once its first submission fixed it (None before, and for unpacked ones)."""
        row = self._one("SELECT pack FROM batches WHERE id = ?", (batch_id,))
        return json.loads(row[0]) if row and row[0] else None

    def set_batch_pack(self, batch_id: int, layout: dict) -> None:
        self.conn.execute("UPDATE batches SET pack = ? WHERE id = ?", (json.dumps(layout), batch_id))

    def abandon_batch(self, batch_id: int) -> None:
        """The RM refused the batch: its jobs go back to to_launch."""
        self.conn.execute(
            "UPDATE jobs SET state = 'to_launch', cluster = NULL, batch_id = NULL "
            "WHERE batch_id = ? AND state = 'launching'",
            (batch_id,),
        )
        self.conn.execute("UPDATE batches SET state = 'abandoned' WHERE id = ?", (batch_id,))

    def leave_batch(self, batch_id: int, job_ids: Sequence[int]) -> None:
        """These jobs leave the batch before it is submitted: back to to_launch."""
        self.conn.executemany(
            "UPDATE jobs SET state = 'to_launch', cluster = NULL, batch_id = NULL "
            "WHERE id = ? AND batch_id = ? AND state = 'launching'",
            [(job_id, batch_id) for job_id in job_ids],
        )

    def active_jobs(self, cluster: str) -> list[tuple[int, int, str, str | None, float | None]]:
        """(id, campaign, state, remote_id, unknown_since) of the cluster's submitted and running jobs."""
        return self.conn.execute(
            "SELECT id, campaign_id, state, remote_id, unknown_since FROM jobs "
            f"WHERE cluster = ? AND {migrations.ACTIVE} AND state != 'launching'",
            (cluster,),
        ).fetchall()

    def active_count(self, cluster: str) -> dict[str, int]:
        rows = self.conn.execute(
            f"SELECT state, count(*) FROM jobs WHERE cluster = ? AND {migrations.ACTIVE} GROUP BY state",
            (cluster,),
        )
        return dict(rows.fetchall())

    def active_by_campaign(self, cluster: str) -> dict[int, int]:
        rows = self.conn.execute(
            f"SELECT campaign_id, count(*) FROM jobs WHERE cluster = ? AND {migrations.ACTIVE} GROUP BY campaign_id",
            (cluster,),
        )
        return dict(rows.fetchall())

    def mark_running(self, rows: Sequence[tuple[int, float]]) -> None:
        self.conn.executemany(
            "UPDATE jobs SET state = 'running', started_at = ? WHERE id = ? AND state = 'submitted'",
            [(started, job_id) for job_id, started in rows],
        )

    def mark_ended(self, rows: Sequence[tuple[int, JobState, int | None, float | None, float]]) -> None:
        """(job, new state, exit code, started, ended) for jobs the RM says are over. A terminated job's
        failures are forgotten: they only steer where its next run goes."""
        self.conn.executemany(
            "UPDATE jobs SET state = ?, exit_code = ?, started_at = coalesce(?, started_at), ended_at = ? WHERE id = ?",
            [(state.value, code, started, ended, job_id) for job_id, state, code, started, ended in rows],
        )
        self.conn.executemany(
            "DELETE FROM job_failures WHERE job_id = ?",
            [(job_id,) for job_id, state, *_ in rows if state == JobState.TERMINATED],
        )

    def oldest_queued(self, cluster: str) -> float | None:
        """When the longest-waiting of cigri's jobs queued on the cluster was submitted there (jobs of paused
        campaigns left out: they are held there on purpose)."""
        return self._one(
            f"SELECT min(submitted_at) FROM jobs WHERE cluster = ? AND {migrations.ACTIVE} AND state = 'submitted' "
            "AND campaign_id IN (SELECT id FROM campaigns WHERE state = 'in_treatment')",
            (cluster,),
        )[0]

    def overdue_jobs(self, cluster: str, before: float) -> list[tuple[int, int, str | None]]:
        """(id, campaign, remote id) of cigri's jobs queued on the cluster since before ``before``, not yet
        being taken back nor killed."""
        return self.conn.execute(
            f"SELECT id, campaign_id, remote_id FROM jobs WHERE cluster = ? AND {migrations.ACTIVE} "
            "AND state = 'submitted' AND submitted_at < ? AND recall = 0 AND kill_requested = 0 AND nikita IS NULL "
            "ORDER BY id",
            (cluster, before),
        ).fetchall()

    def request_recall(self, job_ids: Sequence[int], cluster: str, now: float) -> None:
        """Record that pending jobs are to be taken back from their cluster (before the RM is asked)."""
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET recall = 1 WHERE id IN ({_marks(len(chunk))})", chunk)
        self.took_back(cluster, now)

    def took_back(self, cluster: str, now: float) -> None:
        """cigri took queued jobs back from the cluster: no queue allowance there until one of its jobs starts."""
        self.conn.execute("UPDATE clusters SET last_recall = ? WHERE name = ?", (now, cluster))

    def jobs_to_recall(self) -> list[tuple[int, str, str, str | None]]:
        """(id, cluster, state, remote_id) of jobs recorded to be taken back."""
        return self.conn.execute("SELECT id, cluster, state, remote_id FROM jobs WHERE recall = 1").fetchall()

    def clear_recall(self, job_ids: Sequence[int]) -> None:
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET recall = 0 WHERE id IN ({_marks(len(chunk))})", chunk)

    def set_last_start(self, cluster: str, now: float) -> None:
        """cigri saw one of its jobs start on the cluster."""
        self.conn.execute("UPDATE clusters SET last_start = ? WHERE name = ?", (now, cluster))

    def cluster_flow(self, cluster: str) -> tuple[float | None, float | None]:
        """(last start seen, last take-back) of cigri's jobs on the cluster."""
        return self._one("SELECT last_start, last_recall FROM clusters WHERE name = ?", (cluster,)) or (None, None)

    def cluster_jobs(self, cluster: str) -> list[tuple[int, str | None, int | None, int]]:
        """(id, remote_id, batch, campaign) of every active job of the cluster, launching ones included."""
        return self.conn.execute(
            f"SELECT id, remote_id, batch_id, campaign_id FROM jobs WHERE cluster = ? AND {migrations.ACTIVE}",
            (cluster,),
        ).fetchall()

    def add_orphans(
        self, cluster: str, remote_ids: Sequence[tuple[str, int]], batch_keys: Sequence[tuple[str, int]]
    ) -> None:
        """Copies left on a cluster while their jobs run again elsewhere, (remote id or batch key, campaign)
        each: to cancel once it answers."""
        self.conn.executemany(
            "INSERT INTO orphans (cluster, remote_id, batch_key, campaign_id) VALUES (?, ?, ?, ?)",
            [(cluster, r, None, c) for r, c in remote_ids] + [(cluster, None, k, c) for k, c in batch_keys],
        )

    def orphans(self) -> list[tuple[int, str, str | None, str | None, int | None]]:
        """(id, cluster, remote_id, batch_key, campaign_id) of the copies to cancel."""
        return self.conn.execute(
            "SELECT id, cluster, remote_id, batch_key, campaign_id FROM orphans ORDER BY id"
        ).fetchall()

    def add_waste(self, copies: dict[int, int]) -> None:
        """Count copies of campaigns' jobs killed after their jobs ran elsewhere ({campaign: copies})."""
        rows = [(n, c) for c, n in copies.items()]
        self.conn.executemany("UPDATE campaigns SET waste = waste + ? WHERE id = ?", rows)

    def waste(self, campaign_id: int) -> int:
        return self._one("SELECT waste FROM campaigns WHERE id = ?", (campaign_id,))[0]

    def drop_orphans(self, ids: Sequence[int]) -> None:
        for chunk in _chunks(list(ids)):
            self.conn.execute(f"DELETE FROM orphans WHERE id IN ({_marks(len(chunk))})", chunk)

    def set_unknown_since(self, job_ids: Sequence[int], since: float | None) -> None:
        """Note when the RM stopped knowing jobs (None: it knows them again)."""
        self.conn.executemany("UPDATE jobs SET unknown_since = ? WHERE id = ?", [(since, j) for j in job_ids])

    def requeue(
        self,
        job_ids: Sequence[int],
        *,
        count_resubmit: bool = True,
        avoid: tuple[str, float] | None = None,
        preempted: bool = False,
        resumed: bool = False,
        deferred: bool = False,
        checkpoint: str | None = None,
    ) -> None:
        """Put jobs back to to_launch (resubmission, or a preemption with ``preempted``); with ``avoid``
        (cluster, until), not to be sent back to that cluster before then. ``resumed`` counts a return that
        is no failure (an RM's preemption, a checkpoint); ``deferred`` (exit 67) makes it wait until no other
        job of its campaign does; ``checkpoint`` names the cluster holding its checkpoint, where it resumes
        from then on."""
        inc = 1 if count_resubmit else 0
        preemption = 1 if preempted else 0
        for chunk in _chunks(list(job_ids)):
            if avoid is not None:
                self.conn.execute(
                    f"UPDATE jobs SET avoid_cluster = ?, avoid_until = ? WHERE id IN ({_marks(len(chunk))})",
                    [*avoid, *chunk],
                )
            # a job the user cancelled while it ran is not run again
            self.conn.execute(
                f"UPDATE jobs SET state = 'cancelled', kill_requested = 0 WHERE id IN ({_marks(len(chunk))}) "
                "AND kill_requested = 1",
                chunk,
            )
            self.conn.execute(
                "UPDATE jobs SET state = 'to_launch', cluster = NULL, remote_id = NULL, batch_id = NULL, "
                "exit_code = NULL, started_at = NULL, ended_at = NULL, unknown_since = NULL, hold = 0, stop = 0, "
                "nikita = NULL, "
                f"resubmits = resubmits + {inc}, preemptions = preemptions + {preemption}, "
                f"resumes = resumes + {int(resumed)}, deferred = {int(deferred)}, "
                "checkpoint_cluster = coalesce(?, checkpoint_cluster) "
                f"WHERE id IN ({_marks(len(chunk))}) AND kill_requested = 0",
                [checkpoint, *chunk],
            )

    def attempts(self, job_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """(resubmissions, resumes) of each job."""
        out: dict[int, tuple[int, int]] = {}
        for chunk in _chunks(list(job_ids)):
            rows = self.conn.execute(
                f"SELECT id, resubmits, resumes FROM jobs WHERE id IN ({_marks(len(chunk))})", chunk
            )
            out.update((job_id, (resubmits, resumes)) for job_id, resubmits, resumes in rows)
        return out

    def scale_walltime(self, job_ids: Sequence[int], factor: float) -> None:
        """Multiply the jobs' walltime scale (retry_resources, after a walltime kill)."""
        self.conn.executemany(
            "UPDATE jobs SET walltime_scale = coalesce(walltime_scale, 1) * ? WHERE id = ?",
            [(factor, job_id) for job_id in job_ids],
        )

    def add_ends(self, rows: Iterable[tuple[int, str, str | None, float, int | None, str | None, str]]) -> None:
        """(job, cluster, remote id, ended at, exit code, kill cause, reason) of ends that did not succeed."""
        self.conn.executemany(
            "INSERT INTO job_ends (job_id, cluster, remote_id, ended_at, exit_code, cause, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            list(rows),
        )

    def job_ends(self, job_id: int) -> list[tuple[str, str | None, float, int | None, str | None, str]]:
        """(cluster, remote id, ended at, exit code, kill cause, reason) of the job's recorded ends, in order."""
        return self.conn.execute(
            "SELECT cluster, remote_id, ended_at, exit_code, cause, reason FROM job_ends WHERE job_id = ? ORDER BY id",
            (job_id,),
        ).fetchall()

    def note_ends(self, campaign_id: int, outcomes: str, window: int) -> str:
        """Append a campaign's latest ends ("1" failed, "0" succeeded) to its window of the last ``window``
        ones; return the window."""
        row = self._one("SELECT recent_ends FROM campaigns WHERE id = ?", (campaign_id,))
        recent = ((row[0] if row else "") + outcomes)[-window:]
        self.conn.execute("UPDATE campaigns SET recent_ends = ? WHERE id = ?", (recent, campaign_id))
        return recent

    def forget_ends(self, campaign_id: int) -> None:
        """A paused campaign starts a new window when it resumes."""
        self.conn.execute("UPDATE campaigns SET recent_ends = '' WHERE id = ?", (campaign_id,))

    def set_job_state(self, job_ids: Sequence[int], state: JobState, *, only_from: Sequence[JobState] = ()) -> int:
        changed = 0
        guard = f" AND state IN ({_marks(len(only_from))})" if only_from else ""
        for chunk in _chunks(list(job_ids)):
            cur = self.conn.execute(
                f"UPDATE jobs SET state = ? WHERE id IN ({_marks(len(chunk))}){guard}",
                [state.value, *chunk, *(s.value for s in only_from)],
            )
            changed += cur.rowcount
        return changed

    def drop_waiting(self, campaign_id: int, state: JobState) -> int:
        """Every to_launch job of a campaign becomes ``state`` (cancelled or skipped)."""
        cur = self.conn.execute(
            "UPDATE jobs SET state = ? WHERE campaign_id = ? AND state = 'to_launch'", (state.value, campaign_id)
        )
        return cur.rowcount

    def request_kill(self, *, campaign_id: int | None = None, job_id: int | None = None) -> int:
        """Flag active jobs for nikita; return how many."""
        if job_id is not None:
            cur = self.conn.execute(
                f"UPDATE jobs SET kill_requested = 1 WHERE id = ? AND {migrations.ACTIVE}",
                (job_id,),
            )
        else:
            cur = self.conn.execute(
                f"UPDATE jobs SET kill_requested = 1 WHERE campaign_id = ? AND {migrations.ACTIVE}",
                (campaign_id,),
            )
        return cur.rowcount

    def jobs_to_kill(self) -> list[tuple[int, int, str, str, str | None]]:
        """(id, campaign, cluster, state, remote_id) of jobs a user cancelled while they were active."""
        return self.conn.execute(
            "SELECT id, campaign_id, cluster, state, remote_id FROM jobs WHERE kill_requested = 1"
        ).fetchall()

    def clear_kill(self, job_ids: Sequence[int]) -> None:
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET kill_requested = 0 WHERE id IN ({_marks(len(chunk))})", chunk)

    def nikita_jobs(self, cluster: str) -> list[tuple]:
        """(id, campaign, state, remote_id, submitted_at, started_at, kill asked by nikita, free, movable) of
        cigri's jobs queued or running on the cluster with a remote id. ``free``: no kill, take-back or stop
        asked; ``movable``: a running default campaign's job, not held (those nikita may take back)."""
        rows = self.conn.execute(
            "SELECT j.id, j.campaign_id, j.state, j.remote_id, j.submitted_at, j.started_at, j.nikita, "
            "j.kill_requested = 0 AND j.recall = 0 AND j.stop = 0 AND j.nikita IS NULL, "
            "j.hold = 0 AND c.state = 'in_treatment' AND c.type != 'test' FROM (SELECT id, campaign_id, state, "
            "remote_id, submitted_at, started_at, nikita, kill_requested, recall, stop, hold FROM jobs "
            f"WHERE cluster = ? AND {migrations.ACTIVE} AND state != 'launching' AND remote_id IS NOT NULL) j "
            "JOIN campaigns c ON c.id = j.campaign_id ORDER BY j.id",
            (cluster,),
        )
        return [(*row[:7], bool(row[7]), bool(row[8])) for row in rows]

    def ask_kills(self, rows: Sequence[tuple[int, str]]) -> None:
        """(job, reason): nikita is about to ask the job's RM to kill it."""
        self.conn.executemany("UPDATE jobs SET nikita = ? WHERE id = ?", [(reason, job_id) for job_id, reason in rows])

    def clear_kills(self, job_ids: Sequence[int] | None = None) -> None:
        """Forget the kills nikita asked for these jobs; without ids, those of jobs no longer queued or running
        (they ended, or are back in their bags: nothing left to kill)."""
        if job_ids is None:
            self.conn.execute(
                "UPDATE jobs SET nikita = NULL WHERE nikita IS NOT NULL AND state NOT IN ('submitted', 'running')"
            )
            return
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET nikita = NULL WHERE id IN ({_marks(len(chunk))})", chunk)

    # hold: 0 not held, 1 hold asked (the RM call may not have happened), 2 held (the RM said so)
    HOLD_NONE, HOLD_ASKED, HOLD_DONE = 0, 1, 2

    def jobs_to_hold(self) -> list[tuple[int, str, str]]:
        """(id, cluster, remote_id) of paused campaigns' queued jobs not known to be held on their RM."""
        return self.conn.execute(
            "SELECT j.id, j.cluster, j.remote_id FROM campaigns c JOIN jobs j ON j.campaign_id = c.id "
            "WHERE c.state = 'paused' AND j.state = 'submitted' AND j.hold != 2 AND j.kill_requested = 0 "
            "AND j.remote_id IS NOT NULL ORDER BY j.id"
        ).fetchall()

    def jobs_to_release(self) -> list[tuple[int, str | None, str, str | None]]:
        """(id, cluster, state, remote_id) of jobs a hold was asked for whose campaign runs again."""
        return self.conn.execute(
            "SELECT j.id, j.cluster, j.state, j.remote_id FROM jobs j JOIN campaigns c ON c.id = j.campaign_id "
            "WHERE j.hold != 0 AND c.state = 'in_treatment' ORDER BY j.id"
        ).fetchall()

    def set_hold(self, job_ids: Sequence[int], hold: int) -> None:
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET hold = ? WHERE id IN ({_marks(len(chunk))})", [hold, *chunk])

    def held_count(self, campaign_id: int) -> int:
        """A campaign's queued jobs held on their RM."""
        return self._one(
            "SELECT count(*) FROM jobs WHERE campaign_id = ? AND state = 'submitted' AND hold = 2", (campaign_id,)
        )[0]

    def is_held(self, job_id: int) -> bool:
        return self._one("SELECT hold FROM jobs WHERE id = ?", (job_id,)) == (self.HOLD_DONE,)

    def job_clusters(self, campaign_id: int) -> list[str]:
        """Clusters on which a job of the campaign ran or runs."""
        rows = self.conn.execute(
            "SELECT DISTINCT cluster FROM jobs WHERE campaign_id = ? AND state = 'terminated' AND cluster IS NOT NULL",
            (campaign_id,),
        )
        return [r[0] for r in rows]

    # ---- events ---------------------------------------------------------------------------------

    _EVENT_COLUMNS = (
        "id, class, code, state, cluster, campaign_id, job_id, message, created_at, closed_at, parent_id, closed_by"
    )
    _GLOBAL = "(class = 'cluster' OR code = 'ADMIN_BLACKLIST')"  # what gridevents -g lists

    @staticmethod
    def _event(row: tuple) -> Event:
        return Event(row[0], EventClass(row[1]), EventCode(row[2]), EventState(row[3]), *row[4:])

    def open_event(
        self,
        cls: EventClass,
        code: EventCode,
        message: str,
        now: float,
        *,
        cluster: str | None = None,
        campaign_id: int | None = None,
        job_id: int | None = None,
        parent: int | None = None,
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO events (class, code, state, cluster, campaign_id, job_id, message, created_at, parent_id) "
            "VALUES (?, ?, 'open', ?, ?, ?, ?, ?, ?)",
            (cls.value, code.value, cluster, campaign_id, job_id, mask_text(message), now, parent),
        )
        return cur.lastrowid

    def events(
        self,
        *,
        campaign_id: int | None = None,
        event_id: int | None = None,
        open_only: bool = True,
        cls: EventClass | None = None,
        user: str | None = None,
        code: EventCode | None = None,
        global_only: bool = False,
    ) -> list[Event]:
        """Events, oldest first; ``global_only``: the cluster events and the admin's blacklists."""
        where, params = [], []
        if open_only:
            where.append("e.state = 'open'")
        if campaign_id is not None:
            where.append("e.campaign_id = ?")
            params.append(campaign_id)
        if event_id is not None:
            where.append("e.id = ?")
            params.append(event_id)
        if cls is not None:
            where.append("e.class = ?")
            params.append(cls.value)
        if code is not None:
            where.append("e.code = ?")
            params.append(code.value)
        if global_only:
            where.append(self._GLOBAL.replace("class", "e.class").replace("code", "e.code"))
        if user:
            where.append("(e.campaign_id IS NULL OR c.user = ?)")
            params.append(user)
        sql = (
            f"SELECT {', '.join('e.' + c for c in self._EVENT_COLUMNS.split(', '))} FROM events e "
            "LEFT JOIN campaigns c ON c.id = e.campaign_id"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._event(row) for row in self.conn.execute(sql + " ORDER BY e.id", params)]

    def open_event_counts(self, ignore: Sequence[EventCode] = ()) -> dict[int, int]:
        """Open events per campaign, those of the ``ignore`` codes left out."""
        rows = self.conn.execute(
            "SELECT campaign_id, count(*) FROM events WHERE state = 'open' AND campaign_id IS NOT NULL "
            f"AND code NOT IN ({_marks(len(ignore))}) GROUP BY campaign_id",
            [code.value for code in ignore],
        )
        return dict(rows.fetchall())

    def close_events(self, event_ids: Sequence[int], now: float, by: str | None = None) -> None:
        """Close the open ones of ``event_ids``, noting ``by`` (why) when given."""
        for chunk in _chunks(list(event_ids)):
            self.conn.execute(
                "UPDATE events SET state = 'closed', closed_at = ?, closed_by = ? "
                f"WHERE id IN ({_marks(len(chunk))}) AND state = 'open'",
                [now, by, *chunk],
            )

    def record_usage(self, capacities: dict[str, Capacity], now: float) -> None:
        """Keep each cluster's latest capacity reading (gridclusters -u / -b show it)."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO cluster_usage (cluster, total, used, grid_used, queued, down, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(name, c.total, c.used, c.grid_used, c.queued, c.down, now) for name, c in capacities.items()],
        )

    def recorded_usage(self) -> dict[str, tuple[Capacity, float]]:
        """Each cluster's latest capacity reading and when it was taken (clusters never read are absent)."""
        rows = self.conn.execute("SELECT cluster, total, used, grid_used, queued, down, at FROM cluster_usage")
        return {
            name: (Capacity(total, used, grid, queued, down), at) for name, total, used, grid, queued, down, at in rows
        }

    def open_cluster_event(self, cluster: str) -> Event | None:
        """The open transport event of ``cluster`` (the admin's blacklist is not one: it does not close itself)."""
        row = self._one(
            f"SELECT {self._EVENT_COLUMNS} FROM events WHERE state = 'open' AND class = 'cluster' AND cluster = ? "
            "AND code != 'ADMIN_BLACKLIST' ORDER BY id LIMIT 1",
            (cluster,),
        )
        return self._event(row) if row else None

    def blocked_clusters(self, campaign_id: int) -> set[str]:
        """Clusters on which an open campaign event stops the campaign, and those the admin blacklisted."""
        rows = self.conn.execute(
            "SELECT DISTINCT cluster FROM events WHERE state = 'open' AND cluster IS NOT NULL "
            "AND ((class = 'campaign' AND campaign_id = ?) OR code = 'ADMIN_BLACKLIST')",
            (campaign_id,),
        )
        return {r[0] for r in rows}

    # ---- black holes (cigri.cycle.blackhole) ----------------------------------------------------

    def streak_health(self, cluster: str) -> dict[int, float]:
        """Campaign -> the latest start of one of its jobs that ended normally (not within the black-hole
        threshold) on ``cluster``."""
        rows = self.conn.execute("SELECT campaign_id, healthy FROM blackhole_health WHERE cluster = ?", (cluster,))
        return dict(rows.fetchall())

    def note_health(self, rows: Sequence[tuple[int, str, float]]) -> None:
        """(campaign, cluster, started) of the latest start of its jobs that ended normally there in this pass:
        the suspects started at or before it are no longer suspects (the cluster ran jobs normally since)."""
        for campaign_id, cluster, started in rows:
            self.conn.execute(
                "INSERT INTO blackhole_health (campaign_id, cluster, healthy) VALUES (?, ?, ?) "
                "ON CONFLICT (campaign_id, cluster) DO UPDATE SET healthy = max(healthy, excluded.healthy)",
                (campaign_id, cluster, started),
            )
            self.conn.execute(
                "DELETE FROM blackhole_suspects WHERE campaign_id = ? AND cluster = ? AND started <= ?",
                (campaign_id, cluster, started),
            )

    def lengthen_streaks(self, rows: Sequence[tuple[int, str, int, float, float, float]]) -> None:
        """(campaign, cluster, job, started, seconds, ended) of ends within the black-hole threshold of jobs
        started after the cluster's latest normal run: each job is a suspect there."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO blackhole_suspects (campaign_id, cluster, job_id, started, seconds, ended) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )

    def break_streaks(self, pairs: Iterable[tuple[int, str]]) -> None:
        """Forget the streaks (their suspects and the clusters' latest normal runs) of these (campaign, cluster)."""
        pairs = list(pairs)
        self.conn.executemany("DELETE FROM blackhole_health WHERE campaign_id = ? AND cluster = ?", pairs)
        self.conn.executemany("DELETE FROM blackhole_suspects WHERE campaign_id = ? AND cluster = ?", pairs)

    def streaks(self, at_least: int) -> list[tuple[int, str, int, float, float, bool, bool]]:
        """(campaign, cluster, suspects, longest, first end, blacklisted, over) of the streaks to judge: those
        of at least ``at_least`` suspects, any on a cluster an open BLACK_HOLE event already keeps the campaign
        off, and any of a campaign over (terminated or cancelled). The suspects table is small: only the short
        ends since each cluster last ran a job of the campaign normally."""
        rows = self.conn.execute(
            "SELECT s.campaign_id, s.cluster, count(*), max(s.seconds), min(s.ended), EXISTS (SELECT 1 FROM events e "
            "WHERE e.state = 'open' AND e.campaign_id = s.campaign_id AND e.class = 'campaign' "
            "AND e.code = ? AND e.cluster = s.cluster), c.state IN ('terminated', 'cancelled') "
            "FROM blackhole_suspects s JOIN campaigns c ON c.id = s.campaign_id "
            "GROUP BY s.campaign_id, s.cluster ORDER BY 1, 2",
            (EventCode.BLACK_HOLE.value,),
        )
        return [(*row[:5], bool(row[5]), bool(row[6])) for row in rows if row[2] >= at_least or row[5] or row[6]]

    def suspects(self, campaign_id: int, cluster: str) -> list[tuple[int, JobState, float | None, float]]:
        """(job, state, started, ended) of the jobs of a streak that are still ended there (terminated or
        failed: not run again since)."""
        rows = self.conn.execute(
            "SELECT j.id, j.state, j.started_at, j.ended_at FROM blackhole_suspects s JOIN jobs j ON j.id = s.job_id "
            "WHERE s.campaign_id = ? AND s.cluster = ? AND j.cluster = s.cluster "
            "AND j.state IN ('terminated', 'event') ORDER BY j.id",
            (campaign_id, cluster),
        )
        return [(job_id, JobState(state), started, ended) for job_id, state, started, ended in rows]

    def recent_durations(self, campaign_id: int, latest: int) -> list[tuple[str, float, float]]:
        """(cluster, seconds, ended at) of the campaign's ``latest`` terminated jobs of highest ids (a range of
        an index, whatever the campaign's size)."""
        return self.conn.execute(
            "SELECT cluster, ended_at - started_at, ended_at FROM (SELECT cluster, started_at, ended_at FROM jobs "
            "WHERE campaign_id = ? AND state = 'terminated' ORDER BY id DESC LIMIT ?) WHERE started_at IS NOT NULL",
            (campaign_id, latest),
        ).fetchall()

    def running_since(self, campaign_id: int) -> list[tuple[str, float]]:
        """(cluster, started at) of the campaign's jobs running, known to their RM."""
        return self.conn.execute(
            "SELECT cluster, started_at FROM jobs WHERE campaign_id = ? AND state = 'running' "
            "AND unknown_since IS NULL AND started_at IS NOT NULL",
            (campaign_id,),
        ).fetchall()

    def forget_failures(self, job_ids: Sequence[int]) -> None:
        """These jobs' failures no longer steer where they run (their ends were not theirs)."""
        self.conn.executemany("DELETE FROM job_failures WHERE job_id = ?", [(job_id,) for job_id in job_ids])

    def blacklist(self, campaign_id: int | None, cluster: str) -> Event | None:
        """The open blacklist of ``cluster`` for a campaign (None: the admin's, for every campaign)."""
        if campaign_id is None:
            where, params = "code = 'ADMIN_BLACKLIST'", (cluster,)
        else:
            where, params = "code = 'BLACKLIST' AND campaign_id = ?", (cluster, campaign_id)
        row = self._one(
            f"SELECT {self._EVENT_COLUMNS} FROM events WHERE state = 'open' AND cluster = ? AND {where} "
            "ORDER BY id LIMIT 1",
            params,
        )
        return self._event(row) if row else None

    def causes(self, blacklist: Event) -> list[Event]:
        """A blacklist's causes: its parent and the later causes that joined it."""
        rows = self.conn.execute(
            f"SELECT {self._EVENT_COLUMNS} FROM events WHERE id = ? OR parent_id = ? ORDER BY id",
            (blacklist.parent_id, blacklist.id),
        )
        return [self._event(row) for row in rows]

    def blacklists_of(self, causes: Sequence[Event]) -> list[Event]:
        """The open blacklists the events ``causes`` caused (their parent) or joined (its children)."""
        found: dict[int, Event] = {}
        caused = [e.id for e in causes]
        joined = [e.parent_id for e in causes if e.parent_id is not None]
        for column, values in (("parent_id", caused), ("id", joined)):
            for chunk in _chunks(values):
                for row in self.conn.execute(
                    f"SELECT {self._EVENT_COLUMNS} FROM events WHERE state = 'open' AND code = 'BLACKLIST' "
                    f"AND {column} IN ({_marks(len(chunk))})",
                    chunk,
                ):
                    found[row[0]] = self._event(row)
        return [found[i] for i in sorted(found)]

    # ---- predictor figures ----------------------------------------------------------------------

    def add_durations(self, rows: Iterable[tuple[int, str, float, float]], bucket: float) -> None:
        """(campaign, cluster, seconds, ended at) of jobs that just terminated: added to the running sums of
        their campaign and of (campaign, cluster), and counted in the termination bucket (``bucket`` seconds
        wide) of their end. The cost grows with these rows only."""
        sums, ends = _duration_sums(rows, bucket)
        self.conn.executemany(
            "UPDATE campaign_stats SET duration_sum = duration_sum + ?, duration_n = duration_n + ?, "
            "duration_sq = duration_sq + ?, duration_max = max(coalesce(duration_max, 0), ?) WHERE campaign_id = ?",
            [row[:-1] for row in sums],
        )
        self.conn.executemany(
            "INSERT INTO cluster_stats (duration_sum, duration_n, duration_sq, duration_max, campaign_id, cluster) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (campaign_id, cluster) DO UPDATE SET "
            "duration_sum = duration_sum + excluded.duration_sum, duration_n = duration_n + excluded.duration_n, "
            "duration_sq = duration_sq + excluded.duration_sq, "
            "duration_max = max(coalesce(duration_max, 0), excluded.duration_max)",
            sums,
        )
        self.conn.executemany(
            "INSERT INTO spritz_ends (campaign_id, cluster, bucket, n) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (campaign_id, cluster, bucket) DO UPDATE SET n = n + excluded.n",
            [(*key, n) for key, n in ends.items()],
        )

    def remove_durations(self, rows: Iterable[tuple[int, str, float, float]], bucket: float) -> None:
        """Take back what :meth:`add_durations` added for these (campaign, cluster, seconds, ended at): ends that
        were not the jobs' own (a black hole's). The longest duration seen stays as it was."""
        sums, ends = _duration_sums(rows, bucket)
        taken = "duration_sum = duration_sum - ?, duration_n = duration_n - ?, duration_sq = duration_sq - ?"
        self.conn.executemany(
            f"UPDATE campaign_stats SET {taken} WHERE campaign_id = ?",
            [(total, n, squares, cid) for total, n, squares, _, cid, _ in sums],
        )
        self.conn.executemany(
            f"UPDATE cluster_stats SET {taken} WHERE campaign_id = ? AND cluster = ?",
            [(total, n, squares, cid, cluster) for total, n, squares, _, cid, cluster in sums],
        )
        self.conn.executemany(
            "UPDATE spritz_ends SET n = n - ? WHERE campaign_id = ? AND cluster = ? AND bucket = ?",
            [(n, *key) for key, n in ends.items()],
        )

    def stats(self, campaign_id: int) -> dict:
        row = self._one(
            f"SELECT {', '.join(STATS)} FROM campaign_stats WHERE campaign_id = ?",
            (campaign_id,),
        )
        return dict(zip(STATS, row, strict=True)) if row else dict.fromkeys(STATS)

    def cluster_stats(self, campaign_id: int) -> dict[str, dict]:
        """Spritz's figures of the campaign's jobs on each cluster where one terminated or was forecast."""
        rows = self.conn.execute(
            f"SELECT cluster, {', '.join(CLUSTER_STATS)} FROM cluster_stats WHERE campaign_id = ? ORDER BY cluster",
            (campaign_id,),
        )
        return {row[0]: dict(zip(CLUSTER_STATS, row[1:], strict=True)) for row in rows}

    def set_forecast(
        self,
        campaign_id: int,
        sample_at: float,
        sample_done: int,
        throughput: float | None,
        eta: float | None,
        **figures: float | int | None,
    ) -> None:
        """The campaign's latest forecast; ``figures`` are Spritz's: first_start, rate, left, eta_low, eta_high."""
        extra = "".join(f", {key} = ?" for key in figures)
        self.conn.execute(
            f"UPDATE campaign_stats SET sample_at = ?, sample_done = ?, throughput = ?, eta = ?{extra} "
            "WHERE campaign_id = ?",
            (sample_at, sample_done, throughput, eta, *figures.values(), campaign_id),
        )

    def set_cluster_forecasts(self, rows: Sequence[tuple]) -> None:
        """(campaign, cluster, first start, rate, left, eta, eta_low, eta_high) of the latest forecasts per
        cluster (the first start is kept once set)."""
        self.conn.executemany(
            "INSERT INTO cluster_stats (campaign_id, cluster, first_start, rate, left, eta, eta_low, eta_high) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (campaign_id, cluster) DO UPDATE SET "
            "first_start = coalesce(first_start, excluded.first_start), rate = excluded.rate, "
            "left = excluded.left, eta = excluded.eta, eta_low = excluded.eta_low, eta_high = excluded.eta_high",
            rows,
        )

    def window_ends(self, campaign_id: int, since: float) -> dict[str, int]:
        """Jobs of the campaign that terminated, per cluster, in the buckets starting at or after ``since``."""
        rows = self.conn.execute(
            "SELECT cluster, sum(n) FROM spritz_ends WHERE campaign_id = ? AND bucket >= ? GROUP BY cluster",
            (campaign_id, since),
        )
        return dict(rows.fetchall())

    def prune_ends(self, before: float) -> None:
        """Forget the termination buckets that start before ``before`` (out of every window)."""
        self.conn.execute("DELETE FROM spritz_ends WHERE bucket < ?", (before,))

    def on_clusters(self, campaign_id: int, now: float) -> dict[str, tuple[int, int, float, float | None]]:
        """Per cluster: (jobs queued or being submitted, jobs running, seconds the running ones have run, when
        the earliest running one started)."""
        out: dict[str, list] = {}
        rows = self.conn.execute(
            "SELECT cluster, state, count(*), sum(? - started_at), min(started_at) FROM jobs "
            "WHERE campaign_id = ? AND state IN ('launching', 'submitted', 'running') GROUP BY cluster, state",
            (now, campaign_id),
        )
        for cluster, state, n, elapsed, earliest in rows:
            figures = out.setdefault(cluster, [0, 0, 0.0, None])
            if state == JobState.RUNNING.value:
                figures[1:] = [n, max(0.0, elapsed or 0.0), earliest]
            else:
                figures[0] += n
        return {cluster: tuple(v) for cluster, v in out.items()}

    def job_failures(self, campaign_id: int) -> tuple[int, float | None, float | None]:
        """The campaign's failed jobs as its job events tell: (how many ever, the mean seconds its closed ones
        stayed open before a user fixed them, when the latest still open one opened)."""
        n, fixed, waited, latest = self._one(
            "SELECT count(*), count(closed_at), sum(closed_at - created_at), max(CASE WHEN state = 'open' "
            "THEN created_at END) FROM events WHERE campaign_id = ? AND class = 'job'",
            (campaign_id,),
        )
        return n, waited / fixed if fixed else None, latest

    def failed_fraction(self, since: float) -> float | None:
        """Of the jobs the state's campaigns ended since ``since`` (a termination bucket's start), the fraction
        that failed: job events over job events plus terminated jobs (a range of an index, and the termination
        buckets, which hold the window only)."""
        failed = self._one("SELECT count(*) FROM events WHERE class = 'job' AND created_at >= ?", (since,))[0]
        done = self._one("SELECT coalesce(sum(n), 0) FROM spritz_ends WHERE bucket >= ?", (since,))[0]
        return failed / (failed + done) if failed + done else None

    def recent_fix_delay(self, last: int = 100) -> float | None:
        """The mean seconds the latest ``last`` fixed job events of the state stayed open (read newest first
        along the events_class index)."""
        return self._one(
            "SELECT avg(waited) FROM (SELECT closed_at - created_at AS waited FROM events "
            "WHERE class = 'job' AND closed_at IS NOT NULL ORDER BY created_at DESC LIMIT ?)",
            (last,),
        )[0]

    def add_forecasts(self, rows: Sequence[tuple], now: float) -> None:
        """Record forecasts: (campaign, cluster ('' for the whole campaign), at, done, left, rate, mean, std,
        eta, eta_low, eta_high). The history is thinned as it ages so that it stays bounded: within the last
        hour, one forecast per minute (a newer one in the same minute replaces it); older ones, one per hour
        (the last of each hour), thinned each time a (campaign, cluster) gets the row of a new minute (a
        read of its rows over an hour old: one per hour). A week-long campaign keeps at most 61 + 168 rows
        per cluster."""
        for row in rows:
            campaign_id, cluster, at = row[0], row[1], row[2]
            last = self._one(
                "SELECT id, at FROM forecasts WHERE campaign_id = ? AND cluster = ? ORDER BY at DESC LIMIT 1",
                (campaign_id, cluster),
            )
            same_minute = last is not None and math.floor(last[1] / MINUTE) == math.floor(at / MINUTE)
            if same_minute:
                self.conn.execute("DELETE FROM forecasts WHERE id = ?", (last[0],))
            self.conn.execute(
                "INSERT INTO forecasts (campaign_id, cluster, at, done, left, rate, mean, std, eta, "
                "eta_low, eta_high) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            if last is not None and not same_minute:
                self.conn.execute(
                    "DELETE FROM forecasts WHERE campaign_id = ? AND cluster = ? AND at < ? AND id NOT IN "
                    "(SELECT max(id) FROM forecasts WHERE campaign_id = ? AND cluster = ? AND at < ? "
                    "GROUP BY CAST(at / ? AS INTEGER))",
                    (campaign_id, cluster, now - HOUR, campaign_id, cluster, now - HOUR, HOUR),
                )

    def forecasts(self, campaign_id: int, cluster: str = "") -> list[dict]:
        """The campaign's forecast history (or that of its jobs on ``cluster``), oldest first."""
        keys = ("at", "done", "left", "rate", "mean", "std", "eta", "eta_low", "eta_high")
        rows = self.conn.execute(
            f"SELECT {', '.join(keys)} FROM forecasts WHERE campaign_id = ? AND cluster = ? ORDER BY at",
            (campaign_id, cluster),
        )
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # ---- what the metascheduler sees and remembers ----------------------------------------------

    def grid_jobs(self, cluster: str) -> list[tuple[int, int, float, float | None]]:
        """(id, campaign, submitted_at, started_at) of cigri's jobs queued or running on the cluster."""
        return self.conn.execute(
            "SELECT id, campaign_id, submitted_at, started_at FROM jobs "
            f"WHERE cluster = ? AND {migrations.ACTIVE} AND state != 'launching' ORDER BY id",
            (cluster,),
        ).fetchall()

    def add_failures(self, rows: Iterable[tuple[int, int, str]]) -> None:
        """(job, campaign, cluster): the job failed or was killed there."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO job_failures (job_id, campaign_id, cluster) VALUES (?, ?, ?)", list(rows)
        )

    def failed_waiting(self, campaign_id: int) -> dict[str, int]:
        """Per cluster, the campaign's waiting jobs that failed or were killed there before."""
        rows = self.conn.execute(
            "SELECT f.cluster, count(*) FROM job_failures f JOIN jobs j ON j.id = f.job_id "
            "WHERE f.campaign_id = ? AND j.state = 'to_launch' GROUP BY f.cluster",
            (campaign_id,),
        )
        return dict(rows.fetchall())

    def add_usage(self, rows: Iterable[tuple[str, float]], now: float, half_life: float) -> None:
        """Add slot-seconds to users' decayed usage: the value so far halves every ``half_life`` seconds."""
        per: dict[str, float] = {}
        for user, slot_seconds in rows:
            per[user] = per.get(user, 0.0) + slot_seconds
        if not per:
            return
        old = self.usage(now, half_life, users=list(per))
        self.conn.executemany(
            "INSERT OR REPLACE INTO user_usage (user, value, at) VALUES (?, ?, ?)",
            [(user, old.get(user, 0.0) + added, now) for user, added in per.items()],
        )

    def usage(self, now: float, half_life: float, users: Sequence[str] | None = None) -> dict[str, float]:
        """Each user's slot-seconds, decayed to ``now`` (all users, or those given)."""
        sql, params = "SELECT user, value, at FROM user_usage", []
        if users is not None:
            sql += f" WHERE user IN ({_marks(len(users))})"
            params = list(users)
        return {
            user: value * 0.5 ** (max(0.0, now - at) / half_life) for user, value, at in self.conn.execute(sql, params)
        }

    def request_stop(self, job_ids: Sequence[int]) -> None:
        """Record that jobs are to be taken back from their cluster (before the RM is asked)."""
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET stop = 1 WHERE id IN ({_marks(len(chunk))})", chunk)

    def jobs_to_stop(self) -> list[tuple[int, int, str, str, str | None, float | None]]:
        """(id, campaign, cluster, state, remote_id, started_at) of jobs recorded to be stopped."""
        return self.conn.execute(
            "SELECT id, campaign_id, cluster, state, remote_id, started_at FROM jobs WHERE stop = 1 ORDER BY id"
        ).fetchall()

    def stopping(self, cluster: str) -> set[int]:
        """The jobs of the cluster recorded to be stopped."""
        return {r[0] for r in self.conn.execute("SELECT id FROM jobs WHERE stop = 1 AND cluster = ?", (cluster,))}

    def clear_stop(self, job_ids: Sequence[int]) -> None:
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET stop = 0 WHERE id IN ({_marks(len(chunk))})", chunk)

    def settings(self) -> dict[str, object]:
        """The effective configuration: the state's keys (grid config set), then :attr:`overrides` (the
        configuration file's and the environment's, which win) -> value."""
        return {**self.state_settings(), **self.overrides}

    def state_settings(self) -> dict[str, object]:
        """The keys recorded in the state (grid config set): key -> value."""
        return {key: json.loads(value) for key, value in self.conn.execute("SELECT key, value FROM settings")}

    def set_setting(self, key: str, value: object) -> None:
        self.conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def unset_setting(self, key: str) -> bool:
        """Remove a key; whether it was set."""
        return self.conn.execute("DELETE FROM settings WHERE key = ?", (key,)).rowcount > 0

    # ---- gridnotify (issue 14, item 3) ---------------------------------------------------------------

    def subscribe(self, user: str, kind: str, target: str, severity: str, now: float) -> bool:
        """Subscribe ``user``'s ``target`` (or change its severity); whether it is new."""
        new = self._one("SELECT 1 FROM subscriptions WHERE user = ? AND kind = ? AND target = ?", (user, kind, target))
        self.conn.execute(
            "INSERT INTO subscriptions (user, kind, target, severity, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (user, kind, target) DO UPDATE SET severity = excluded.severity",
            (user, kind, target, severity, now),
        )
        return new is None

    def unsubscribe(self, user: str, kind: str | None = None, target: str | None = None) -> int:
        """Remove ``user``'s subscriptions (those of ``kind`` and ``target`` when given) and their outbox;
        how many."""
        where, params = ["user = ?"], [user]
        for column, value in (("kind", kind), ("target", target)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        ids = [r[0] for r in self.conn.execute(f"SELECT id FROM subscriptions WHERE {' AND '.join(where)}", params)]
        for chunk in _chunks(ids):
            marks = _marks(len(chunk))
            self.conn.execute(f"DELETE FROM notifications WHERE subscription_id IN ({marks})", chunk)
            self.conn.execute(f"DELETE FROM subscriptions WHERE id IN ({marks})", chunk)
        return len(ids)

    def subscriptions(self, user: str | None = None) -> list[dict]:
        """Subscriptions (a user's, or everyone's), oldest first: id, user, kind, target, severity, created_at."""
        sql = "SELECT id, user, kind, target, severity, created_at FROM subscriptions"
        rows = self.conn.execute(sql + (" WHERE user = ?" if user else "") + " ORDER BY id", (user,) if user else ())
        keys = ("id", "user", "kind", "target", "severity", "created_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def notify_mark(self) -> int:
        """The last event the notifier has looked at."""
        return int(self._one("SELECT value FROM meta WHERE key = 'notify_event_id'")[0])

    def set_notify_mark(self, event_id: int) -> None:
        self.conn.execute("UPDATE meta SET value = ? WHERE key = 'notify_event_id'", (str(event_id),))

    def notify_end_mark(self) -> float:
        """The latest campaign end the notifier has looked at (0 before any)."""
        row = self._one("SELECT value FROM meta WHERE key = 'notify_end_at'")
        return float(row[0]) if row else 0.0

    def set_notify_end_mark(self, ended_at: float) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('notify_end_at', ?)", (repr(ended_at),))

    def events_after(self, event_id: int) -> list[tuple[Event, str | None, str | None]]:
        """Events newer than ``event_id``, oldest first, each with its campaign's user and name (None, None: a
        cluster's)."""
        columns = ", ".join("e." + c for c in self._EVENT_COLUMNS.split(", "))
        sql = (
            f"SELECT {columns}, c.user, c.name FROM events e LEFT JOIN campaigns c ON c.id = e.campaign_id "
            "WHERE e.id > ? ORDER BY e.id"
        )
        return [(self._event(row[:-2]), row[-2], row[-1]) for row in self.conn.execute(sql, (event_id,))]

    def ended_since(self, since: float) -> list[Campaign]:
        """Campaigns ended (terminated or cancelled) at or after ``since``."""
        ids = [r[0] for r in self.conn.execute("SELECT id FROM campaigns WHERE ended_at >= ? ORDER BY id", (since,))]
        return [self.campaign(i) for i in ids]

    def queue_notification(
        self, subscription_id: int, topic: str, severity: str, subject: str, body: str, now: float
    ) -> bool:
        """Queue a notification unless that subscription already has that topic (each is sent once); whether
        it was queued."""
        return (
            self.conn.execute(
                "INSERT OR IGNORE INTO notifications (subscription_id, topic, severity, subject, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (subscription_id, topic, severity, subject, body, now),
            ).rowcount
            > 0
        )

    def unsent_notifications(self, max_attempts: int) -> list[dict]:
        """Notifications not yet sent, tried fewer than ``max_attempts`` times, with their target, oldest first."""
        rows = self.conn.execute(
            "SELECT n.id, s.kind, s.target, n.topic, n.severity, n.subject, n.body, n.attempts FROM notifications n "
            "JOIN subscriptions s ON s.id = n.subscription_id WHERE n.sent_at IS NULL AND n.attempts < ? "
            "ORDER BY n.id",
            (max_attempts,),
        )
        keys = ("id", "kind", "target", "topic", "severity", "subject", "body", "attempts")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def notification_sent(self, notification_id: int, now: float) -> None:
        self.conn.execute("UPDATE notifications SET sent_at = ?, error = NULL WHERE id = ?", (now, notification_id))

    def notification_failed(self, notification_id: int, error: str) -> None:
        self.conn.execute(
            "UPDATE notifications SET attempts = attempts + 1, error = ? WHERE id = ?",
            (mask_text(error), notification_id),
        )

    def notifications(self) -> list[dict]:
        """Every queued notification: id, subscription_id, topic, severity, subject, sent_at, attempts, error."""
        rows = self.conn.execute(
            "SELECT id, subscription_id, topic, severity, subject, sent_at, attempts, error "
            "FROM notifications ORDER BY id"
        )
        keys = ("id", "subscription_id", "topic", "severity", "subject", "sent_at", "attempts", "error")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # ---- per-user job counts (admission rules, issue 14 item 2) ---------------------------------------------

    def user_jobs(self, user: str) -> int:
        """Jobs of ``user``'s running or paused campaigns not ended yet (waiting, launching, queued, running)."""
        return self._one(
            "SELECT count(*) FROM jobs j JOIN campaigns c ON c.id = j.campaign_id "
            "WHERE c.user = ? AND c.state IN ('in_treatment', 'paused') "
            "AND j.state IN ('to_launch', 'launching', 'submitted', 'running')",
            (user,),
        )[0]

    def campaign_jobs(self, campaign_id: int) -> int:
        """All jobs of a campaign, whatever their state."""
        return self._one("SELECT count(*) FROM jobs WHERE campaign_id = ?", (campaign_id,))[0]

    def strategy_states(self) -> dict[str, dict]:
        """Each metascheduler strategy's state, as it left it."""
        return {name: json.loads(state) for name, state in self.conn.execute("SELECT name, state FROM strategy_state")}

    def set_strategy_state(self, name: str, state: object) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO strategy_state (name, state) VALUES (?, ?)", (name, json.dumps(state))
        )

    # ---- replicas (finalize) --------------------------------------------------------------------

    LIVE_REPLICA = "('launching', 'submitted', 'running')"

    def add_replicas(self, rows: Sequence[tuple[int, str]], now: float) -> list[int]:
        """Record replicas (job, cluster) before any RM is called; return their ids. A job no longer queued or
        running, or already on that cluster, gets none. A replica counts as a launch on its cluster (its
        epilogue runs there)."""
        ids = []
        for job_id, cluster in rows:
            cur = self.conn.execute(
                "INSERT INTO replicas (job_id, campaign_id, cluster, origin, state, created_at) "
                "SELECT id, campaign_id, ?, batch_id, 'launching', ? FROM jobs "
                "WHERE id = ? AND state IN ('submitted', 'running') AND cluster != ?",
                (cluster, now, job_id, cluster),
            )
            if cur.rowcount:
                ids.append(cur.lastrowid)
                self.conn.execute(
                    "UPDATE campaign_clusters SET launched = launched + 1 WHERE cluster = ? "
                    "AND campaign_id = (SELECT campaign_id FROM jobs WHERE id = ?)",
                    (cluster, job_id),
                )
        return ids

    def replicas_to_submit(self) -> list[tuple[int, int, str, int, str, str]]:
        """(replica, campaign, cluster, job, job name, params) of the replicas recorded and not yet submitted."""
        return self.conn.execute(
            "SELECT r.id, r.campaign_id, r.cluster, r.job_id, j.name, j.params FROM replicas r "
            "JOIN jobs j ON j.id = r.job_id WHERE r.state = 'launching' ORDER BY r.id"
        ).fetchall()

    def submitted_replica(self, replica_id: int, remote_id: str, now: float) -> None:
        self.conn.execute(
            "UPDATE replicas SET state = 'submitted', remote_id = ?, submitted_at = ? WHERE id = ? "
            "AND state = 'launching'",
            (remote_id, now, replica_id),
        )

    def live_replicas(self, cluster: str) -> list[tuple[int, int, str, str]]:
        """(replica, campaign, state, remote_id) of the replicas queued or running on the cluster."""
        return self.conn.execute(
            "SELECT id, campaign_id, state, remote_id FROM replicas WHERE state IN ('submitted', 'running') "
            "AND cluster = ? ORDER BY id",
            (cluster,),
        ).fetchall()

    def replica_copies(self) -> list[tuple[int, int, str, float, float | None]]:
        """(job, campaign, cluster, submitted or recorded at, started_at) of every live replica."""
        return self.conn.execute(
            "SELECT job_id, campaign_id, cluster, coalesce(submitted_at, created_at), started_at FROM replicas "
            f"WHERE state IN {self.LIVE_REPLICA} ORDER BY id"
        ).fetchall()

    def replicated(self, campaign_id: int) -> set[int]:
        """The campaign's jobs that had a replica: over for their current copy, or become that copy (a job
        gets one at most)."""
        rows = self.conn.execute(
            "SELECT r.job_id FROM replicas r JOIN jobs j ON j.id = r.job_id WHERE r.campaign_id = ? "
            f"AND (r.state = 'promoted' OR (r.state NOT IN {self.LIVE_REPLICA} AND j.batch_id IS r.origin))",
            (campaign_id,),
        )
        return {row[0] for row in rows}

    def replicas_running(self, rows: Sequence[tuple[int, float]]) -> None:
        """(replica, started at) of replicas seen running."""
        self.conn.executemany(
            "UPDATE replicas SET state = 'running', started_at = ? WHERE id = ? AND state = 'submitted'",
            [(started, replica_id) for replica_id, started in rows],
        )

    def end_replicas(self, replica_ids: Sequence[int], state: str) -> None:
        """Replicas that ended on their own: 'failed' (killed or non-zero: dropped) or 'late' (their job had
        already ended)."""
        for chunk in _chunks(list(replica_ids)):
            self.conn.execute(
                f"UPDATE replicas SET state = ? WHERE id IN ({_marks(len(chunk))}) AND state IN {self.LIVE_REPLICA}",
                [state, *chunk],
            )

    def replica_won(self, replica_id: int, started: float | None, ended: float) -> int | None:
        """The replica ended well while its job was still queued or running: the job is terminated as the
        replica ran it (its cluster, remote id and times: the output read is the replica's), and the row now
        holds the job's old copy, to kill, as do the job's other replicas. Returns the job, or None, changing
        nothing, when the job was no longer that copy's (ended, cancelled, run again)."""
        row = self._one(
            "SELECT r.job_id, r.cluster, r.remote_id, r.started_at, j.cluster, j.remote_id, j.started_at "
            "FROM replicas r JOIN jobs j ON j.id = r.job_id JOIN campaigns c ON c.id = j.campaign_id WHERE r.id = ? "
            f"AND r.state IN {self.LIVE_REPLICA} AND j.state IN ('submitted', 'running') "
            "AND j.batch_id IS r.origin AND j.kill_requested = 0 AND c.state = 'in_treatment'",
            (replica_id,),
        )
        if row is None:
            return None
        job_id, cluster, remote_id, replica_started, job_cluster, job_remote, job_started = row
        self.conn.execute(
            "UPDATE jobs SET cluster = ?, remote_id = ?, started_at = NULL, unknown_since = NULL WHERE id = ?",
            (cluster, remote_id, job_id),
        )
        self.mark_ended([(job_id, JobState.TERMINATED, 0, replica_started if started is None else started, ended)])
        self.conn.execute(
            f"UPDATE replicas SET state = 'kill' WHERE job_id = ? AND id != ? AND state IN {self.LIVE_REPLICA}",
            (job_id, replica_id),
        )
        self.conn.execute(
            "UPDATE replicas SET state = 'kill', cluster = ?, remote_id = ?, started_at = ? WHERE id = ?",
            (job_cluster, job_remote, job_started, replica_id),
        )
        return job_id

    def promote_replicas(self) -> list[int]:
        """Jobs sent back to their bag (killed, taken back, run elsewhere: not cancelled) while a replica of
        theirs is queued or running take that replica as their copy, rather than waiting to run again; return
        them. The replica row is then 'promoted'."""
        rows = self.conn.execute(
            "SELECT min(r.id), r.job_id FROM replicas r JOIN jobs j ON j.id = r.job_id "
            "JOIN campaigns c ON c.id = j.campaign_id WHERE r.state IN ('submitted', 'running') "
            "AND j.state = 'to_launch' AND c.state = 'in_treatment' GROUP BY r.job_id"
        ).fetchall()
        for replica_id, job_id in rows:
            self.conn.execute(
                "UPDATE jobs SET (state, cluster, remote_id, submitted_at, started_at, batch_id) = "
                "(SELECT state, cluster, remote_id, submitted_at, started_at, NULL FROM replicas WHERE id = ?) "
                "WHERE id = ?",
                (replica_id, job_id),
            )
            self.conn.execute("UPDATE replicas SET state = 'promoted' WHERE id = ?", (replica_id,))
        return [job_id for _, job_id in rows]

    def stale_replicas(self) -> int:
        """Mark to kill the live replicas whose job left the copy they double (it ended, was cancelled or
        requeued) or whose campaign is not running (paused, cancelled, over); return how many."""
        return self.conn.execute(
            f"UPDATE replicas SET state = 'kill' WHERE state IN {self.LIVE_REPLICA} AND NOT EXISTS ("
            "SELECT 1 FROM jobs j JOIN campaigns c ON c.id = j.campaign_id WHERE j.id = replicas.job_id "
            "AND j.state IN ('submitted', 'running') AND j.batch_id IS replicas.origin AND j.kill_requested = 0 "
            "AND c.state = 'in_treatment')"
        ).rowcount

    def replicas_to_kill(self) -> list[tuple[int, int, str, str | None, float | None]]:
        """(replica, campaign, cluster, remote_id, started_at) of the copies to cancel (no remote id: perhaps
        never submitted, looked up by its batch key)."""
        return self.conn.execute(
            "SELECT id, campaign_id, cluster, remote_id, started_at FROM replicas WHERE state = 'kill' ORDER BY id"
        ).fetchall()

    def killed_replicas(self, replica_ids: Sequence[int]) -> None:
        for chunk in _chunks(list(replica_ids)):
            self.conn.execute(
                f"UPDATE replicas SET state = 'killed' WHERE id IN ({_marks(len(chunk))}) AND state = 'kill'", chunk
            )
