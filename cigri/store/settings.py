"""Mixed into :class:`~cigri.store.Store`: the configuration keys recorded in the state (``grid config set``)
and the metascheduler strategies' state."""

from __future__ import annotations

import json
import sqlite3


class Settings:
    conn: sqlite3.Connection
    overrides: dict[str, object]  # set by Store: the configuration file's and environment's keys

    def settings(self) -> dict[str, object]:
        """The effective configuration: the state's keys (grid config set), then :attr:`overrides` (the
        configuration file's and the environment's, which win) -> value."""
        return {**self.state_settings(), **self.overrides}

    def state_settings(self) -> dict[str, object]:
        """The keys recorded in the state (grid config set): key -> value."""
        return {key: json.loads(value) for key, value in self.conn.execute("SELECT key, value FROM settings")}

    def set_setting(self, key: str, value: object) -> None:
        self.conn.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def unset_setting(self, key: str) -> bool:
        """Remove a key; whether it was set."""
        return self.conn.execute("DELETE FROM settings WHERE key = ?", (key,)).rowcount > 0

    # -- the metascheduler strategies' state

    def strategy_states(self) -> dict[str, dict]:
        """Each metascheduler strategy's state, as it left it."""
        return {name: json.loads(state) for name, state in self.conn.execute("SELECT name, state FROM strategy_state")}

    def set_strategy_state(self, name: str, state: object) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO strategy_state (name, state) VALUES (?, ?)", (name, json.dumps(state))
        )
