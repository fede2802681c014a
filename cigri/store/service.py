"""Mixed into :class:`~cigri.store.Store`: the reads and writes of ``grid serve`` that no command makes: a
campaign's jobs and events a page at a time (LIMIT and OFFSET, or keyset paging, in SQL: a campaign may hold
millions of jobs), and a campaign's new name."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Sequence

from ..model import CampaignState, Event, Job, JobState
from ._sql import _chunks, _marks

_STATES = {state.value: state for state in JobState}
_NONE = dict.fromkeys(JobState, 0)


class Service:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]
    _JOB_COLUMNS: str
    _EVENT_COLUMNS: str
    _job: Callable[[tuple], Job]
    _event: Callable[[tuple], Event]
    _listed: Callable[..., sqlite3.Cursor]

    def job_page(self, campaign_id: int, limit: int, offset: int = 0, after: int | None = None) -> list[Job]:
        """``limit`` jobs of a campaign in id order: from the ``offset``-th, or (keyset paging) those whose id
        is above ``after``. The campaign's first and last ids are each one seek per state in
        ``jobs_campaign_state``; the page is then read along the table in id order between them
        (``+campaign_id`` keeps SQLite from sorting the whole campaign through that index). A page by
        ``after`` costs its limit wherever it is; so does one by ``offset`` when the campaign's ids are
        consecutive (no other campaign's jobs among them: a campaign submitted at once), else its offset."""
        bounds = [
            self._one(f"SELECT {edge}(id) FROM jobs WHERE campaign_id = ? AND state = ?", (campaign_id, state.value))
            for state in JobState
            for edge in ("min", "max")
        ]
        ids = [row[0] for row in bounds if row and row[0] is not None]
        if not ids:
            return []
        low, high = min(ids), max(ids)
        if after is not None:
            low, offset = max(low, after + 1), 0
        elif offset and self._consecutive(campaign_id, low, high):
            low, offset = low + offset, 0
        rows = self.conn.execute(
            f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE id BETWEEN ? AND ? AND +campaign_id = ? "
            "ORDER BY id LIMIT ? OFFSET ?",
            (low, high, campaign_id, limit, offset),
        )
        return [self._job(row) for row in rows]

    def _consecutive(self, campaign_id: int, low: int, high: int) -> bool:
        """Whether every id from ``low`` to ``high`` is one of the campaign's jobs (its job counts say how many
        it has)."""
        (count,) = self._one("SELECT coalesce(sum(n), 0) FROM job_counts WHERE campaign_id = ?", (campaign_id,))
        return count == high - low + 1

    def campaign_list(
        self, *, user: str | None = None, states: Sequence[CampaignState] | None = None
    ) -> list[tuple[int, str, str, str, str, float, float | None, int]]:
        """(id, name, user, type, state, submitted at, ended at, jobs) of the campaigns :meth:`campaigns` lists,
        in its order, their JDLs left unread."""
        return self._listed("id, name, user, type, state, submitted_at, ended_at, nb_jobs", user, states).fetchall()

    def counts_of(self, campaign_ids: Collection[int]) -> dict[int, dict[JobState, int]]:
        """The jobs of each of ``campaign_ids`` by state (every state, 0 when none), read at once: a list of a
        thousand campaigns is one query, not a thousand."""
        counts = {cid: dict(_NONE) for cid in campaign_ids}
        for chunk in _chunks(list(counts)):
            rows = self.conn.execute(
                f"SELECT campaign_id, state, n FROM job_counts WHERE campaign_id IN ({_marks(len(chunk))})", chunk
            )
            for cid, state, n in rows:
                counts[cid][_STATES[state]] = n
        return counts

    def version(self) -> tuple[int, int]:
        """What changes whenever something was committed since the last call: by another connection (SQLite's
        ``data_version``) or by this one (its ``total_changes``)."""
        (other,) = self._one("PRAGMA data_version")
        return other, self.conn.total_changes

    def event_page(self, campaign_id: int, open_only: bool, limit: int, offset: int) -> tuple[int, list[Event]]:
        """(how many, ``limit`` of them from the ``offset``-th, oldest first) of a campaign's events, open ones
        or all."""
        where = "campaign_id = ?" + (" AND state = 'open'" if open_only else "")
        (total,) = self._one(f"SELECT count(*) FROM events WHERE {where}", (campaign_id,))
        rows = self.conn.execute(
            f"SELECT {self._EVENT_COLUMNS} FROM events WHERE {where} ORDER BY id LIMIT ? OFFSET ?",
            (campaign_id, limit, offset),
        )
        return total, [self._event(row) for row in rows]

    def rename_campaign(self, campaign_id: int, name: str) -> None:
        self.conn.execute("UPDATE campaigns SET name = ? WHERE id = ?", (name, campaign_id))
