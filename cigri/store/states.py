"""Mixed into :class:`~cigri.store.Store`: what a change of jobs' states keeps up to date, written by the
code that changes them, in the same transaction (migration ``020_counters`` dropped the triggers that did
it row by row, three of them firing on every job's every change):

- ``job_counts``: jobs per (campaign, state), so that nothing counts a million rows;
- ``data_files.waiting`` and ``remaining``: the jobs using each input file that are to_launch, and not yet
  final (the ``data_files_unneeded`` trigger still marks a cluster's copy once no remaining job uses it);
- ``outputs_due``: the jobs of a campaign with outputs to gather that just terminated;
- ``job_places``: the active jobs (launching, submitted, running) per (cluster, state, campaign), so that a
  pass counts a cluster's queued and running jobs without reading them (migration ``027_job_places``).

A method that changes states reads the jobs it is about to change (:meth:`_before`, with the same
condition as its UPDATE), changes them in as few statements as SQLite's parameter limit allows
(:meth:`_update_rows` for values that differ from job to job), then hands both to :meth:`_moved`; a move
from one known state (:meth:`_move_rows`) reads nothing before: its UPDATE returns the jobs it moved. Its
cost grows with the jobs it changes, never with the state file.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import chain

from ._sql import CHUNK, _chunks, _marks

FINAL = frozenset({"terminated", "cancelled", "skipped"})  # a job there needs no file (migrations.FINAL)
ACTIVE = frozenset({"launching", "submitted", "running"})  # a job there is on a cluster (migrations.ACTIVE)

# (campaign, state, jobs more or fewer) and (jobs waiting more or fewer, remaining more or fewer, file)
COUNT_JOBS = (
    "INSERT INTO job_counts (campaign_id, state, n) VALUES (?, ?, ?) "
    "ON CONFLICT (campaign_id, state) DO UPDATE SET n = n + excluded.n"
)
COUNT_FILES = "UPDATE data_files SET waiting = waiting + ?, remaining = remaining + ? WHERE id = ?"
# (cluster, state, campaign, jobs more or fewer) of the active jobs
COUNT_PLACES = (
    "INSERT INTO job_places (cluster, state, campaign_id, n) VALUES (coalesce(?, ''), ?, ?, ?) "
    "ON CONFLICT (cluster, state, campaign_id) DO UPDATE SET n = n + excluded.n"
)

Before = tuple[int, int, str, str | None]  # (job, campaign, state, cluster) just before a change


class JobStates:
    conn: sqlite3.Connection

    def _before(self, where: str, params: Sequence = ()) -> list[Before]:
        """(id, campaign, state, cluster) of the jobs ``where`` selects (read before they change)."""
        return self.conn.execute(f"SELECT id, campaign_id, state, cluster FROM jobs WHERE {where}", params).fetchall()

    def _before_ids(self, job_ids: Sequence[int], guard: str = "", params: Sequence = ()) -> list[Before]:
        """:meth:`_before` of these jobs, those ``guard`` (an SQL condition, with ``params``) also selects."""
        out: list[Before] = []
        for chunk in _chunks(list(job_ids)):
            out += self._before(f"id IN ({_marks(len(chunk))}){guard}", [*chunk, *params])
        return out

    def _update_rows(
        self, assignments: str, columns: Sequence[str], rows: Sequence[tuple], guard: str = "", returning: str = ""
    ) -> list[tuple]:
        """``UPDATE jobs SET assignments`` for each row, its values named ``v.<column>`` (the first column is
        the job's ``id``; one row per job), in one statement per chunk of rows rather than one per job; the
        ``returning`` columns (after the change) of the jobs it changed, when asked."""
        names = ", ".join(f"column{i} AS {name}" for i, name in enumerate(columns, 1))
        one = f"({_marks(len(columns))})"
        back = f" RETURNING {returning}" if returning else ""
        out: list[tuple] = []
        for chunk in _chunks(rows, max(1, CHUNK // len(columns))):
            out += self.conn.execute(
                f"UPDATE jobs SET {assignments} FROM (SELECT {names} FROM (VALUES {', '.join([one] * len(chunk))})) "
                f"AS v WHERE jobs.id = v.id{guard}{back}",
                list(chain.from_iterable(chunk)),
            ).fetchall()
        return out

    def _move_rows(self, old: str, new: str, assignments: str, columns: Sequence[str], rows: Sequence[tuple]) -> None:
        """Move the jobs of ``rows`` that are in state ``old`` to state ``new`` (:meth:`_update_rows`, with
        ``assignments`` for the other columns) and keep the counts: the UPDATE returns the jobs it moved, all
        of them from ``old``, so nothing is read before. Never a termination (their clusters, which only a
        termination's outputs need, are read after the change)."""
        moved = self._update_rows(
            f"state = '{new}', {assignments}", columns, rows, f" AND jobs.state = '{old}'", "id, campaign_id, cluster"
        )
        self._moved([(job_id, campaign_id, old, cluster) for job_id, campaign_id, cluster in moved], new)

    def _moved(self, before: Sequence[Before], after: str | Mapping[int, str], cluster: str | None = None) -> None:
        """Keep the counts of the jobs ``before`` lists, now in state ``after`` (one for all, or each job's);
        ``cluster``: where they now are, when the change also placed them (a batch's jobs), else where they
        were."""
        if isinstance(after, str):
            moves = [(job_id, campaign, old, where, after) for job_id, campaign, old, where in before if old != after]
        else:
            moves = [
                (job_id, campaign_id, old, where, new)
                for job_id, campaign_id, old, where in before
                if (new := after[job_id]) != old
            ]
        if not moves:
            return
        # the moves counted by kind (a handful of kinds for thousands of jobs), then the counts from the kinds
        counts: dict[tuple[int, str], int] = defaultdict(int)
        places: dict[tuple[str | None, str, int], int] = defaultdict(int)
        campaigns = set()
        for (campaign_id, old, where, new), n in Counter(move[1:] for move in moves).items():
            counts[campaign_id, old] -= n
            counts[campaign_id, new] += n
            if old in ACTIVE:
                places[where, old, campaign_id] -= n
            if new in ACTIVE:
                places[where if cluster is None else cluster, new, campaign_id] += n
            campaigns.add(campaign_id)
        self.conn.executemany(
            COUNT_JOBS,
            [(campaign_id, state, n) for (campaign_id, state), n in counts.items() if n],
        )
        self._placed(places)
        with_files = self._having("data_files", campaigns)
        if with_files:
            self._move_files([move for move in moves if move[1] in with_files])
        ends = [move for move in moves if move[4] == "terminated"]
        if ends and (gathered := self._having("output_campaigns", {move[1] for move in ends})):
            self.conn.executemany(
                "INSERT OR IGNORE INTO outputs_due (job_id, cluster) VALUES (?, coalesce(?, ''))",
                [(job_id, cluster) for job_id, campaign_id, _, cluster, _ in ends if campaign_id in gathered],
            )

    def _moved_together(self, campaign_id: int, old: str, new: str, where: str, params: Sequence) -> int:
        """Change the state of every job of the campaign that ``where`` selects (all in state ``old``) to
        ``new``, keeping the counts as :meth:`_moved` does but from sums, not from a row per job (a griddel
        of ten million waiting jobs reads no job into memory); return how many changed. Never a termination
        (no outputs become due)."""
        per_file: list[tuple[int, int]] = []
        if old != new and self._having("data_files", {campaign_id}):
            per_file = self.conn.execute(
                "SELECT f.file_id, count(*) FROM jobs j JOIN job_files f ON f.job_id = j.id "
                f"WHERE {where} GROUP BY f.file_id ORDER BY f.file_id",
                params,
            ).fetchall()
        per_cluster: list[tuple[str | None, int]] = []
        if old != new and (old in ACTIVE or new in ACTIVE):  # active jobs are counted per cluster
            per_cluster = self.conn.execute(
                f"SELECT cluster, count(*) FROM jobs WHERE {where} GROUP BY cluster", params
            ).fetchall()
        n = self.conn.execute(f"UPDATE jobs SET state = ? WHERE {where}", [new, *params]).rowcount
        if not n or old == new:
            return n
        self.conn.executemany(
            COUNT_JOBS,
            [(campaign_id, old, -n), (campaign_id, new, n)],
        )
        places: dict[tuple[str | None, str, int], int] = defaultdict(int)
        for cluster, jobs in per_cluster:
            if old in ACTIVE:
                places[cluster, old, campaign_id] -= jobs
            if new in ACTIVE:
                places[cluster, new, campaign_id] += jobs
        self._placed(places)
        waiting = (new == "to_launch") - (old == "to_launch")
        remaining = (new not in FINAL) - (old not in FINAL)
        self.conn.executemany(
            COUNT_FILES,
            [(waiting * jobs, remaining * jobs, file_id) for file_id, jobs in per_file if waiting or remaining],
        )
        return n

    def _placed(self, places: Mapping[tuple[str | None, str, int], int]) -> None:
        """Add to ``job_places`` the active jobs more or fewer per (cluster, state, campaign); a count down to 0
        goes (the table holds what is active now, not every campaign that ever ran)."""
        rows = [(cluster, state, campaign_id, n) for (cluster, state, campaign_id), n in places.items() if n]
        if rows:
            self.conn.executemany(COUNT_PLACES, rows)
            self.conn.executemany(
                "DELETE FROM job_places WHERE cluster = coalesce(?, '') AND state = ? AND campaign_id = ? AND n = 0",
                [row[:3] for row in rows if row[3] < 0],
            )

    def _having(self, table: str, campaigns: set[int]) -> set[int]:
        """Those of the campaigns with a row in ``table`` (data_files, output_campaigns: seeks by campaign)."""
        return {
            campaign_id
            for campaign_id in campaigns
            if self.conn.execute(f"SELECT 1 FROM {table} WHERE campaign_id = ? LIMIT 1", (campaign_id,)).fetchone()
        }

    def _move_files(self, moves: Sequence[tuple[int, int, str, str | None, str]]) -> None:
        """The jobs waiting for and needing each input file, after these jobs changed state."""
        change: dict[int, tuple[int, int]] = {}
        for job_id, _, old, _, new in moves:
            waiting = (new == "to_launch") - (old == "to_launch")
            remaining = (new not in FINAL) - (old not in FINAL)
            if waiting or remaining:
                change[job_id] = (waiting, remaining)
        per_file: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for chunk in _chunks(list(change)):
            rows = self.conn.execute(
                f"SELECT job_id, file_id FROM job_files WHERE job_id IN ({_marks(len(chunk))})", chunk
            )
            for job_id, file_id in rows:
                per_file[file_id][0] += change[job_id][0]
                per_file[file_id][1] += change[job_id][1]
        self.conn.executemany(
            COUNT_FILES,
            [(waiting, remaining, file_id) for file_id, (waiting, remaining) in sorted(per_file.items())],
        )
