"""Mixed into :class:`~cigri.store.Store`: campaigns, their clusters (settings, prologue and epilogue
progress) and the figures kept on a campaign's row (job counts, latest ends, waste)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from ..errors import NotFound
from ..model import Campaign, CampaignState, CampaignType, JobState
from ._sql import _marks

JOB_STATES = {state.value: state for state in JobState}  # every pass counts every running campaign's jobs
# a dict lookup, not an Enum call (ten times its cost): grid serve lists thousands of campaigns a request
CAMPAIGN_TYPES = {kind.value: kind for kind in CampaignType}
CAMPAIGN_STATES = {state.value: state for state in CampaignState}


class Campaigns:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]
    _jdls: dict[int, tuple[str, dict]]  # campaign -> (its JDL's text, parsed), kept by the Store

    _CAMPAIGN_COLUMNS = "id, name, user, type, state, submitted_at, ended_at, nb_jobs, jdl"

    def _campaign(self, row: tuple) -> Campaign:
        return Campaign(
            id=row[0],
            name=row[1],
            user=row[2],
            type=CAMPAIGN_TYPES[row[3]],
            state=CAMPAIGN_STATES[row[4]],
            submitted_at=row[5],
            ended_at=row[6],
            nb_jobs=row[7],
            jdl=self._jdl(row[0], row[8]),
        )

    def _jdl(self, campaign_id: int, text: str) -> dict:
        """A campaign's JDL, parsed once per state opened (a JDL never changes once submitted; every pass reads
        the running campaigns). The same dict is handed to every reader: none may change it."""
        kept = self._jdls.get(campaign_id)
        if kept is None or kept[0] != text:  # an id a purge freed may be taken again
            kept = self._jdls[campaign_id] = (text, json.loads(text))
        return kept[1]

    def create_campaign(
        self, name: str, user: str, type: CampaignType, jdl: dict, clusters: dict[str, dict], now: float
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO campaigns (id, name, user, type, state, submitted_at, jdl) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                self._above_floor("campaigns"),
                name,
                user,
                type.value,
                CampaignState.IN_TREATMENT.value,
                now,
                json.dumps(jdl),
            ),
        )
        campaign_id = cur.lastrowid
        self.conn.executemany(
            "INSERT INTO campaign_clusters (campaign_id, cluster, settings, prologue_state, epilogue_state) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (
                    campaign_id,
                    cluster,
                    json.dumps(settings),
                    "todo" if settings.get("prologue") else "none",
                    "todo" if settings.get("epilogue") else "none",
                )
                for cluster, settings in clusters.items()
            ],
        )
        self.conn.execute("INSERT INTO campaign_stats (campaign_id, sample_at) VALUES (?, ?)", (campaign_id, now))
        return campaign_id

    def campaign(self, campaign_id: int) -> Campaign:
        row = self._one(f"SELECT {self._CAMPAIGN_COLUMNS} FROM campaigns WHERE id = ?", (campaign_id,))
        if row is None:
            raise NotFound(f"no campaign {campaign_id}")
        return self._campaign(row)

    def campaigns(self, *, user: str | None = None, states: Sequence[CampaignState] | None = None) -> list[Campaign]:
        return [self._campaign(row) for row in self._listed(self._CAMPAIGN_COLUMNS, user, states)]

    def _listed(self, columns: str, user: str | None, states: Sequence[CampaignState] | None) -> sqlite3.Cursor:
        """The ``columns`` of the user's campaigns (None: everyone's) in these states (None: any), by id."""
        where, params = [], []
        if user:
            where.append("user = ?")
            params.append(user)
        if states:
            where.append(f"state IN ({_marks(len(states))})")
            params.extend(s.value for s in states)
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        return self.conn.execute(f"SELECT {columns} FROM campaigns{condition} ORDER BY id", params)

    def campaign_ids(self, states: Sequence[CampaignState]) -> list[int]:
        """The ids of the campaigns in these states (no JDL read)."""
        rows = self.conn.execute(
            f"SELECT id FROM campaigns WHERE state IN ({_marks(len(states))}) ORDER BY id", [s.value for s in states]
        )
        return [row[0] for row in rows]

    def purge_campaign(self, campaign_id: int) -> list[tuple[str, str]]:
        """Delete a campaign and everything recorded about it (jobs, events, batches, statistics,
        forecasts, replicas, ...: every table with a ``campaign_id``, and the job-keyed ``job_ends``);
        return the (cluster, remote id) of its jobs and their earlier runs, whose files the caller removes."""
        runs = self.conn.execute(
            "SELECT cluster, remote_id FROM jobs WHERE campaign_id = ? AND remote_id IS NOT NULL "
            "UNION SELECT e.cluster, e.remote_id FROM job_ends e JOIN jobs j ON j.id = e.job_id "
            "WHERE j.campaign_id = ? AND e.remote_id IS NOT NULL",
            (campaign_id, campaign_id),
        ).fetchall()
        self.conn.execute(
            "DELETE FROM job_ends WHERE job_id IN (SELECT id FROM jobs WHERE campaign_id = ?)", (campaign_id,)
        )
        tables = [row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}
            if "campaign_id" in columns and table != "jobs":
                self.conn.execute(f"DELETE FROM {table} WHERE campaign_id = ?", (campaign_id,))
        for table in ("campaigns", "jobs"):  # ids are never given again: the floor is the highest ever given
            self.conn.execute(
                f"INSERT INTO id_floors (name, last) SELECT ?, max(id) FROM {table} WHERE true "
                "ON CONFLICT (name) DO UPDATE SET last = max(last, excluded.last)",
                (table,),
            )
        self.conn.execute("DELETE FROM jobs WHERE campaign_id = ?", (campaign_id,))
        self.conn.execute("DELETE FROM campaigns WHERE id = ?", (campaign_id,))
        return runs

    def _above_floor(self, table: str) -> int | None:
        """The id the next row of ``table`` (campaigns, jobs) must take so that no purged id comes back (None:
        SQLite's next, above every id it holds and every purged one)."""
        row = self._one("SELECT last FROM id_floors WHERE name = ?", (table,))
        if row is None or row[0] is None:
            return None
        top = self._one(f"SELECT max(id) FROM {table}")[0] or 0
        return row[0] + 1 if row[0] >= top else None

    def set_campaign_state(self, campaign_id: int, state: CampaignState, now: float | None = None) -> None:
        ended = now if state in (CampaignState.TERMINATED, CampaignState.CANCELLED) else None
        self.conn.execute(
            "UPDATE campaigns SET state = ?, ended_at = ? WHERE id = ?", (state.value, ended, campaign_id)
        )

    def counts(self, campaign_id: int) -> dict[JobState, int]:
        rows = self.conn.execute("SELECT state, n FROM job_counts WHERE campaign_id = ?", (campaign_id,))
        counts = dict.fromkeys(JOB_STATES.values(), 0)
        for state, n in rows:
            counts[JOB_STATES[state]] = n
        return counts

    def ended_since(self, since: float) -> list[Campaign]:
        """Campaigns ended (terminated or cancelled) at or after ``since``."""
        ids = [r[0] for r in self.conn.execute("SELECT id FROM campaigns WHERE ended_at >= ? ORDER BY id", (since,))]
        return [self.campaign(i) for i in ids]

    # -- its clusters

    def campaign_clusters(self, campaign_id: int, *, settings: bool = True) -> dict[str, dict]:
        """Each cluster of a campaign: its progress (prologue, epilogue, jobs sent) and, unless told not
        to, its settings (JSON decoded: callers on a hot path cache them, they never change)."""
        rows = self.conn.execute(
            f"SELECT cluster, {'settings' if settings else 'NULL'}, prologue_state, prologue_remote, "
            "epilogue_state, epilogue_remote, launched FROM campaign_clusters WHERE campaign_id = ?",
            (campaign_id,),
        )
        return {
            cluster: {
                "settings": json.loads(raw) if raw is not None else None,
                "prologue_state": ps,
                "prologue_remote": pr,
                "epilogue_state": es,
                "epilogue_remote": er,
                "launched": launched,
            }
            for cluster, raw, ps, pr, es, er, launched in rows
        }

    def set_stage(self, campaign_id: int, cluster: str, stage: str, state: str, remote: str | None = None) -> None:
        """Record a prologue or epilogue's progress (stage is 'prologue' or 'epilogue')."""
        if stage not in ("prologue", "epilogue"):
            raise ValueError(stage)
        self.conn.execute(
            f"UPDATE campaign_clusters SET {stage}_state = ?, {stage}_remote = ? WHERE campaign_id = ? AND cluster = ?",
            (state, remote, campaign_id, cluster),
        )

    def stages_in(self, states: Sequence[str]) -> list[tuple[int, str, str, str, str | None]]:
        """(campaign, cluster, stage, state, remote) for prologues/epilogues in the given states."""
        out = []
        for stage in ("prologue", "epilogue"):
            rows = self.conn.execute(
                f"SELECT cc.campaign_id, cc.cluster, cc.{stage}_state, cc.{stage}_remote FROM campaign_clusters cc "
                f"JOIN campaigns c ON c.id = cc.campaign_id WHERE c.state IN ('in_treatment', 'paused', 'cancelled') "
                f"AND cc.{stage}_state IN ({_marks(len(states))})",
                list(states),
            )
            out.extend((cid, cluster, stage, state, remote) for cid, cluster, state, remote in rows)
        return out

    # -- figures on its row

    def note_ends(self, campaign_id: int, outcomes: str, window: int) -> str:
        """Append a campaign's latest ends ("1" failed, "0" succeeded) to its window of the last ``window``
        ones; return the window."""
        row = self._one("SELECT recent_ends FROM campaigns WHERE id = ?", (campaign_id,))
        recent = ((row[0] if row else "") + outcomes)[-window:]
        self.conn.execute("UPDATE campaigns SET recent_ends = ? WHERE id = ?", (recent, campaign_id))
        return recent

    def note_cluster_ends(self, campaign_id: int, cluster: str, outcomes: str, window: int) -> str:
        """:meth:`note_ends` for the campaign's ends on one cluster."""
        row = self._one("SELECT recent FROM cluster_ends WHERE campaign_id = ? AND cluster = ?", (campaign_id, cluster))
        recent = ((row[0] if row else "") + outcomes)[-window:]
        self.conn.execute(
            "INSERT INTO cluster_ends (campaign_id, cluster, recent) VALUES (?, ?, ?) "
            "ON CONFLICT (campaign_id, cluster) DO UPDATE SET recent = excluded.recent",
            (campaign_id, cluster, recent),
        )
        return recent

    def forget_ends(self, campaign_id: int) -> None:
        """A paused campaign starts a new window when it resumes."""
        self.conn.execute("UPDATE campaigns SET recent_ends = '' WHERE id = ?", (campaign_id,))

    def add_waste(self, copies: dict[int, int]) -> None:
        """Count copies of campaigns' jobs killed after their jobs ran elsewhere ({campaign: copies})."""
        rows = [(n, c) for c, n in copies.items()]
        self.conn.executemany("UPDATE campaigns SET waste = waste + ? WHERE id = ?", rows)

    def waste(self, campaign_id: int) -> int:
        return self._one("SELECT waste FROM campaigns WHERE id = ?", (campaign_id,))[0]
