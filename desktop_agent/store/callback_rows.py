"""HTTP callbacks shared by ``serve`` replicas (PostgreSQL): who wants a conversation's events.

On one ``serve`` (SQLite) callbacks live in that process's memory only, because a
callback URL may carry a token. Replicas on one PostgreSQL database must all know
them (a callback registered through replica A receives the events of a turn that
replica B runs), so there each is a row here: the URL sealed with the replicas' key
(sealing happens in :mod:`desktop_agent.appdata`; this part never sees the URL), the
event types (not secret), its conversation (rows go when it is deleted).

Every change NOTIFYs :data:`CALLBACKS_CHANNEL` with the conversation's id, delivered
when its transaction commits, so each replica reloads that conversation's callbacks
(:meth:`~desktop_agent.store.store.Store.watch_callbacks`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from desktop_agent.store.engine import Engine
from desktop_agent.store.errors import StoreError
from desktop_agent.store.sql_connection import SqlConnection

CALLBACKS_CHANNEL = "desktop_agent_callbacks"
"""PostgreSQL's LISTEN/NOTIFY channel: a conversation id whose callbacks changed."""


@dataclass(frozen=True)
class CallbackRow:
    """One stored callback.

    Attributes:
        id: The callback's id (the API's).
        conversation_id: Whose events it receives.
        sealed_url: The receiver's URL, sealed with the replicas' key.
        event_types: The event types it wants; None for all.
    """

    id: str
    conversation_id: str
    sealed_url: str
    event_types: tuple[str, ...] | None


class CallbackRows:
    """The shared-callbacks part of :class:`~desktop_agent.store.store.Store` (PostgreSQL)."""

    def __init__(self, db: Engine) -> None:
        self._db = db

    def _require_table(self) -> None:
        if self._db.dialect.name != "postgresql":
            raise StoreError(
                "Callbacks are kept in the database on PostgreSQL only (serve --database); "
                "one server on a SQLite file keeps them in its memory."
            )

    def add_callback_row(self, callback_id: str, conversation_id: str, sealed_url: str,
                         event_types: Sequence[str] | None) -> None:
        """Store a callback and tell every replica.

        Raises:
            DatabaseAccessError: The conversation is gone (or the database failed).
        """
        self._require_table()
        types = None if event_types is None else json.dumps(sorted(event_types))
        with self._db.writing() as conn:
            conn.execute(
                "INSERT INTO callbacks(id, conversation_id, sealed_url, event_types, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (callback_id, conversation_id, sealed_url, types, time.time()),
            )
            _notify(conn, conversation_id)

    def callback_rows(self, conversation_id: str | None = None) -> list[CallbackRow]:
        """The callbacks of one conversation (or of all), oldest first."""
        self._require_table()
        sql = "SELECT id, conversation_id, sealed_url, event_types FROM callbacks"
        params: tuple[str, ...] = ()
        if conversation_id is not None:
            sql += " WHERE conversation_id = ?"
            params = (conversation_id,)
        with self._db.reading() as conn:
            rows = conn.execute(sql + " ORDER BY seq", params).fetchall()
        return [
            CallbackRow(str(r[0]), str(r[1]), str(r[2]),
                        None if r[3] is None else tuple(json.loads(r[3])))
            for r in rows
        ]

    def delete_callback_row(self, conversation_id: str, callback_id: str) -> bool:
        """Remove one callback and tell every replica; False if there was none."""
        self._require_table()
        with self._db.writing() as conn:
            removed = conn.execute(
                "DELETE FROM callbacks WHERE id = ? AND conversation_id = ?",
                (callback_id, conversation_id),
            ).rowcount
            if removed:
                _notify(conn, conversation_id)
        return bool(removed)

    def delete_conversation_callbacks(self, conversation_id: str) -> None:
        """Remove every callback of a conversation being deleted, and tell every replica."""
        self._require_table()
        with self._db.writing() as conn:
            conn.execute("DELETE FROM callbacks WHERE conversation_id = ?", (conversation_id,))
            _notify(conn, conversation_id)

    def watch_callbacks(
        self, on_change: Callable[[str], None]
    ) -> Callable[[], None] | None:
        """Hear every replica's callback changes; returns a stop function (None on SQLite).

        ``on_change(conversation_id)`` is called from a thread of the store's, and
        ``on_change("")`` each time listening (re)starts, when a change may have been
        missed: reload everything then.
        """
        return self._db.watch_channel(CALLBACKS_CHANNEL, on_change)


def _notify(conn: SqlConnection, conversation_id: str) -> None:
    conn.execute("SELECT pg_notify(?, ?)", (CALLBACKS_CHANNEL, conversation_id))
