"""The queries of ``grid admin check`` (:mod:`cigri.integrity`): each returns the rows that break one of the
state's invariants, and none on a consistent state. They only read."""

from __future__ import annotations

import re
import sqlite3

from ..model import CampaignState, CampaignType, EventClass, EventCode, EventState, JobState
from . import migrations

NULL_VALUE = re.compile(r"NULL value in (\w+)\.(\w+)")

# every value cigri writes in each enumerated column (a pass reading another would fail or skip the row)
KNOWN_VALUES: dict[tuple[str, str], tuple] = {
    ("jobs", "state"): tuple(JobState),
    ("jobs", "hold"): (0, 1, 2),  # Store.HOLD_NONE, HOLD_ASKED, HOLD_DONE
    ("jobs", "nikita"): (None, "flooding", "timeout", "walltime"),  # nikita.Reason
    ("campaigns", "state"): tuple(CampaignState),
    ("campaigns", "type"): tuple(CampaignType),
    ("batches", "state"): ("submitting", "done", "abandoned"),
    ("events", "class"): tuple(EventClass),
    ("events", "code"): tuple(EventCode),
    ("events", "state"): tuple(EventState),
    ("replicas", "state"): ("launching", "submitted", "running", "kill", "killed", "failed", "late", "promoted"),
    ("campaign_clusters", "prologue_state"): ("none", "todo", "submitted", "done", "failed"),
    ("campaign_clusters", "epilogue_state"): ("none", "todo", "due", "submitted", "done", "failed"),
}


class Integrity:
    """Mixed into :class:`~cigri.store.Store`: the integrity check's reads."""

    conn: sqlite3.Connection

    def sqlite_problems(self) -> list[str]:
        """SQLite's own verdict on the file (``PRAGMA integrity_check``): nothing when it says ok. Its "NULL
        value in T.C" lines are kept only when a query finds that NULL: SQLite 3.40 (Debian 12's) says so of
        every non-key column of a WITHOUT ROWID table whose key is not its first columns (job_failures)."""
        rows = [row[0] for row in self.conn.execute("PRAGMA integrity_check")]
        return [row for row in rows if row != "ok" and not self._no_such_null(row)]

    def _no_such_null(self, line: str) -> bool:
        found = NULL_VALUE.fullmatch(line)
        if found is None:
            return False
        table, column = found.groups()
        return self.conn.execute(f'SELECT 1 FROM "{table}" WHERE "{column}" IS NULL LIMIT 1').fetchone() is None

    def migrations_state(self) -> list[str]:
        """The names of the migrations recorded in the state, in order (none for a file cigri never opened)."""
        try:
            return [row[0] for row in self.conn.execute("SELECT name FROM _migrations ORDER BY name")]
        except sqlite3.OperationalError:
            return []

    def unknown_values(self) -> list[tuple[str, str, object, int]]:
        """(table, column, value, rows) of the values no code of cigri writes there (and none reads)."""
        out = []
        for (table, column), known in KNOWN_VALUES.items():
            named = [str(value) if isinstance(value, str) else value for value in known if value is not None]
            marks = ",".join("?" * len(named))
            condition = f"{column} NOT IN ({marks})" + ("" if None in known else f" OR {column} IS NULL")
            rows = self.conn.execute(
                f"SELECT {column}, count(*) FROM {table} WHERE {condition} GROUP BY {column}", named
            )
            out.extend((table, column, value, n) for value, n in rows)
        return out

    def miscounted(self) -> list[tuple[int, str, int, int]]:
        """(campaign, state, what job_counts says, how many jobs are in that state) where they differ."""
        return self.conn.execute(
            "SELECT campaign_id, state, sum(kept), sum(real) FROM ("
            "SELECT campaign_id, state, n AS kept, 0 AS real FROM job_counts "
            "UNION ALL SELECT campaign_id, state, 0, count(*) FROM jobs GROUP BY campaign_id, state) "
            "GROUP BY campaign_id, state HAVING sum(kept) != sum(real) ORDER BY campaign_id, state"
        ).fetchall()

    def miscounted_places(self) -> list[tuple[str, str, int, int, int]]:
        """(cluster, state, campaign, what job_places says, how many active jobs are there) where they differ."""
        return self.conn.execute(
            "SELECT cluster, state, campaign_id, sum(kept), sum(real) FROM ("
            "SELECT cluster, state, campaign_id, n AS kept, 0 AS real FROM job_places "
            "UNION ALL SELECT coalesce(cluster, ''), state, campaign_id, 0, count(*) FROM jobs "
            f"WHERE {migrations.ACTIVE} "
            "GROUP BY coalesce(cluster, ''), state, campaign_id) "
            "GROUP BY cluster, state, campaign_id HAVING sum(kept) != sum(real) ORDER BY cluster, state, campaign_id"
        ).fetchall()

    def misnumbered_campaigns(self) -> list[tuple[int, int, int]]:
        """(campaign, its nb_jobs, its jobs) where they differ."""
        return self.conn.execute(
            "SELECT c.id, c.nb_jobs, (SELECT count(*) FROM jobs j WHERE j.campaign_id = c.id) AS n "
            "FROM campaigns c WHERE c.nb_jobs != n ORDER BY c.id"
        ).fetchall()

    def dangling(self) -> list[tuple[str, int, str, object]]:
        """(table, row id, column, value) of references to a campaign, job or cluster that does not exist. An
        event's or a removed cluster's jobs may name a removed cluster; nothing may name an unknown one."""
        known_cluster = "(SELECT name FROM clusters UNION SELECT name FROM removed_clusters)"
        no_campaign = "campaign_id NOT IN (SELECT id FROM campaigns)"
        queries = {
            ("jobs", "campaign_id"): f"SELECT id, campaign_id FROM jobs WHERE {no_campaign}",
            ("campaign_clusters", "campaign_id"): (
                f"SELECT campaign_id, campaign_id FROM campaign_clusters WHERE {no_campaign}"
            ),
            ("batches", "campaign_id"): f"SELECT id, campaign_id FROM batches WHERE {no_campaign}",
            ("replicas", "job_id"): "SELECT id, job_id FROM replicas WHERE job_id NOT IN (SELECT id FROM jobs)",
            ("events", "campaign_id"): (
                f"SELECT id, campaign_id FROM events WHERE campaign_id IS NOT NULL AND {no_campaign}"
            ),
            ("events", "job_id"): (
                "SELECT e.id, e.job_id FROM events e LEFT JOIN jobs j ON j.id = e.job_id WHERE e.job_id IS NOT NULL "
                "AND (j.id IS NULL OR j.campaign_id IS NOT e.campaign_id)"
            ),
            ("events", "cluster"): (
                f"SELECT id, cluster FROM events WHERE cluster IS NOT NULL AND cluster NOT IN {known_cluster}"
            ),
            ("jobs", "cluster"): (
                f"SELECT id, cluster FROM jobs WHERE cluster IS NOT NULL AND cluster NOT IN {known_cluster}"
            ),
        }
        out = []
        for (table, column), sql in queries.items():
            out.extend((table, row_id, column, value) for row_id, value in self.conn.execute(sql))
        return out

    def misplaced(self) -> list[tuple[int, str, str | None]]:
        """(job, state, cluster) of active jobs with no cluster, or on a cluster that is not (or no longer)
        one of their campaign's: no pass would ever follow them there."""
        return self.conn.execute(
            "SELECT j.id, j.state, j.cluster FROM jobs j "
            f"WHERE {migrations.ACTIVE} AND (j.cluster IS NULL OR j.cluster NOT IN (SELECT name FROM clusters) "
            "OR NOT EXISTS (SELECT 1 FROM campaign_clusters cc WHERE cc.campaign_id = j.campaign_id "
            "AND cc.cluster = j.cluster)) ORDER BY j.id"
        ).fetchall()

    def without_remote_id(self) -> list[tuple[int, str]]:
        """(job, state) of jobs queued or running with no remote id: nothing could follow or kill them."""
        return self.conn.execute(
            "SELECT id, state FROM jobs WHERE state IN ('submitted', 'running') AND remote_id IS NULL ORDER BY id"
        ).fetchall()

    def stranded_launches(self) -> list[tuple[int, int | None, str | None]]:
        """(job, batch, the batch's state) of jobs being submitted outside a batch the runner will submit (one
        recorded 'submitting' for the job's cluster and campaign): no pass would ever finish them."""
        return self.conn.execute(
            "SELECT j.id, j.batch_id, b.state FROM jobs j LEFT JOIN batches b ON b.id = j.batch_id "
            "WHERE j.state = 'launching' AND (b.id IS NULL OR b.state != 'submitting' OR b.cluster IS NOT j.cluster "
            "OR b.campaign_id != j.campaign_id) ORDER BY j.id"
        ).fetchall()

    def unsettled_campaigns(self) -> list[tuple[int, str, str, int]]:
        """(campaign, its state, job state, jobs) of campaigns over with jobs that are not: a terminated
        campaign's jobs waiting or active, a cancelled one's waiting, or active and not to be killed."""
        return self.conn.execute(
            "SELECT c.id, c.state, j.state, count(*) FROM campaigns c JOIN jobs j ON j.campaign_id = c.id "
            "WHERE (c.state = 'terminated' AND j.state IN ('to_launch', 'launching', 'submitted', 'running')) "
            "OR (c.state = 'cancelled' AND (j.state = 'to_launch' OR (j.state IN ('launching', 'submitted', "
            "'running') AND j.kill_requested = 0))) GROUP BY c.id, j.state ORDER BY c.id, j.state"
        ).fetchall()

    def misdated_campaigns(self) -> list[tuple[int, str, float | None]]:
        """(campaign, state, ended_at) of campaigns over with no end time, or running with one."""
        return self.conn.execute(
            "SELECT id, state, ended_at FROM campaigns WHERE (state IN ('terminated', 'cancelled')) "
            "!= (ended_at IS NOT NULL) ORDER BY id"
        ).fetchall()

    def unkillable(self) -> list[tuple[int, str]]:
        """(job, state) of jobs a kill is asked for that nikita can never kill nor settle: not being submitted
        and with no remote id (it skips them pass after pass, and --until-done never ends)."""
        return self.conn.execute(
            "SELECT id, state FROM jobs WHERE kill_requested = 1 AND state != 'launching' AND remote_id IS NULL "
            "ORDER BY id"
        ).fetchall()

    def bad_replicas(self) -> list[tuple[int, str, str]]:
        """(replica, state, what is wrong) of replicas that no pass could follow or kill."""
        return self.conn.execute(
            "SELECT r.id, r.state, CASE "
            "WHEN j.campaign_id != r.campaign_id THEN 'its job is of campaign ' || j.campaign_id "
            "WHEN r.state IN ('submitted', 'running') AND r.remote_id IS NULL THEN 'no remote id' "
            "WHEN r.state IN ('launching', 'submitted', 'running', 'kill') "
            "AND r.cluster NOT IN (SELECT name FROM clusters) THEN 'on unknown cluster ' || r.cluster "
            "END AS problem FROM replicas r JOIN jobs j ON j.id = r.job_id WHERE problem IS NOT NULL ORDER BY r.id"
        ).fetchall()

    def bad_orphans(self) -> list[tuple[int, str, str]]:
        """(orphan, cluster, what is wrong) of orphans nikita could not cancel: on an unknown cluster, with
        neither or both of a remote id and a batch key."""
        return self.conn.execute(
            "SELECT id, cluster, CASE WHEN cluster NOT IN (SELECT name FROM clusters) THEN 'unknown cluster' "
            "WHEN (remote_id IS NULL) = (batch_key IS NULL) THEN 'needs a remote id or a batch key, not '"
            " || CASE WHEN remote_id IS NULL THEN 'neither' ELSE 'both' END END AS problem "
            "FROM orphans WHERE problem IS NOT NULL ORDER BY id"
        ).fetchall()

    def misdated_events(self) -> list[tuple[int, str, float | None]]:
        """(event, state, closed_at) of open events with a close time, or closed ones without."""
        return self.conn.execute(
            "SELECT id, state, closed_at FROM events WHERE (state = 'closed') != (closed_at IS NOT NULL) ORDER BY id"
        ).fetchall()
