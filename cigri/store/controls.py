"""Mixed into :class:`~cigri.store.Store`: what cigri asks of the RMs for jobs already sent there, each
recorded before the RM is asked: take-backs (recall), kills (a user's cancel, nikita's), holds and
releases, stops; and the orphans, copies left on a cluster while their job runs elsewhere, to cancel."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from . import migrations
from ._sql import _chunks, _marks


class Controls:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]
    took_back: Callable[[str, float], None]  # Clusters'

    # -- take-backs

    def overdue_jobs(
        self, cluster: str, before: float, *, campaigns: Sequence[int] | None = None, since: float | None = None
    ) -> list[tuple[int, int, str | None, float]]:
        """(id, campaign, remote id, submitted at) of cigri's jobs queued on the cluster since before ``before``
        (and not before ``since``), not yet being taken back nor killed; of these campaigns only, if named."""
        where, params = "", [cluster, before]
        if since is not None:
            where += " AND submitted_at >= ?"
            params.append(since)
        if campaigns is not None:
            where += f" AND campaign_id IN ({_marks(len(campaigns))})"
            params += campaigns
        return self.conn.execute(
            f"SELECT id, campaign_id, remote_id, submitted_at FROM jobs WHERE cluster = ? AND {migrations.ACTIVE} "
            "AND state = 'submitted' AND submitted_at < ? AND recall = 0 AND kill_requested = 0 AND nikita IS NULL"
            f"{where} ORDER BY id",
            params,
        ).fetchall()

    def request_recall(self, job_ids: Sequence[int], cluster: str, now: float) -> None:
        """Record that pending jobs are to be taken back from their cluster (before the RM is asked)."""
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET recall = 1 WHERE id IN ({_marks(len(chunk))})", chunk)
        self.took_back(cluster, now)

    def jobs_to_recall(self) -> list[tuple[int, str, str, str | None]]:
        """(id, cluster, state, remote_id) of jobs recorded to be taken back."""
        return self.conn.execute("SELECT id, cluster, state, remote_id FROM jobs WHERE recall = 1").fetchall()

    def clear_recall(self, job_ids: Sequence[int]) -> None:
        for chunk in _chunks(list(job_ids)):
            self.conn.execute(f"UPDATE jobs SET recall = 0 WHERE id IN ({_marks(len(chunk))})", chunk)

    # -- kills

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

    def nikita_jobs(
        self, cluster: str, *, started_before: float | None = None, submitted_before: float | None = None
    ) -> list[tuple]:
        """(id, campaign, state, remote_id, submitted_at, started_at, kill asked by nikita, free, movable) of
        cigri's jobs queued or running on the cluster with a remote id, by id. ``free``: no kill, take-back or
        stop asked; ``movable``: a running default campaign's job, not held (those nikita may take back).
        With ``started_before``, the running jobs are only those that started before it; with
        ``submitted_before``, the queued ones only those submitted before it; those nikita already asked to
        kill are always there. Each part seeks an index: a pass reads what it may kill, not every job."""
        columns = (
            "id, campaign_id, state, remote_id, submitted_at, started_at, nikita, kill_requested, recall, stop, hold"
        )
        on_cluster = f"SELECT {columns} FROM jobs WHERE cluster = ? AND {migrations.ACTIVE} AND remote_id IS NOT NULL"
        parts, params, asked = [], [], []
        if submitted_before is None:
            parts.append(f"{on_cluster} AND state = 'submitted'")
            params.append(cluster)
        else:  # a queued job has no start time (one that has is read whatever its submission)
            parts.append(f"{on_cluster} AND state = 'submitted' AND started_at IS NULL AND submitted_at < ?")
            parts.append(f"{on_cluster} AND state = 'submitted' AND started_at IS NOT NULL")
            params += [cluster, submitted_before, cluster]
            asked.append(
                ("submitted", "started_at IS NULL AND (submitted_at IS NULL OR NOT submitted_at < ?)", submitted_before)
            )
        if started_before is None:
            parts.append(f"{on_cluster} AND state = 'running'")
            params.append(cluster)
        else:
            parts.append(f"{on_cluster} AND state = 'running' AND started_at < ?")
            parts.append(f"{on_cluster} AND state = 'running' AND started_at IS NULL")
            params += [cluster, started_before, cluster]
            asked.append(("running", "NOT started_at < ?", started_before))
        for state, left_out, at in asked:  # what nikita asked to kill, of the jobs the parts above leave out
            parts.append(
                f"SELECT {columns} FROM jobs INDEXED BY jobs_nikita WHERE nikita IS NOT NULL AND cluster = ? "
                f"AND state = '{state}' AND remote_id IS NOT NULL AND ({left_out})"
            )
            params += [cluster, at]
        rows = self.conn.execute(
            "SELECT j.id, j.campaign_id, j.state, j.remote_id, j.submitted_at, j.started_at, j.nikita, "
            "j.kill_requested = 0 AND j.recall = 0 AND j.stop = 0 AND j.nikita IS NULL, "
            f"j.hold = 0 AND c.state = 'in_treatment' AND c.type != 'test' FROM ({' UNION ALL '.join(parts)}) j "
            "JOIN campaigns c ON c.id = j.campaign_id ORDER BY j.id",
            params,
        )
        return [(*row[:7], bool(row[7]), bool(row[8])) for row in rows]

    def queued_counts(self, cluster: str) -> list[tuple[int, int]]:
        """(campaign, jobs) of cigri's jobs queued on the cluster (sent, not started), in campaign order, from
        the counts of the active jobs (``job_places``)."""
        return self.conn.execute(
            "SELECT campaign_id, n FROM job_places WHERE cluster = ? AND state = 'submitted' AND n != 0 "
            "ORDER BY campaign_id",
            (cluster,),
        ).fetchall()

    def ask_kills(self, rows: Sequence[tuple[int, str]]) -> None:
        """(job, reason): nikita is about to ask the job's RM to kill it."""
        self.conn.executemany("UPDATE jobs SET nikita = ? WHERE id = ?", [(reason, job_id) for job_id, reason in rows])

    def kills_to_clear(self) -> bool:
        """Has a job no longer queued or running a kill nikita asked (what :meth:`clear_kills` without ids
        forgets)? A seek of the index of asked kills: a pass with none takes no write lock for nothing."""
        return (
            self._one(
                "SELECT 1 FROM jobs INDEXED BY jobs_nikita WHERE nikita IS NOT NULL "
                "AND state NOT IN ('submitted', 'running') LIMIT 1"
            )
            is not None
        )

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

    # -- holds

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
            # the planner would scan every job of the running campaigns; few jobs are ever held
            "SELECT j.id, j.cluster, j.state, j.remote_id FROM jobs j INDEXED BY jobs_hold "
            "JOIN campaigns c ON c.id = j.campaign_id WHERE j.hold != 0 AND c.state = 'in_treatment' ORDER BY j.id"
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

    # -- stops

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

    # -- orphans

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

    def drop_orphans(self, ids: Sequence[int]) -> None:
        for chunk in _chunks(list(ids)):
            self.conn.execute(f"DELETE FROM orphans WHERE id IN ({_marks(len(chunk))})", chunk)
