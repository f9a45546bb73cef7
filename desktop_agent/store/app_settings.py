"""App-level values (open tabs, window layout) kept next to the conversations."""

from __future__ import annotations

import json
from typing import Any

from desktop_agent.store.engine import Engine
from desktop_agent.store.errors import SecretInSettingsError
from desktop_agent.store.record_rows import dumps
from desktop_agent.store.secret_scrub import find_secret


class AppSettings:
    """The app-settings part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one engine (connection, lock, transactions).
    """

    def __init__(self, db: Engine) -> None:
        self._db = db

    def get_setting(self, key: str, default: Any = None) -> Any:
        """An app-level value (open tabs, window layout), or ``default``."""
        with self._db.reading() as conn:
            row = conn.execute("SELECT value FROM app_settings WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_setting(self, key: str, value: Any) -> None:
        """Save an app-level JSON value (keys never belong here: use the keyring)."""
        _refuse_secret(key, value)
        with self._db.writing() as conn:
            conn.execute(
                "INSERT INTO app_settings(key, value) VALUES (?, ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, dumps(value)),
            )

    def setting_once(self, key: str, value: Any) -> Any:
        """Save ``value`` unless the key has one already; returns the value kept.

        One transaction, so of several processes (``serve`` replicas) starting at
        once, the first one's value is the one every one of them gets back.
        """
        _refuse_secret(key, value)
        with self._db.writing() as conn:
            conn.execute(
                "INSERT INTO app_settings(key, value) VALUES (?, ?)"
                " ON CONFLICT(key) DO NOTHING",
                (key, dumps(value)),
            )
            row = conn.execute("SELECT value FROM app_settings WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0])

    def remember_recent(self, key: str, value: Any, limit: int) -> list[Any]:
        """Put ``value`` first in the list kept under ``key`` (once, at most ``limit`` long).

        For most-recent-first lists (the folders a person picked): read and
        written in one transaction, so two windows remembering at once both count.

        Returns:
            The list as kept now.
        """
        _refuse_secret(key, value)
        with self._db.writing() as conn:
            row = conn.execute("SELECT value FROM app_settings WHERE key = ?", (key,)).fetchone()
            kept = json.loads(row[0]) if row else []
            kept = [value, *(v for v in (kept if isinstance(kept, list) else []) if v != value)]
            kept = kept[:max(1, limit)]
            conn.execute(
                "INSERT INTO app_settings(key, value) VALUES (?, ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, dumps(kept)),
            )
        return kept

    def delete_setting(self, key: str) -> None:
        """Forget an app-level value; a missing key is not an error."""
        with self._db.writing() as conn:
            conn.execute("DELETE FROM app_settings WHERE key = ?", (key,))


def _refuse_secret(key: str, value: Any) -> None:
    """Raise if the setting looks like a key or token: those belong in the keyring."""
    where = find_secret({key: value})
    if where:
        raise SecretInSettingsError(
            f"The app setting '{where}' looks like a key or token; keys belong in the "
            "keyring (desktop_agent.appdata.secrets). Nothing was saved."
        )
