"""Each conversation's event log on disk, with ids the database hands out.

The REST server appends every event a conversation produces (text deltas,
tool calls, approvals, state changes) and readers page through them by id.
Ids are allocated inside the write transaction that inserts the events
(``max(event_id) + 1`` while it holds the conversation's log, see
:meth:`~desktop_agent.store.engine.Engine.writing_beside`), not from a
process's memory: two ``serve`` processes on one data folder, or replicas on
one PostgreSQL database, then interleave their events gaplessly instead of
overwriting each other's, and an id, once read, always names the same event.
So the ids committed in a conversation are always 1..N, with no hole a reader
could skip (until the retention rule below removes some: readers page by
``event_id > after`` and never count on every id being there). On PostgreSQL
the commit also NOTIFYs other replicas (see :data:`~desktop_agent.store.dialects.EVENTS_CHANNEL`).

Callers insert many events per transaction (:func:`append_events` takes a
batch), because a commit, not a row, is what costs; a batch costs the same few
statements however many conversations it holds, and a replica that hears of
other replicas' commits reads the new events of all of them in one query
(:func:`read_events_after`).

Retention: a conversation's live output (:data:`LIVE_OUTPUT_TYPES`: streamed text
and reasoning deltas, a running command's output, progress reports) is only
needed while its turn is followed; once the turn ended, the ``message`` and
``tool_result`` events (and the stored messages) hold the same content, capped
as stored. :func:`prune_live_output` deletes it, and the REST server calls it
when the conversation's next turn starts, so the latest turn's live output stays
whole for whoever reads it after the fact. Without it the events table kept every
message a second time in pieces, and an hour of a command's output (~350 MB).

Size on SQLite: a payload of :data:`COMPRESS_FROM` characters or more (a
``message`` or ``tool_result`` event: a reply, a command's output) is kept
zlib-compressed, as a BLOB; readers get the same JSON text back
(:func:`event_data`). Those payloads were half of the data folder's growth, and
text compresses about sevenfold. PostgreSQL compresses large values itself
(TOAST), so its function appends text as it is.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence

from desktop_agent.store.engine import Engine
from desktop_agent.store.event_records import NewEvent, StoredEvent
from desktop_agent.store.sql_connection import SqlConnection

_BATCH_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)

LIVE_OUTPUT_TYPES = ("text", "thinking", "tool_output", "tool_progress", "prompt_progress")
"""Event types that repeat, in pieces, what a finished turn stores whole (see the retention
rule in the module docstring)."""

COMPRESS_FROM = 2048
"""Payloads of at least this many characters are stored compressed on SQLite."""

MAX_CONVERSATIONS_PER_QUERY = 200
"""Conversations one query names at most (SQLite's limit on parameters is far above)."""


def stored_form(data_json: str) -> str | bytes:
    """How a payload is kept on SQLite: as it is, or compressed when large."""
    if len(data_json) < COMPRESS_FROM:
        return data_json
    return zlib.compress(data_json.encode(), 1)


def event_data(value: object) -> str:
    """A stored payload's JSON text, whichever form it was kept in."""
    if isinstance(value, bytes | bytearray | memoryview):
        return zlib.decompress(value).decode()
    return str(value)


def append_events(conn: SqlConnection, events: Sequence[NewEvent],
                  payloads: Sequence[str | bytes] | None = None) -> list[StoredEvent]:
    """Insert ``events`` in order, each conversation's ids continuing from its newest.

    Must run inside a write transaction that holds these conversations' logs
    (:meth:`EventTable.append_events`) so no other process allocates the same
    ids meanwhile.

    Args:
        conn: The write transaction's connection.
        events: What to append.
        payloads: Each event's data as it goes to disk (:func:`stored_form`, made
            before the transaction so compressing does not hold the lock);
            default: each made here.
    """
    if payloads is None:
        payloads = [stored_form(e.data_json) for e in events]
    named = list(dict.fromkeys(e.conversation_id for e in events))
    next_ids = {cid: newest + 1 for cid, newest in last_event_ids(conn, named).items()}
    stored: list[StoredEvent] = []
    for event in events:
        cid = event.conversation_id
        stored.append(StoredEvent(cid, next_ids[cid], event.type, event.data_json,
                                  event.created_at))
        next_ids[cid] += 1
    conn.executemany(
        "INSERT INTO events(conversation_id, event_id, type, data, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(e.conversation_id, e.id, e.type, payload, e.created_at)
         for e, payload in zip(stored, payloads, strict=True)],
    )
    return stored


def last_event_id(conn: SqlConnection, conversation_id: str) -> int:
    """The newest event's id in the conversation (0 when it has none)."""
    row = conn.execute(
        "SELECT max(event_id) FROM events WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    return int(row[0] or 0)


def last_event_ids(conn: SqlConnection, conversation_ids: Sequence[str]) -> dict[str, int]:
    """The newest event's id of each conversation (0 when it has none), in one query."""
    if len(conversation_ids) == 1:
        return {conversation_ids[0]: last_event_id(conn, conversation_ids[0])}
    newest: dict[str, int] = {}
    for start in range(0, len(conversation_ids), MAX_CONVERSATIONS_PER_QUERY):
        chunk = conversation_ids[start:start + MAX_CONVERSATIONS_PER_QUERY]
        # One max() per conversation, each answered from the primary key's end
        # (a GROUP BY would read every event of every conversation named).
        rows = conn.execute(
            "SELECT v.column1, (SELECT max(event_id) FROM events e"
            " WHERE e.conversation_id = v.column1)"
            f" FROM (VALUES {', '.join(['(?)'] * len(chunk))}) AS v",
            chunk,
        ).fetchall()
        newest.update((str(r[0]), int(r[1] or 0)) for r in rows)
    return newest


def read_events_after(
    conn: SqlConnection, positions: Mapping[str, int], limit: int
) -> dict[str, list[StoredEvent]]:
    """Each conversation's events after its position, oldest first, in one query.

    At most ``limit`` events in all; when more are there, some conversations get
    only their oldest few (still without holes), and the rest is for a later read.
    """
    found: dict[str, list[StoredEvent]] = {}
    items = list(positions.items())[:MAX_CONVERSATIONS_PER_QUERY]
    if not items:
        return found
    where = " OR ".join(["(conversation_id = ? AND event_id > ?)"] * len(items))
    rows = conn.execute(
        "SELECT conversation_id, event_id, type, data, created_at FROM events"
        f" WHERE {where} ORDER BY conversation_id, event_id LIMIT ?",
        [*(value for item in items for value in item), limit],
    ).fetchall()
    for r in rows:
        cid = str(r[0])
        found.setdefault(cid, []).append(
            StoredEvent(cid, int(r[1]), str(r[2]), event_data(r[3]), float(r[4])))
    return found


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
        StoredEvent(conversation_id, int(r[0]), str(r[1]), event_data(r[2]), float(r[3]))
        for r in conn.execute(sql, params).fetchall()
    ]


def prune_live_output(conn: SqlConnection, conversation_id: str) -> int:
    """Delete the conversation's live-output events; returns how many went.

    Its newest event always stays, whatever its type: ids are handed out as
    ``max(event_id) + 1``, and an id once read must never name another event.
    """
    marks = ", ".join("?" * len(LIVE_OUTPUT_TYPES))
    cursor = conn.execute(
        f"DELETE FROM events WHERE conversation_id = ? AND type IN ({marks})"
        " AND event_id < (SELECT max(event_id) FROM events WHERE conversation_id = ?)",
        (conversation_id, *LIVE_OUTPUT_TYPES, conversation_id),
    )
    return max(0, int(cursor.rowcount))


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
        call = self._db.dialect.append_events_call
        if call is not None:  # one statement, its own transaction (PostgreSQL's function)
            # One text parameter: psycopg dumps arrays in Python, element by element.
            batch = _BATCH_ENCODER.encode(
                [[e.conversation_id, e.type, e.data_json, e.created_at] for e in events])
            with self._db.reading() as conn:
                ids = self._db.dialect.append_events(conn, batch)
            return [StoredEvent(e.conversation_id, event_id, e.type, e.data_json,
                                e.created_at) for e, event_id in zip(events, ids, strict=True)]
        payloads = [stored_form(e.data_json) for e in events]
        # Keyed apart from the conversation's other writes: only appends race for ids.
        with self._db.writing_beside({f"events/{e.conversation_id}" for e in events}) as conn:
            stored = append_events(conn, events, payloads)
        return stored

    def read_events(
        self, conversation_id: str, after: int = 0, limit: int = 100, before: int | None = None
    ) -> list[StoredEvent]:
        """Events with ids in ``(after, before)``, oldest first, at most ``limit``."""
        with self._db.reading() as conn:
            return read_events(conn, conversation_id, after, limit, before)

    def read_events_after(
        self, positions: Mapping[str, int], limit: int = 5000
    ) -> dict[str, list[StoredEvent]]:
        """The events after each conversation's position (``{id: after}``), in one query.

        For a replica that heard other replicas commit to many conversations at
        once: one round trip instead of one per conversation. At most ``limit``
        events in all (each conversation's list is its oldest, without holes); at
        most :data:`MAX_CONVERSATIONS_PER_QUERY` conversations, the others get none.
        """
        with self._db.reading() as conn:
            return read_events_after(conn, positions, limit)

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

    def prune_live_output(self, conversation_id: str) -> int:
        """Delete the conversation's live output (the retention rule); returns how many went."""
        with self._db.writing_beside({f"events/{conversation_id}"}) as conn:
            return prune_live_output(conn, conversation_id)
