"""Mixed into :class:`~cigri.store.Store`: the clusters (and the settings of removed ones, kept to read their
jobs' outputs), cigri's flow of jobs on each (latest start seen, latest take-back) and each one's latest
capacity reading."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from ..errors import NotFound
from ..model import Capacity, Cluster


class Clusters:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]

    def clusters(self) -> list[Cluster]:
        rows = self.conn.execute("SELECT name, adapter, config FROM clusters ORDER BY name")
        return [Cluster(name, adapter, json.loads(config)) for name, adapter, config in rows]

    def cluster(self, name: str) -> Cluster:
        return self._named_cluster("SELECT name, adapter, config FROM clusters WHERE name = ?", (name,), name)

    def _named_cluster(self, query: str, args: tuple, name: str) -> Cluster:
        row = self._one(query, args)
        if row is None:
            raise NotFound(f"no cluster named {name!r}")
        return Cluster(row[0], row[1], json.loads(row[2]))

    def has_cluster(self, name: str) -> bool:
        return self._one("SELECT 1 FROM clusters WHERE name = ?", (name,)) is not None

    def add_cluster(self, name: str, adapter: str, config: dict, now: float) -> None:
        self.conn.execute(
            "INSERT INTO clusters (name, adapter, config, created_at) VALUES (?, ?, ?, ?)",
            (name, adapter, json.dumps(config, sort_keys=True), now),
        )

    def set_cluster_config(self, name: str, config: dict) -> None:
        self.conn.execute("UPDATE clusters SET config = ? WHERE name = ?", (json.dumps(config, sort_keys=True), name))

    def remove_cluster(self, name: str, now: float) -> None:
        """Remove the cluster; its settings stay in removed_clusters for reading its jobs' outputs."""
        self.conn.execute(
            "INSERT OR REPLACE INTO removed_clusters (name, adapter, config, removed_at) "
            "SELECT name, adapter, config, ? FROM clusters WHERE name = ?",
            (now, name),
        )
        self.conn.execute("DELETE FROM clusters WHERE name = ?", (name,))

    def cluster_of_outputs(self, name: str) -> Cluster:
        """The cluster that ran a job, to read its outputs: the cluster, else the one removed by that name."""
        return self._named_cluster(
            "SELECT name, adapter, config FROM clusters WHERE name = ? "
            "UNION ALL SELECT name, adapter, config FROM removed_clusters WHERE name = ? LIMIT 1",
            (name, name),
            name,
        )

    def cluster_in_use(self, name: str) -> bool:
        """Does a campaign that is not over still name this cluster?"""
        row = self._one(
            "SELECT 1 FROM campaign_clusters cc JOIN campaigns c ON c.id = cc.campaign_id "
            "WHERE cc.cluster = ? AND c.state IN ('in_treatment', 'paused') LIMIT 1",
            (name,),
        )
        return row is not None

    # -- cigri's jobs flowing there (the metascheduler's queue allowance)

    def took_back(self, cluster: str, now: float) -> None:
        """cigri took queued jobs back from the cluster: no queue allowance there until one of its jobs starts."""
        self.conn.execute("UPDATE clusters SET last_recall = ? WHERE name = ?", (now, cluster))

    def set_last_start(self, cluster: str, now: float) -> None:
        """cigri saw one of its jobs start on the cluster."""
        self.conn.execute("UPDATE clusters SET last_start = ? WHERE name = ?", (now, cluster))

    def cluster_flow(self, cluster: str) -> tuple[float | None, float | None]:
        """(last start seen, last take-back) of cigri's jobs on the cluster."""
        return self._one("SELECT last_start, last_recall FROM clusters WHERE name = ?", (cluster,)) or (None, None)

    # -- how often a cluster kills cigri's running jobs of its own doing

    def add_kills(self, cluster: str, kills: int) -> None:
        """The cluster killed ``kills`` of cigri's running jobs (preempted, failed nodes, lost to an outage)."""
        if kills > 0:
            self.conn.execute(
                "INSERT INTO cluster_kills (cluster, kills) VALUES (?, ?) "
                "ON CONFLICT (cluster) DO UPDATE SET kills = kills + excluded.kills",
                (cluster, kills),
            )

    def hazards(self, prior_seconds: float) -> dict[str, float]:
        """Each cluster's kills per second of cigri's jobs running there (the run time of the jobs that
        terminated there, kept by :meth:`~cigri.store.usage.Usage.add_durations`, plus ``prior_seconds`` so
        that one early kill says little); clusters that never killed one are absent."""
        rows = self.conn.execute("SELECT cluster, kills, seconds FROM cluster_kills WHERE kills > 0")
        return {cluster: kills / (seconds + prior_seconds) for cluster, kills, seconds in rows}

    # -- capacity readings

    def record_usage(self, capacities: dict[str, Capacity], now: float) -> None:
        """Keep each cluster's latest capacity reading (gridclusters -u / -b show it)."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO cluster_usage (cluster, total, used, grid_used, queued, down, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(name, c.total, c.used, c.grid_used, c.queued, c.down, now) for name, c in capacities.items()],
        )

    def recorded_usage(self) -> dict[str, tuple[Capacity, float]]:
        """Each cluster's latest capacity reading and when it was taken (clusters never read are absent)."""
        rows = self.conn.execute("SELECT cluster, total, used, grid_used, queued, down, at FROM cluster_usage")
        return {
            name: (Capacity(total, used, grid, queued, down), at) for name, total, used, grid, queued, down, at in rows
        }
