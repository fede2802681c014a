"""Mixed into :class:`~cigri.store.Store`: events (of clusters, campaigns and jobs) and the blacklists they
make."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence

from ..model import Event, EventClass, EventCode, EventState
from ..secrets import mask_text, mask_values, secret_values
from ._sql import _chunks, _marks


class Events:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]

    _EVENT_COLUMNS = (
        "id, class, code, state, cluster, campaign_id, job_id, message, created_at, closed_at, parent_id, closed_by"
    )

    _GLOBAL = "(class = 'cluster' OR code = 'ADMIN_BLACKLIST')"  # what gridevents -g lists

    @staticmethod
    def _event(row: tuple) -> Event:
        return Event(row[0], EventClass(row[1]), EventCode(row[2]), EventState(row[3]), *row[4:])

    def open_event(
        self,
        cls: EventClass,
        code: EventCode,
        message: str,
        now: float,
        *,
        cluster: str | None = None,
        campaign_id: int | None = None,
        job_id: int | None = None,
        parent: int | None = None,
    ) -> int:
        """Open an event; its message with secrets masked, and a campaign's environment values wherever they
        appear in it (:func:`cigri.secrets.secret_values`), whatever stage wrote it."""
        if campaign_id is not None:
            message = mask_values(message, self._environment_values(campaign_id))
        cur = self.conn.execute(
            "INSERT INTO events (class, code, state, cluster, campaign_id, job_id, message, created_at, parent_id) "
            "VALUES (?, ?, 'open', ?, ?, ?, ?, ?, ?)",
            (cls.value, code.value, cluster, campaign_id, job_id, mask_text(message), now, parent),
        )
        return cur.lastrowid

    def _environment_values(self, campaign_id: int) -> set[str]:
        """The values of the campaign's environment, on each of its clusters (kept unmasked in its settings)."""
        values: set[str] = set()
        for (raw,) in self.conn.execute("SELECT settings FROM campaign_clusters WHERE campaign_id = ?", (campaign_id,)):
            environment = json.loads(raw).get("environment") if raw else None
            values.update(secret_values(environment or {}))
        return values

    def events(
        self,
        *,
        campaign_id: int | None = None,
        event_id: int | None = None,
        open_only: bool = True,
        cls: EventClass | None = None,
        user: str | None = None,
        code: EventCode | None = None,
        global_only: bool = False,
    ) -> list[Event]:
        """Events, oldest first; ``global_only``: the cluster events and the admin's blacklists."""
        where, params = [], []
        if open_only:
            where.append("e.state = 'open'")
        if campaign_id is not None:
            where.append("e.campaign_id = ?")
            params.append(campaign_id)
        if event_id is not None:
            where.append("e.id = ?")
            params.append(event_id)
        if cls is not None:
            where.append("e.class = ?")
            params.append(cls.value)
        if code is not None:
            where.append("e.code = ?")
            params.append(code.value)
        if global_only:
            where.append(self._GLOBAL.replace("class", "e.class").replace("code", "e.code"))
        if user:
            where.append("(e.campaign_id IS NULL OR c.user = ?)")
            params.append(user)
        sql = (
            f"SELECT {', '.join('e.' + c for c in self._EVENT_COLUMNS.split(', '))} FROM events e "
            "LEFT JOIN campaigns c ON c.id = e.campaign_id"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._event(row) for row in self.conn.execute(sql + " ORDER BY e.id", params)]

    def open_event_counts(self, ignore: Sequence[EventCode] = ()) -> dict[int, int]:
        """Open events per campaign, those of the ``ignore`` codes left out."""
        rows = self.conn.execute(
            "SELECT campaign_id, count(*) FROM events WHERE state = 'open' AND campaign_id IS NOT NULL "
            f"AND code NOT IN ({_marks(len(ignore))}) GROUP BY campaign_id",
            [code.value for code in ignore],
        )
        return dict(rows.fetchall())

    def close_events(self, event_ids: Sequence[int], now: float, by: str | None = None) -> None:
        """Close the open ones of ``event_ids``, noting ``by`` (why) when given."""
        for chunk in _chunks(list(event_ids)):
            self.conn.execute(
                "UPDATE events SET state = 'closed', closed_at = ?, closed_by = ? "
                f"WHERE id IN ({_marks(len(chunk))}) AND state = 'open'",
                [now, by, *chunk],
            )

    def open_cluster_event(self, cluster: str) -> Event | None:
        """The open transport event of ``cluster`` (the admin's blacklist is not one: it does not close itself)."""
        row = self._one(
            f"SELECT {self._EVENT_COLUMNS} FROM events WHERE state = 'open' AND class = 'cluster' AND cluster = ? "
            "AND code != 'ADMIN_BLACKLIST' ORDER BY id LIMIT 1",
            (cluster,),
        )
        return self._event(row) if row else None

    def blocked_clusters(self, campaign_id: int) -> set[str]:
        """Clusters on which an open campaign event stops the campaign, and those the admin blacklisted."""
        rows = self.conn.execute(
            "SELECT DISTINCT cluster FROM events WHERE state = 'open' AND cluster IS NOT NULL "
            "AND ((class = 'campaign' AND campaign_id = ?) OR code = 'ADMIN_BLACKLIST')",
            (campaign_id,),
        )
        return {r[0] for r in rows}

    # -- blacklists

    def blacklist(self, campaign_id: int | None, cluster: str) -> Event | None:
        """The open blacklist of ``cluster`` for a campaign (None: the admin's, for every campaign)."""
        if campaign_id is None:
            where, params = "code = 'ADMIN_BLACKLIST'", (cluster,)
        else:
            where, params = "code = 'BLACKLIST' AND campaign_id = ?", (cluster, campaign_id)
        row = self._one(
            f"SELECT {self._EVENT_COLUMNS} FROM events WHERE state = 'open' AND cluster = ? AND {where} "
            "ORDER BY id LIMIT 1",
            params,
        )
        return self._event(row) if row else None

    def causes(self, blacklist: Event) -> list[Event]:
        """A blacklist's causes: its parent and the later causes that joined it."""
        rows = self.conn.execute(
            f"SELECT {self._EVENT_COLUMNS} FROM events WHERE id = ? OR parent_id = ? ORDER BY id",
            (blacklist.parent_id, blacklist.id),
        )
        return [self._event(row) for row in rows]

    def blacklists_of(self, causes: Sequence[Event]) -> list[Event]:
        """The open blacklists the events ``causes`` caused (their parent) or joined (its children)."""
        found: dict[int, Event] = {}
        caused = [e.id for e in causes]
        joined = [e.parent_id for e in causes if e.parent_id is not None]
        for column, values in (("parent_id", caused), ("id", joined)):
            for chunk in _chunks(values):
                for row in self.conn.execute(
                    f"SELECT {self._EVENT_COLUMNS} FROM events WHERE state = 'open' AND code = 'BLACKLIST' "
                    f"AND {column} IN ({_marks(len(chunk))})",
                    chunk,
                ):
                    found[row[0]] = self._event(row)
        return [found[i] for i in sorted(found)]

    # -- the notifier's read (gridnotify)

    def events_after(self, event_id: int) -> list[tuple[Event, str | None, str | None]]:
        """Events newer than ``event_id``, oldest first, each with its campaign's user and name (None, None: a
        cluster's)."""
        columns = ", ".join("e." + c for c in self._EVENT_COLUMNS.split(", "))
        sql = (
            f"SELECT {columns}, c.user, c.name FROM events e LEFT JOIN campaigns c ON c.id = e.campaign_id "
            "WHERE e.id > ? ORDER BY e.id"
        )
        return [(self._event(row[:-2]), row[-2], row[-1]) for row in self.conn.execute(sql, (event_id,))]
