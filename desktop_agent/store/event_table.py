"""Each conversation's event log on disk, with ids the database hands out.

The REST server appends every event a conversation produces (text deltas,
tool calls, approvals, state changes) and readers page through them by id.
Ids are allocated inside the write transaction that inserts the events
(``max(event_id) + 1`` under the engine's one write lock), not from a
process's memory: two ``serve`` processes on one data folder, or replicas on
one PostgreSQL database, then interleave their events gaplessly instead of
overwriting each other's, and an id, once read, always names the same event.
On PostgreSQL the commit also NOTIFYs other replicas (see
:data:`~desktop_agent.store.dialects.EVENTS_CHANNEL`).

Callers insert many events per transaction (:func:`append_events` takes a
batch), because a commit, not a row, is what costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from desktop_agent.store.engine import Engine
from desktop_agent.store.sql_connection import SqlConnection


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append.

    Attributes:
        conversation_id: Whose log it goes to.
        type: The event's kind (``text``, ``state``...).
        data_json: Its payload, already JSON text (encoded once by the caller).
        created_at: Epoch seconds when it happened.
    """

    conversation_id: str
    type: str
    data_json: str
    created_at: float


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event read back, with the id the database gave it.

    Attributes:
        conversation_id: Whose log it is in.
        id: Its id, 1, 2, 3... within the conversation.
        type: The event's kind.
        data_json: Its payload as JSON text.
        created_at: Epoch seconds when it happened.
    """

    conversation_id: str
    id: int
    type: str
    data_json: str
    created_at: float


def append_events(conn: SqlConnection, events: Sequence[NewEvent]) -> list[StoredEvent]:
    """Insert ``events`` in order, each conversation's ids continuing from its newest.

    Must run inside a write transaction (``BEGIN IMMEDIATE``) so no other
    process allocates the same ids meanwhile.
    """
    next_ids: dict[str, int] = {}
    stored: list[StoredEvent] = []
    for event in events:
        cid = event.conversation_id
        if cid not in next_ids:
            next_ids[cid] = last_event_id(conn, cid) + 1
        stored.append(StoredEvent(cid, next_ids[cid], event.type, event.data_json,
                                  event.created_at))
        next_ids[cid] += 1
    conn.executemany(
        "INSERT INTO events(conversation_id, event_id, type, data, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(e.conversation_id, e.id, e.type, e.data_json, e.created_at) for e in stored],
    )
    return stored


def last_event_id(conn: SqlConnection, conversation_id: str) -> int:
    """The newest event's id in the conversation (0 when it has none)."""
    row = conn.execute(
        "SELECT max(event_id) FROM events WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    return int(row[0] or 0)


def read_events(
    conn: SqlConnection,
    conversation_id: str,
    after: int = 0,
    limit: int = 100,
    before: int | None = None,
) -> list[StoredEvent]:
    """Events with ``after < id`` (and ``id < before`` when given), oldest first."""
    sql = ("SELECT event_id, type, data, created_at FROM events"
           " WHERE conversation_id = ? AND event_id > ?")
    params: list[object] = [conversation_id, after]
    if before is not None:
        sql += " AND event_id < ?"
        params.append(before)
    sql += " ORDER BY event_id LIMIT ?"
    params.append(limit)
    return [
        StoredEvent(conversation_id, int(r[0]), str(r[1]), str(r[2]), float(r[3]))
        for r in conn.execute(sql, params).fetchall()
    ]


def event_conversations(conn: SqlConnection) -> list[str]:
    """Conversations that have events (to prune those whose conversation is gone)."""
    rows = conn.execute("SELECT DISTINCT conversation_id FROM events").fetchall()
    return [str(r[0]) for r in rows]


def delete_events(conn: SqlConnection, conversation_id: str) -> None:
    """Forget a conversation's events."""
    conn.execute("DELETE FROM events WHERE conversation_id = ?", (conversation_id,))


class EventTable:
    """The event-log part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one engine (connection, lock, transactions).
    """

    def __init__(self, db: Engine) -> None:
        self._db = db

    def append_events(self, events: Sequence[NewEvent]) -> list[StoredEvent]:
        """Append events in one transaction; the database gives each its id."""
        if not events:
            return []
        with self._db.writing() as conn:
            stored = append_events(conn, events)
            self._db.dialect.events_appended(conn, {e.conversation_id: e.id for e in stored})
        return stored

    def read_events(
        self, conversation_id: str, after: int = 0, limit: int = 100, before: int | None = None
    ) -> list[StoredEvent]:
        """Events with ids in ``(after, before)``, oldest first, at most ``limit``."""
        with self._db.reading() as conn:
            return read_events(conn, conversation_id, after, limit, before)

    def last_event_id(self, conversation_id: str) -> int:
        """The id of the conversation's newest event (0 when it has none)."""
        with self._db.reading() as conn:
            return last_event_id(conn, conversation_id)

    def event_conversations(self) -> list[str]:
        """Conversations that have events on disk."""
        with self._db.reading() as conn:
            return event_conversations(conn)

    def delete_events(self, conversation_id: str) -> None:
        """Forget a conversation's events."""
        with self._db.writing() as conn:
            delete_events(conn, conversation_id)
