"""The statements that differ between SQLite and PostgreSQL, one class per engine.

Everything else the store runs is SQL both engines read the same way (see
:mod:`~desktop_agent.store.engine` for why the store is built like this). Kept to
what must differ: full-text search (FTS5 against PostgreSQL text search), the
order of conversations updated in the same instant, updating one JSON field of a
streaming reply, learning a new message's key, and waking other replicas when
events are appended or a tool call's question is answered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from desktop_agent.store.event_records import StoredEvent
from desktop_agent.store.search_query import fts_query
from desktop_agent.store.sql_connection import SqlConnection, SqlCursor

EVENTS_CHANNEL = "desktop_agent_events"
"""PostgreSQL's LISTEN/NOTIFY channel: one notification per commit of events (several
when the lines pass :data:`NOTIFY_SPLIT_BYTES`), a line per event appended. A small
event travels whole, ``<conversation id>:<id>:<type>:<created at>:<data JSON>``, so
the replicas that stream it need not read it back; a larger one as
``<conversation id>:<id>``, to be read from the table. Conversation ids are the
store's hex ids and types are names, holding neither a colon nor a line break; JSON
text holds no raw line break."""

CARRIED_DATA_BYTES = 800
"""An event's data travels in the notification up to this size (and its line stays
under the 1,000 bytes :data:`NOTIFY_SPLIT_BYTES` leaves)."""

EventsCommitted = Callable[[dict[str, int], list[StoredEvent]], None]
"""Called for each commit of events heard with ``{conversation id: newest event id}``
and the events that travelled whole, in order."""

NOTIFY_SPLIT_BYTES = 7000
"""Lines start a new notification once a payload holds this many bytes: PostgreSQL
refuses a payload of 8,000 bytes or more, and a line stays under the 1,000 bytes left
(an event whole only up to :data:`CARRIED_DATA_BYTES` of data, else just its ids)."""

APPROVALS_CHANNEL = "desktop_agent_approvals"
"""The channel of answered tool-call questions: ``<conversation id>:0`` per answer."""

_WORD = re.compile(r"\w+", re.UNICODE)


class Dialect:
    """SQLite's statements (the default engine); :class:`PostgresDialect` overrides them.

    Attributes:
        name: ``"sqlite"`` or ``"postgresql"``.
        insertion_order: The column that orders conversations created in the same instant.
        same_as: Equality that holds for two NULLs too (SQLite's ``IS`` uses the index).
        like: Case-insensitive LIKE (SQLite's LIKE is, for ASCII; PostgreSQL's ILIKE).
        keep_identity: Written after an INSERT's columns to keep the ``seq`` given.
        text_match: The WHERE clause matching :meth:`text_query` against ``message_search``.
        keyed_writes: Whether :meth:`Engine.writing_beside` heeds the keys it is given
            (so a caller reads what to name only where it matters).
    """

    name = "sqlite"
    insertion_order = "c.rowid"
    same_as = "IS"
    like = "LIKE"
    keep_identity = ""
    text_match = "message_search MATCH ?"
    keyed_writes = False
    append_events_call: str | None = None
    """A statement appending a batch of events by itself (one JSON text: a list of
    ``[conversation id, type, data JSON, created at]``), returning their ids in order;
    None: append in a write transaction
    (:func:`~desktop_agent.store.event_table.append_events`)."""
    checkpoint_call: str | None = None
    """A statement saving a streaming reply's text by itself (message id, content,
    thinking), returning 1 (saved), 0 (no longer streaming) or -1 (no such message);
    None: :meth:`checkpoint` in a write transaction."""
    statements_commit_alone = False
    """Whether a statement run on :meth:`Engine.reading`'s connection is its own
    transaction (autocommit), so a write of one statement that needs no lock of the
    store's (a turn lease given back) can go without one; False: SQLite's module opens
    a transaction it leaves open, so every write goes through :meth:`Engine.writing`."""

    def append_events(self, conn: SqlConnection, batch: str) -> list[int]:
        """Run :attr:`append_events_call` on ``batch``; the ids given, in order.

        Only for an engine that has the call (see
        :meth:`~desktop_agent.store.event_table.EventTable.append_events`).
        """
        if self.append_events_call is None:
            raise NotImplementedError("this engine appends events in a write transaction")
        return [int(row[0]) for row in conn.execute(self.append_events_call, (batch,)).fetchall()]

    def text_query(self, text: str) -> str | None:
        """The engine's query for typed words (all must match, the last as a prefix)."""
        return fts_query(text)

    def snippet(self, query: str) -> tuple[str, list[Any]]:
        """The SELECT expression for a hit's excerpt (matches in ``[...]``) and its parameters."""
        return "snippet(message_search, 0, '[', ']', '…', 12)", []

    def checkpoint(
        self, conn: SqlConnection, content: str, thinking: str | None, message_id: str
    ) -> SqlCursor:
        """Set ``content`` (and ``thinking`` when given) of a message still streaming."""
        return conn.execute(
            "UPDATE messages SET message = json_set(message, '$.content', ?1),"
            " metadata = CASE WHEN ?2 IS NULL THEN metadata"
            " ELSE json_set(metadata, '$.thinking', ?2) END"
            " WHERE id = ?3 AND status = 'streaming'",
            (content, thinking, message_id),
        )

    def insert_message(self, conn: SqlConnection, sql: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT INTO messages`` and return the new row's ``seq``."""
        cursor = conn.execute(sql, params)
        seq = getattr(cursor, "lastrowid", None)
        if not isinstance(seq, int):
            raise RuntimeError("the database gave the new message no row id")
        return seq

    def insert_searchable_message(self, conn: SqlConnection, sql: str, params: Sequence[Any],
                                  body: str) -> None:
        """Run an ``INSERT INTO messages`` and index the new row's ``body`` for search."""
        seq = self.insert_message(conn, sql, params)
        conn.execute("INSERT INTO message_search(rowid, body) VALUES (?, ?)", (seq, body))

    def rows_copied(self, conn: SqlConnection) -> None:
        """After rows were copied in with their keys (SQLite's next rowid follows by itself)."""

    def approval_answered(self, conn: SqlConnection, conversation_id: str) -> None:
        """Tell the replica running the turn that its question was answered (SQLite: none)."""


class PostgresDialect(Dialect):
    """PostgreSQL's statements: text search, NOTIFY.

    Text search uses the ``desktop_agent_search`` configuration the schema creates
    (see :mod:`~desktop_agent.store.postgres.postgres_schema`): words lower-cased,
    not stemmed, accents folded, as FTS5's ``unicode61 remove_diacritics``
    tokenizer does, so a search finds the same messages on both engines.
    """

    name = "postgresql"
    insertion_order = "c.seq"
    same_as = "IS NOT DISTINCT FROM"
    like = "ILIKE"
    keep_identity = " OVERRIDING SYSTEM VALUE"
    text_match = "message_search.terms @@ to_tsquery('desktop_agent_search', ?)"
    keyed_writes = True

    statements_commit_alone = True
    append_events_call = "SELECT * FROM desktop_agent_append_events(?::text)"

    def append_events(self, conn: SqlConnection, batch: str) -> list[int]:
        """Run :attr:`append_events_call` on ``batch``; the ids given, in order.

        As a statement prepared once per connection and run straight on libpq
        (:meth:`~desktop_agent.store.postgres.placeholders.PlaceholderConnection.prepared_rows`):
        it is the statement a busy replica runs most.
        """
        # Duck-typed: this module is the SQLite store's too, and the desktop app (and its
        # one binary) ships without the PostgreSQL engine's package.
        prepared_rows = getattr(conn, "prepared_rows", None)
        if prepared_rows is None:
            return super().append_events(conn, batch)
        rows = prepared_rows(b"desktop_agent_append_events",
                             b"SELECT * FROM desktop_agent_append_events($1::text)", (batch,))
        return [int(row[0]) for row in rows if row[0] is not None]  # never NULL
    checkpoint_call = "SELECT desktop_agent_checkpoint(?, ?, ?)"

    def text_query(self, text: str) -> str | None:
        """``'word' & 'word':*`` (a word is letters and digits only: no quote to escape)."""
        words = [word.lower() for word in _WORD.findall(text)]
        if not words:
            return None
        terms = [f"'{word}'" for word in words]
        terms[-1] += ":*"
        return " & ".join(terms)

    def snippet(self, query: str) -> tuple[str, list[Any]]:
        """``ts_headline`` with the same brackets and about the same length as FTS5's."""
        return (
            "ts_headline('desktop_agent_search', message_search.body,"
            " to_tsquery('desktop_agent_search', ?),"
            " 'StartSel=[, StopSel=], MaxWords=12, MinWords=4, MaxFragments=1,"
            " FragmentDelimiter=…')",
            [query],
        )

    def checkpoint(
        self, conn: SqlConnection, content: str, thinking: str | None, message_id: str
    ) -> SqlCursor:
        """The same update with ``jsonb_set`` (the columns stay JSON text, as on SQLite)."""
        return conn.execute(
            "UPDATE messages SET message = jsonb_set(message::jsonb, '{content}',"
            " to_jsonb(?::text))::text,"
            " metadata = CASE WHEN ?::text IS NULL THEN metadata"
            " ELSE jsonb_set(metadata::jsonb, '{thinking}', to_jsonb(?::text))::text END"
            " WHERE id = ? AND status = 'streaming'",
            (content, thinking, thinking, message_id),
        )

    def insert_message(self, conn: SqlConnection, sql: str, params: Sequence[Any]) -> int:
        """The same INSERT with ``RETURNING seq``."""
        return int(conn.execute(sql + " RETURNING seq", params).fetchone()[0])

    def insert_searchable_message(self, conn: SqlConnection, sql: str, params: Sequence[Any],
                                  body: str) -> None:
        """Both in one statement, so nothing waits for the new ``seq``.

        In a pipelined write (see
        :meth:`~desktop_agent.store.postgres.postgres_database.PostgresDatabase.writing`)
        reading the ``seq`` back was a round trip of its own in every message written.
        """
        conn.execute(f"WITH m AS ({sql} RETURNING seq)"
                     " INSERT INTO message_search(rowid, body) SELECT seq, ? FROM m",
                     (*params, body))

    def rows_copied(self, conn: SqlConnection) -> None:
        """Move the messages' identity past the copied ``seq`` values."""
        conn.execute(
            "SELECT setval(pg_get_serial_sequence('messages', 'seq'),"
            " coalesce(max(seq), 0) + 1, false) FROM messages"
        )

    def approval_answered(self, conn: SqlConnection, conversation_id: str) -> None:
        """A NOTIFY on :data:`APPROVALS_CHANNEL`, delivered when the answer commits."""
        conn.execute("SELECT pg_notify(?, ?)", (APPROVALS_CHANNEL, f"{conversation_id}:0"))
