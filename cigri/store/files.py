"""Mixed into :class:`~cigri.store.Store`: input files, the jobs using them, and each cluster's cache
(migration ``014_files``; issue 13, BOINC's locality scheduling).

A file is a campaign's (its key is its name under the campaign's ``data_source``); ``data_files.waiting`` and
``remaining`` count the jobs using it that are to_launch, and not yet final, kept by every change of the jobs'
states (:mod:`.states`). A cluster's copy goes ``staging`` -> ``held`` (checksum verified there) -> ``unneeded``
(a trigger marks it when no remaining job uses the file) -> deleted from the cluster and from the table. Every
read here seeks an index: its cost grows with what it returns, not with the state file.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence

from ..model import DataFile
from ._sql import CHUNK
from .states import COUNT_FILES


class Files:
    conn: sqlite3.Connection

    # -- submission

    def add_files(self, campaign_id: int, files: Sequence[DataFile], uses: Iterable[tuple[int, str]]) -> None:
        """Record a campaign's files (those it already has are kept as they are) and which of its new
        to_launch jobs use which: ``uses`` holds distinct (job id, file key) pairs, each key a file of the
        campaign (given here or before)."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO data_files (campaign_id, key, size, sha256) VALUES (?, ?, ?, ?)",
            [(campaign_id, f.key, f.size, f.sha256) for f in files],
        )
        rows = self.conn.execute("SELECT key, id FROM data_files WHERE campaign_id = ?", (campaign_id,))
        ids = dict(rows.fetchall())
        per_file: dict[int, int] = defaultdict(int)
        rows = []
        for job_id, key in uses:
            rows.append((ids[key], job_id))
            per_file[ids[key]] += 1
        self.conn.executemany("INSERT INTO job_files (file_id, job_id) VALUES (?, ?)", rows)
        self.conn.executemany(COUNT_FILES, [(n, n, file_id) for file_id, n in per_file.items()])

    # -- what jobs need (the locality strategies' reads)

    def last_job_id(self, campaign_id: int) -> int:
        row = self.conn.execute("SELECT max(id) FROM jobs WHERE campaign_id = ?", (campaign_id,)).fetchone()
        return row[0] or 0

    def campaign_files(self, campaign_id: int) -> dict[str, DataFile]:
        """Every file of a campaign by key."""
        rows = self.conn.execute("SELECT key, size, sha256 FROM data_files WHERE campaign_id = ?", (campaign_id,))
        return {key: DataFile(key, size, sha) for key, size, sha in rows}

    def has_files(self, campaign_id: int) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM data_files WHERE campaign_id = ? LIMIT 1", (campaign_id,)).fetchone()
            is not None
        )

    def waiting_files(self, campaign_id: int) -> dict[str, tuple[int, int]]:
        """File key -> (to_launch jobs using it, the lowest id among them), for the campaign's files that
        some to_launch job uses."""
        rows = self.conn.execute(
            "SELECT key, waiting, (SELECT jf.job_id FROM job_files jf JOIN jobs j ON j.id = jf.job_id "
            "WHERE jf.file_id = f.id AND j.state = 'to_launch' ORDER BY jf.job_id LIMIT 1) "
            "FROM data_files f WHERE campaign_id = ? AND waiting > 0",
            (campaign_id,),
        )
        return {key: (waiting, lowest) for key, waiting, lowest in rows if lowest is not None}

    def cluster_files(self, cluster: str, campaign_id: int) -> set[str]:
        """Keys of the campaign's files the cluster holds or is being sent (any state but deleted)."""
        rows = self.conn.execute(
            "SELECT f.key FROM cluster_files c JOIN data_files f ON f.id = c.file_id "
            "WHERE c.cluster = ? AND f.campaign_id = ?",
            (cluster, campaign_id),
        )
        return {row[0] for row in rows}

    def waiting_job_files(self, campaign_id: int, limit: int | None = None) -> list[tuple[int, tuple[str, ...]]]:
        """(job id, its file keys) of the campaign's to_launch jobs that use files, in increasing id order
        (the first ``limit`` of them)."""
        rows = self.conn.execute(
            "SELECT j.id, f.key FROM jobs j JOIN job_files jf ON jf.job_id = j.id JOIN data_files f "
            "ON f.id = jf.file_id WHERE j.campaign_id = ? AND j.state = 'to_launch' ORDER BY j.id, f.key",
            (campaign_id,),
        )
        out: list[tuple[int, tuple[str, ...]]] = []
        current, keys = None, []
        for job_id, key in rows:
            if job_id != current:
                if current is not None:
                    out.append((current, tuple(keys)))
                    if limit is not None and len(out) >= limit:
                        return out
                current, keys = job_id, []
            keys.append(key)
        if current is not None:
            out.append((current, tuple(keys)))
        return out

    def jobs_using(self, campaign_id: int, key: str, limit: int, after: int = 0) -> list[int]:
        """Ids of up to ``limit`` fresh to_launch jobs (not resuming a checkpoint, not deferred) using file
        ``key``, in increasing id order, above ``after``."""
        rows = self.conn.execute(
            "SELECT j.id FROM data_files f JOIN job_files jf ON jf.file_id = f.id JOIN jobs j ON j.id = jf.job_id "
            "WHERE f.campaign_id = ? AND f.key = ? AND jf.job_id > ? AND j.state = 'to_launch' "
            "AND j.checkpoint_cluster IS NULL AND j.deferred = 0 ORDER BY jf.job_id LIMIT ?",
            (campaign_id, key, after, limit),
        )
        return [row[0] for row in rows]

    def job_files(self, job_ids: Sequence[int]) -> dict[int, list[DataFile]]:
        """Each job's files (jobs without files are left out), in key order."""
        out: dict[int, list[DataFile]] = defaultdict(list)
        for start in range(0, len(job_ids), CHUNK):
            chunk = list(job_ids[start : start + CHUNK])
            rows = self.conn.execute(
                "SELECT jf.job_id, f.key, f.size, f.sha256 FROM job_files jf JOIN data_files f ON f.id = jf.file_id "
                f"WHERE jf.job_id IN ({', '.join('?' * len(chunk))}) ORDER BY jf.job_id, f.key",
                chunk,
            )
            for job_id, key, size, sha in rows:
                out[job_id].append(DataFile(key, size, sha))
        return dict(out)

    # -- cluster caches (staging's and deletion's records)

    def file_ids(self, campaign_id: int, keys: Iterable[str]) -> dict[str, int]:
        keys = list(keys)
        out = {}
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            rows = self.conn.execute(
                f"SELECT key, id FROM data_files WHERE campaign_id = ? AND key IN ({', '.join('?' * len(chunk))})",
                [campaign_id, *chunk],
            )
            out.update(dict(rows))
        return out

    def cache_state(self, cluster: str, file_ids: Sequence[int]) -> dict[int, str]:
        """The cluster's copy of each of these files: its state, for those it has a row for."""
        out = {}
        for start in range(0, len(file_ids), CHUNK):
            chunk = list(file_ids[start : start + CHUNK])
            rows = self.conn.execute(
                f"SELECT file_id, state FROM cluster_files WHERE cluster = ? AND file_id IN "
                f"({', '.join('?' * len(chunk))})",
                [cluster, *chunk],
            )
            out.update(dict(rows))
        return out

    def cache_used(self, cluster: str) -> int:
        """Bytes the cluster's cache holds or is being sent."""
        row = self.conn.execute("SELECT coalesce(sum(size), 0) FROM cluster_files WHERE cluster = ?", (cluster,))
        return row.fetchone()[0]

    def note_staging(self, cluster: str, file_id: int, size: int, now: float) -> None:
        """A copy is about to be sent: recorded first, so that a pass killed mid-copy leaves a row to redo."""
        self.conn.execute(
            "INSERT INTO cluster_files (cluster, file_id, state, size, last_use) VALUES (?, ?, 'staging', ?, ?) "
            "ON CONFLICT (cluster, file_id) DO UPDATE SET state = 'staging', last_use = excluded.last_use",
            (cluster, file_id, size, now),
        )

    def set_held(self, cluster: str, file_id: int, now: float) -> None:
        """The copy is on the cluster, checksum verified (unneeded at once if no remaining job uses it)."""
        self.conn.execute(
            "UPDATE cluster_files SET staged_at = ?, last_use = ?, state = CASE WHEN "
            "(SELECT remaining FROM data_files WHERE id = ?) > 0 THEN 'held' ELSE 'unneeded' END "
            "WHERE cluster = ? AND file_id = ?",
            (now, now, file_id, cluster, file_id),
        )

    def touch_files(self, cluster: str, file_ids: Sequence[int], now: float) -> None:
        self.conn.executemany(
            "UPDATE cluster_files SET last_use = ? WHERE cluster = ? AND file_id = ?",
            [(now, cluster, file_id) for file_id in file_ids],
        )

    def unneeded_files(self, cluster: str, limit: int) -> list[tuple[int, int, str]]:
        """(file id, campaign id, key) of up to ``limit`` copies on the cluster no remaining job uses."""
        rows = self.conn.execute(
            "SELECT c.file_id, f.campaign_id, f.key FROM cluster_files c JOIN data_files f ON f.id = c.file_id "
            "WHERE c.cluster = ? AND c.state = 'unneeded' LIMIT ?",
            (cluster, limit),
        )
        return rows.fetchall()

    def clusters_with_unneeded(self) -> list[str]:
        rows = self.conn.execute("SELECT DISTINCT cluster FROM cluster_files WHERE state = 'unneeded'")
        return [row[0] for row in rows]

    def evictable(self, cluster: str) -> list[tuple[int, int, str, int]]:
        """(file id, campaign id, key, size) of the cluster's verified copies that no job queued or running there
        uses, least recently used first: what a full cache may delete to make room."""
        rows = self.conn.execute(
            "SELECT c.file_id, f.campaign_id, f.key, c.size FROM cluster_files c JOIN data_files f ON f.id = c.file_id "
            "WHERE c.cluster = ? AND c.state != 'staging' AND NOT EXISTS (SELECT 1 FROM job_files jf JOIN jobs j "
            "ON j.id = jf.job_id WHERE jf.file_id = c.file_id AND j.cluster = ? "
            "AND j.state IN ('submitted', 'running')) ORDER BY c.last_use",
            (cluster, cluster),
        )
        return rows.fetchall()

    def forget_cluster_files(self, cluster: str, file_ids: Sequence[int]) -> None:
        """The cluster no longer holds these copies (deleted there)."""
        self.conn.executemany(
            "DELETE FROM cluster_files WHERE cluster = ? AND file_id = ?", [(cluster, i) for i in file_ids]
        )

    # -- outputs (gathered after a job terminates)

    def gather_outputs_of(self, campaign_id: int) -> None:
        self.conn.execute("INSERT OR IGNORE INTO output_campaigns (campaign_id) VALUES (?)", (campaign_id,))

    def outputs_due(self, limit: int) -> list[tuple[int, int, str, str, str]]:
        """(job id, campaign id, cluster, name, params) of up to ``limit`` terminated jobs whose outputs wait."""
        rows = self.conn.execute(
            "SELECT j.id, j.campaign_id, o.cluster, j.name, j.params FROM outputs_due o JOIN jobs j ON j.id = o.job_id "
            "ORDER BY o.job_id LIMIT ?",
            (limit,),
        )
        return rows.fetchall()

    def outputs_gathered(self, job_ids: Sequence[int]) -> None:
        self.conn.executemany("DELETE FROM outputs_due WHERE job_id = ?", [(i,) for i in job_ids])

    def outputs_waiting(self) -> list[tuple[int, str, int]]:
        """(campaign id, cluster, jobs) of the outputs still to gather, per campaign and cluster."""
        rows = self.conn.execute(
            "SELECT j.campaign_id, o.cluster, count(*) FROM outputs_due o JOIN jobs j ON j.id = o.job_id "
            "GROUP BY j.campaign_id, o.cluster ORDER BY j.campaign_id, o.cluster"
        )
        return rows.fetchall()

    def has_outputs_due(self) -> bool:
        return self.conn.execute("SELECT 1 FROM outputs_due LIMIT 1").fetchone() is not None
