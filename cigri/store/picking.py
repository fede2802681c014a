"""Mixed into :class:`~cigri.store.Store`: the reads of the job pickers and of on-demand work (issue 13,
items 3 and 4; :mod:`cigri.cycle.picking`, :mod:`cigri.cycle.ondemand`), over the tables of ``014_files``.
Each seeks an index; its cost grows with the campaign's waiting jobs or the rows it returns."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence

from ._sql import CHUNK, _marks


class Picking:
    conn: sqlite3.Connection

    def with_input_files(self, campaign_ids: Sequence[int]) -> set[int]:
        """Those of the campaigns that have input files."""
        found: set[int] = set()
        for start in range(0, len(campaign_ids), CHUNK):
            chunk = list(campaign_ids[start : start + CHUNK])
            rows = self.conn.execute(
                f"SELECT DISTINCT campaign_id FROM data_files WHERE campaign_id IN ({_marks(len(chunk))})", chunk
            )
            found.update(row[0] for row in rows)
        return found

    def pickable_jobs(self, campaign_id: int) -> list[tuple[int, tuple[str, ...]]]:
        """(id, file keys) of the campaign's fresh to_launch jobs (not resuming a checkpoint), increasing id:
        those not deferred (exit 67), or the deferred ones once none other waits (as next_jobs)."""
        for deferred in (0, 1):
            rows = self.conn.execute(
                "SELECT j.id, f.key FROM jobs j LEFT JOIN job_files jf ON jf.job_id = j.id "
                "LEFT JOIN data_files f ON f.id = jf.file_id WHERE j.campaign_id = ? AND j.state = 'to_launch' "
                "AND j.checkpoint_cluster IS NULL AND j.deferred = ? ORDER BY j.id, f.key",
                (campaign_id, deferred),
            ).fetchall()
            if rows:
                break
        files: dict[int, list[str]] = {}
        for job_id, key in rows:
            keys = files.setdefault(job_id, [])
            if key is not None:
                keys.append(key)
        return [(job_id, tuple(keys)) for job_id, keys in files.items()]

    def waiting_file_sizes(self, campaign_id: int) -> dict[str, int]:
        """Key -> bytes of the campaign's input files that waiting jobs read (the picker's view)."""
        rows = self.conn.execute(
            "SELECT key, size FROM data_files WHERE campaign_id = ? AND waiting > 0", (campaign_id,)
        )
        return dict(rows.fetchall())

    def campaign_cluster_files(self, campaign_id: int) -> dict[str, set[str]]:
        """Cluster -> keys of the campaign's files it holds or is being sent."""
        rows = self.conn.execute(
            "SELECT c.cluster, f.key FROM data_files f JOIN cluster_files c ON c.file_id = f.id "
            "WHERE f.campaign_id = ?",
            (campaign_id,),
        )
        held: dict[str, set[str]] = defaultdict(set)
        for cluster, key in rows:
            held[cluster].add(key)
        return dict(held)

    def resuming_jobs(self, campaign_id: int, cluster: str, limit: int) -> list[tuple[int, str, str, bool, None]]:
        """Up to ``limit`` to_launch jobs of the campaign resuming from a checkpoint held on ``cluster``, in the
        shape of :meth:`~cigri.store.Store.next_jobs`."""
        rows = self.conn.execute(
            "SELECT id, name, params, walltime_scale FROM jobs WHERE campaign_id = ? AND checkpoint_cluster = ? "
            "AND state = 'to_launch' ORDER BY id LIMIT ?",
            (campaign_id, cluster, limit),
        )
        return [(job_id, name, params, True, scale) for job_id, name, params, scale in rows]

    def jobs_by_id(self, job_ids: Sequence[int]) -> list[tuple[int, str, str, bool, float | None]]:
        """The jobs ``job_ids`` in that order, in the shape of :meth:`~cigri.store.Store.next_jobs` (fresh)."""
        found = {}
        for start in range(0, len(job_ids), CHUNK):
            chunk = list(job_ids[start : start + CHUNK])
            rows = self.conn.execute(
                f"SELECT id, name, params, walltime_scale FROM jobs WHERE id IN ({_marks(len(chunk))})", chunk
            )
            found.update({row[0]: (row[0], row[1], row[2], False, row[3]) for row in rows})
        return [found[job_id] for job_id in job_ids if job_id in found]

    def avoiding_jobs(self, campaign_id: int, now: float) -> dict[str, set[int]]:
        """Cluster -> the campaign's to_launch jobs that may not go there yet (killed or taken back there)."""
        rows = self.conn.execute(
            "SELECT avoid_cluster, id FROM jobs INDEXED BY jobs_avoid WHERE avoid_cluster IS NOT NULL "
            "AND campaign_id = ? AND state = 'to_launch' AND avoid_until > ?",
            (campaign_id, now),
        )
        avoided: dict[str, set[int]] = defaultdict(set)
        for cluster, job_id in rows:
            avoided[cluster].add(job_id)
        return dict(avoided)

    def files_without_work(self, campaign_id: int, clusters: Sequence[str]) -> dict[str, list[str]]:
        """Cluster -> keys (in order) of the campaign's files it holds (verified copies) and no to_launch job of
        the campaign uses, for those of ``clusters`` holding some: where on-demand work is asked for."""
        if not clusters:
            return {}
        rows = self.conn.execute(
            "SELECT c.cluster, f.key FROM data_files f JOIN cluster_files c ON c.file_id = f.id "
            "WHERE f.campaign_id = ? AND f.waiting = 0 AND c.state != 'staging' "
            f"AND c.cluster IN ({_marks(len(clusters))}) ORDER BY c.cluster, f.key",
            (campaign_id, *clusters),
        )
        idle: dict[str, list[str]] = defaultdict(list)
        for cluster, key in rows:
            idle[cluster].append(key)
        return dict(idle)
