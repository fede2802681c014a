"""Mixed into :class:`~cigri.store.Store`: batches, a pass's submissions to a cluster: recorded
('submitting', its jobs launching) before the RM is called, then done or abandoned; and the pack layout
its first submission fixed."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from ._sql import _chunks, _marks
from .states import JobStates


class Batches(JobStates):
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]

    def create_batch(self, cluster: str, campaign_id: int, job_ids: Sequence[int], now: float) -> int:
        cur = self.conn.execute(
            "INSERT INTO batches (cluster, campaign_id, state, created_at) VALUES (?, ?, 'submitting', ?)",
            (cluster, campaign_id, now),
        )
        batch_id = cur.lastrowid
        # the jobs it takes, all from to_launch, as its UPDATE returns them: nothing is read before (they had
        # no cluster: the counts place them on the batch's)
        moved = []
        for chunk in _chunks(list(job_ids)):
            moved += self.conn.execute(
                "UPDATE jobs SET state = 'launching', cluster = ?, batch_id = ? "
                f"WHERE id IN ({_marks(len(chunk))}) AND state = 'to_launch' RETURNING id, campaign_id",
                [cluster, batch_id, *chunk],
            ).fetchall()
        self._moved([(job_id, campaign, "to_launch", None) for job_id, campaign in moved], "launching", cluster)
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
        self._move_rows(
            "launching",
            "submitted",
            "remote_id = v.remote, submitted_at = v.at",
            ("id", "remote", "at"),
            [(job_id, remote, now) for job_id, remote in remote_ids.items()],
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
        before = self._before("batch_id = ? AND state = 'launching'", (batch_id,))
        self.conn.execute(
            "UPDATE jobs SET state = 'to_launch', cluster = NULL, batch_id = NULL "
            "WHERE batch_id = ? AND state = 'launching'",
            (batch_id,),
        )
        self._moved(before, "to_launch")
        self.conn.execute("UPDATE batches SET state = 'abandoned' WHERE id = ?", (batch_id,))

    def leave_batch(self, batch_id: int, job_ids: Sequence[int]) -> None:
        """These jobs leave the batch before it is submitted: back to to_launch."""
        before = self._before_ids(job_ids, " AND batch_id = ? AND state = 'launching'", (batch_id,))
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(
                "UPDATE jobs SET state = 'to_launch', cluster = NULL, batch_id = NULL "
                f"WHERE id IN ({_marks(len(chunk))}) AND batch_id = ? AND state = 'launching'",
                [*chunk, batch_id],
            )
        self._moved(before, "to_launch")
