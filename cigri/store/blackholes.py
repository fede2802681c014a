"""Mixed into :class:`~cigri.store.Store`: black holes (:mod:`cigri.cycle.blackhole`): the streaks of short
ends of a campaign's jobs on a cluster, and the reads that judge them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from ..model import EventCode, JobState
from ._sql import _chunks, _marks


class BlackHoles:
    conn: sqlite3.Connection

    def streak_health(self, cluster: str, campaigns: Iterable[int]) -> dict[int, float]:
        """Campaign -> the latest start of one of its jobs that ended normally (not within the black-hole
        threshold) on ``cluster``, for these campaigns (a seek each: the table keeps every campaign's)."""
        out: dict[int, float] = {}
        for chunk in _chunks(sorted(set(campaigns))):
            rows = self.conn.execute(
                f"SELECT campaign_id, healthy FROM blackhole_health WHERE campaign_id IN ({_marks(len(chunk))}) "
                "AND cluster = ?",
                [*chunk, cluster],
            )
            out.update(rows.fetchall())
        return out

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
