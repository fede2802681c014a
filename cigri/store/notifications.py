"""Mixed into :class:`~cigri.store.Store`: gridnotify (issue 14, item 3): subscriptions, the notifier's
marks (the latest event and campaign end it looked at) and the outbox of notifications."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..secrets import mask_text
from ._sql import _chunks, _marks


class Notifications:
    conn: sqlite3.Connection
    _one: Callable[..., tuple | None]

    def subscribe(self, user: str, kind: str, target: str, severity: str, now: float) -> bool:
        """Subscribe ``user``'s ``target`` (or change its severity); whether it is new."""
        new = self._one("SELECT 1 FROM subscriptions WHERE user = ? AND kind = ? AND target = ?", (user, kind, target))
        self.conn.execute(
            "INSERT INTO subscriptions (user, kind, target, severity, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (user, kind, target) DO UPDATE SET severity = excluded.severity",
            (user, kind, target, severity, now),
        )
        return new is None

    def unsubscribe(self, user: str, kind: str | None = None, target: str | None = None) -> int:
        """Remove ``user``'s subscriptions (those of ``kind`` and ``target`` when given) and their outbox;
        how many."""
        where, params = ["user = ?"], [user]
        for column, value in (("kind", kind), ("target", target)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        ids = [r[0] for r in self.conn.execute(f"SELECT id FROM subscriptions WHERE {' AND '.join(where)}", params)]
        for chunk in _chunks(ids):
            marks = _marks(len(chunk))
            self.conn.execute(f"DELETE FROM notifications WHERE subscription_id IN ({marks})", chunk)
            self.conn.execute(f"DELETE FROM subscriptions WHERE id IN ({marks})", chunk)
        return len(ids)

    def subscriptions(self, user: str | None = None) -> list[dict]:
        """Subscriptions (a user's, or everyone's), oldest first: id, user, kind, target, severity, created_at."""
        sql = "SELECT id, user, kind, target, severity, created_at FROM subscriptions"
        rows = self.conn.execute(sql + (" WHERE user = ?" if user else "") + " ORDER BY id", (user,) if user else ())
        keys = ("id", "user", "kind", "target", "severity", "created_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def notify_mark(self) -> int:
        """The last event the notifier has looked at."""
        return int(self._one("SELECT value FROM meta WHERE key = 'notify_event_id'")[0])

    def set_notify_mark(self, event_id: int) -> None:
        self.conn.execute("UPDATE meta SET value = ? WHERE key = 'notify_event_id'", (str(event_id),))

    def notify_end_mark(self) -> float:
        """The latest campaign end the notifier has looked at (0 before any)."""
        row = self._one("SELECT value FROM meta WHERE key = 'notify_end_at'")
        return float(row[0]) if row else 0.0

    def set_notify_end_mark(self, ended_at: float) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('notify_end_at', ?)", (repr(ended_at),))

    def queue_notification(
        self, subscription_id: int, topic: str, severity: str, subject: str, body: str, now: float
    ) -> bool:
        """Queue a notification unless that subscription already has that topic (each is sent once); whether
        it was queued."""
        return (
            self.conn.execute(
                "INSERT OR IGNORE INTO notifications (subscription_id, topic, severity, subject, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (subscription_id, topic, severity, subject, body, now),
            ).rowcount
            > 0
        )

    def unsent_notifications(self, max_attempts: int) -> list[dict]:
        """Notifications not yet sent, tried fewer than ``max_attempts`` times, with their target, oldest first."""
        rows = self.conn.execute(
            "SELECT n.id, s.kind, s.target, n.topic, n.severity, n.subject, n.body, n.attempts FROM notifications n "
            "JOIN subscriptions s ON s.id = n.subscription_id WHERE n.sent_at IS NULL AND n.attempts < ? "
            "ORDER BY n.id",
            (max_attempts,),
        )
        keys = ("id", "kind", "target", "topic", "severity", "subject", "body", "attempts")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def notification_sent(self, notification_id: int, now: float) -> None:
        self.conn.execute("UPDATE notifications SET sent_at = ?, error = NULL WHERE id = ?", (now, notification_id))

    def notification_failed(self, notification_id: int, error: str) -> None:
        self.conn.execute(
            "UPDATE notifications SET attempts = attempts + 1, error = ? WHERE id = ?",
            (mask_text(error), notification_id),
        )

    def notifications(self) -> list[dict]:
        """Every queued notification: id, subscription_id, topic, severity, subject, sent_at, attempts, error."""
        rows = self.conn.execute(
            "SELECT id, subscription_id, topic, severity, subject, sent_at, attempts, error "
            "FROM notifications ORDER BY id"
        )
        keys = ("id", "subscription_id", "topic", "severity", "subject", "sent_at", "attempts", "error")
        return [dict(zip(keys, row, strict=True)) for row in rows]
