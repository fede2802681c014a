"""Mixed into :class:`~cigri.store.Store`: replicas (finalize): extra copies of a queued or running job on
another cluster, the first to end well terminating the job."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from ..model import JobState
from ._sql import _chunks, _marks
from .states import JobStates


class Replicas(JobStates):
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]
    mark_ended: Callable[..., None]  # Jobs'

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

    def has_live_replicas(self) -> bool:
        """Is a replica being submitted, queued or running anywhere?"""
        return self._one(f"SELECT 1 FROM replicas WHERE state IN {self.LIVE_REPLICA} LIMIT 1") is not None

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
            "SELECT r.job_id, r.cluster, r.remote_id, r.started_at, j.cluster, j.remote_id, j.started_at, "
            "j.campaign_id, j.state "
            "FROM replicas r JOIN jobs j ON j.id = r.job_id JOIN campaigns c ON c.id = j.campaign_id WHERE r.id = ? "
            f"AND r.state IN {self.LIVE_REPLICA} AND j.state IN ('submitted', 'running') "
            "AND j.batch_id IS r.origin AND j.kill_requested = 0 AND c.state = 'in_treatment'",
            (replica_id,),
        )
        if row is None:
            return None
        job_id, cluster, remote_id, replica_started, job_cluster, job_remote, job_started, campaign_id, state = row
        self.conn.execute(
            "UPDATE jobs SET cluster = ?, remote_id = ?, started_at = NULL, unknown_since = NULL WHERE id = ?",
            (cluster, remote_id, job_id),
        )
        if cluster != job_cluster:  # the job is now the replica's copy, there
            self._placed({(job_cluster, state, campaign_id): -1, (cluster, state, campaign_id): 1})
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
            before = self._before("id = ?", (job_id,))
            self.conn.execute(
                "UPDATE jobs SET (state, cluster, remote_id, submitted_at, started_at, batch_id) = "
                "(SELECT state, cluster, remote_id, submitted_at, started_at, NULL FROM replicas WHERE id = ?) "
                "WHERE id = ?",
                (replica_id, job_id),
            )
            state, cluster = self._one("SELECT state, cluster FROM jobs WHERE id = ?", (job_id,))
            self._moved(before, state, cluster)
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
