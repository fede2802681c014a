"""Mixed into :class:`~cigri.store.Store`: the reads and writes of ``grid serve`` that no command makes: a
campaign's jobs and events a page at a time (LIMIT and OFFSET in SQL: a campaign may hold millions of jobs), and
a campaign's new name."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..model import Event, Job, JobState


class Service:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]
    _JOB_COLUMNS: str
    _EVENT_COLUMNS: str
    _job: Callable[[tuple], Job]
    _event: Callable[[tuple], Event]

    def job_page(self, campaign_id: int, limit: int, offset: int) -> list[Job]:
        """``limit`` jobs of a campaign from the ``offset``-th, in id order. The campaign's first and last ids
        are each one seek per state in ``jobs_campaign_state``; the page is then read along the table in id
        order between them (``+campaign_id`` keeps SQLite from sorting the whole campaign through that index),
        so a page costs its offset and limit, not the campaign's size."""
        bounds = [
            self._one(f"SELECT {edge}(id) FROM jobs WHERE campaign_id = ? AND state = ?", (campaign_id, state.value))
            for state in JobState
            for edge in ("min", "max")
        ]
        ids = [row[0] for row in bounds if row and row[0] is not None]
        if not ids:
            return []
        rows = self.conn.execute(
            f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE id BETWEEN ? AND ? AND +campaign_id = ? "
            "ORDER BY id LIMIT ? OFFSET ?",
            (min(ids), max(ids), campaign_id, limit, offset),
        )
        return [self._job(row) for row in rows]

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
