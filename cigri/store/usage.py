"""Mixed into :class:`~cigri.store.Store`: figures of what ran: Spritz's predictor figures (running sums of
durations, termination buckets, the latest forecasts), the forecast history, and users' decayed usage."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable, Sequence

from ._sql import _marks

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


def _per_cluster(sums: Sequence[tuple]) -> list[tuple[str, float]]:
    """(cluster, seconds) of the (campaign, cluster) sums of :func:`_duration_sums`, per cluster."""
    seconds: dict[str, float] = {}
    for total, *_, cluster in sums:
        seconds[cluster] = seconds.get(cluster, 0.0) + total
    return sorted(seconds.items())


class Usage:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]

    # -- predictor figures

    def add_durations(self, rows: Iterable[tuple[int, str, float, float]], bucket: float) -> None:
        """(campaign, cluster, seconds, ended at) of jobs that just terminated: added to the running sums of
        their campaign, of (campaign, cluster) and of the cluster (its run time, under its hazard), and counted
        in the termination bucket (``bucket`` seconds wide) of their end. The cost grows with these rows only."""
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
            "INSERT INTO cluster_kills (cluster, kills, seconds) VALUES (?, 0, ?) "
            "ON CONFLICT (cluster) DO UPDATE SET seconds = seconds + excluded.seconds",
            _per_cluster(sums),
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
            "UPDATE cluster_kills SET seconds = seconds - ? WHERE cluster = ?",
            [(seconds, cluster) for cluster, seconds in _per_cluster(sums)],
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

    def last_end(self) -> float | None:
        """When the campaign that ended last ended (None: none ended yet)."""
        row = self._one("SELECT max(ended_at) FROM campaigns WHERE ended_at IS NOT NULL")
        return row[0] if row else None

    def ended_durations(self, limit: int) -> list[tuple[int, float, dict[str, tuple[float, int]]]]:
        """Of the ``limit`` campaigns that ended last (terminated or cancelled), those some of whose jobs
        terminated: (campaign, their jobs' mean duration, per cluster where some terminated (their mean there,
        how many)). Reads those campaigns only, through the index of ends."""
        ids = [
            campaign_id
            for (campaign_id,) in self.conn.execute(
                "SELECT id FROM campaigns WHERE ended_at IS NOT NULL ORDER BY ended_at DESC LIMIT ?", (limit,)
            )
        ]
        if not ids:
            return []
        rows = self.conn.execute(
            "SELECT s.campaign_id, s.duration_sum / s.duration_n, c.cluster, c.duration_sum / c.duration_n, "
            "c.duration_n FROM campaign_stats s JOIN cluster_stats c ON c.campaign_id = s.campaign_id "
            f"WHERE s.campaign_id IN ({_marks(len(ids))}) AND s.duration_n > 0 AND c.duration_n > 0 "
            "ORDER BY s.campaign_id, c.cluster",
            ids,
        )
        out: dict[int, tuple[int, float, dict[str, tuple[float, int]]]] = {}
        for campaign_id, mean, cluster, there, n in rows:
            out.setdefault(campaign_id, (campaign_id, mean, {}))[2][cluster] = (there, n)
        return list(out.values())

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
        """Per cluster (in the clusters' order): (jobs queued or being submitted, jobs running, seconds the
        running ones have run, when the earliest running one started).

        The jobs queued or being submitted are counted (``job_places``, the active jobs' counts); the running
        ones are summed per cluster from the campaigns' index, each cluster's in the order of their ids (the
        index's order within a state, which the grouping keeps: the same sum as one read of every active job
        grouped by cluster and state)."""
        out: dict[str | None, list] = {}
        queued = self.conn.execute(
            "SELECT cluster, sum(n) FROM job_places WHERE campaign_id = ? AND state IN ('launching', 'submitted') "
            "GROUP BY cluster HAVING sum(n) != 0",
            (campaign_id,),
        )
        for cluster, n in queued:
            out[cluster or None] = [n, 0, 0.0, None]
        running = self.conn.execute(
            "SELECT cluster, count(*), sum(? - started_at), min(started_at) FROM jobs INDEXED BY jobs_campaign_state "
            "WHERE campaign_id = ? AND state = 'running' GROUP BY cluster",
            (now, campaign_id),
        )
        for cluster, n, elapsed, earliest in running:
            out.setdefault(cluster, [0, 0, 0.0, None])[1:] = [n, max(0.0, elapsed or 0.0), earliest]
        return {cluster: tuple(out[cluster]) for cluster in sorted(out, key=lambda c: (c is not None, c or ""))}

    def first_running(self, campaign_id: int) -> float | None:
        """When the campaign's earliest running job started (None when none runs)."""
        return self._one(
            "SELECT min(started_at) FROM jobs WHERE campaign_id = ? AND state = 'running'", (campaign_id,)
        )[0]

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

    # -- the forecast history

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

    # -- users' decayed usage

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
