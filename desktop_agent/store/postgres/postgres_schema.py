"""The PostgreSQL schema and its migrations (a history of its own, begun at SQLite's v3).

The version lives in ``store_schema``. Migrations run in one transaction under an
advisory lock, so replicas started together migrate once, and PostgreSQL's
transactional DDL leaves a failed migration undone. Append-only, as SQLite's.

- v1: what SQLite's v3 holds, in PostgreSQL's types: conversations (with ``seq``,
  the insertion order SQLite's ``rowid`` gives), messages, app settings, events,
  turn leases; ``message_search`` keeps the same ``rowid``/``body`` columns as the
  FTS5 table plus a generated ``tsvector`` with a GIN index, parsed with
  ``desktop_agent_search``: the ``simple`` configuration (lower-cased, not stemmed,
  as FTS5's ``unicode61``) with accents folded by the ``unaccent`` extension (as
  ``remove_diacritics``) where the server has it; ``store_writes``, the sequence
  every write transaction advances (the change token).
- v2: ``secrets`` (a secret's name and its value sealed with the replicas' key, never
  the value itself; see :mod:`~desktop_agent.store.sealed_secrets`) and
  ``secret_key_check`` (one row sealed by the first replica's key, so a replica given
  another key is refused before it stores anything the others cannot open).
- v3: ``approvals``, the open tool-call questions of turns running on some replica,
  so any replica lists and answers them (see :mod:`~desktop_agent.store.approval_table`).
- v4: ``callbacks`` (HTTP callbacks registered through any replica: the URL sealed with
  the replicas' key, since it may carry a token; see
  :mod:`~desktop_agent.store.callback_rows`), gone with their conversation.
- v5: ``desktop_agent_append_events`` and ``desktop_agent_checkpoint``, functions that
  append a batch of events and save a streaming reply's text so far, each in one
  statement (see :data:`_V5` for why).
- v6: ``desktop_agent_append_events(batch TEXT)``, the same append taking its batch as
  one JSON text (see :data:`_V6` for why).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psycopg

from desktop_agent.store.dialects import CARRIED_DATA_BYTES, EVENTS_CHANNEL, NOTIFY_SPLIT_BYTES
from desktop_agent.store.errors import DatabaseUnusableError
from desktop_agent.store.postgres.advisory_locks import EVENT_LOCKS, WRITE_LOCK

logger = logging.getLogger("desktop_agent.store.postgres")

MIGRATION_LOCK = 0x64_61_67_01
"""The advisory lock replicas take to migrate one at a time."""

_V1 = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    title TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    active_leaf_id TEXT
);
CREATE INDEX conversations_by_update ON conversations(updated_at DESC, seq DESC);
CREATE TABLE messages (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES messages(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    message TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'complete',
    created_at DOUBLE PRECISION NOT NULL,
    depth INTEGER NOT NULL DEFAULT 0,
    writer TEXT
);
CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
CREATE INDEX messages_by_parent ON messages(parent_id, seq);
CREATE INDEX messages_streaming ON messages(status) WHERE status = 'streaming';
CREATE TABLE app_settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE message_search (
    rowid BIGINT PRIMARY KEY,
    body TEXT NOT NULL,
    terms TSVECTOR GENERATED ALWAYS AS (to_tsvector('desktop_agent_search', body)) STORED
);
CREATE INDEX message_search_terms ON message_search USING GIN (terms);
CREATE TABLE events (
    conversation_id TEXT NOT NULL,
    event_id BIGINT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (conversation_id, event_id)
);
CREATE TABLE turn_leases (
    conversation_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    process TEXT NOT NULL,
    token TEXT NOT NULL,
    acquired_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
);
CREATE SEQUENCE store_writes;
"""


def _create_search_configuration(conn: psycopg.Connection[Any]) -> None:
    conn.execute("CREATE TEXT SEARCH CONFIGURATION desktop_agent_search (COPY = simple)")
    try:
        with conn.transaction():  # a savepoint: a missing extension must not undo the rest
            conn.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    except psycopg.Error as exc:
        logger.warning(
            "PostgreSQL's unaccent extension is not available (%s): searching for "
            "'zurich' will not find 'Zürich' (install postgresql-contrib before the first "
            "replica creates the tables)", str(exc).strip())
        return
    conn.execute(
        "ALTER TEXT SEARCH CONFIGURATION desktop_agent_search"
        " ALTER MAPPING FOR hword, hword_part, word WITH unaccent, simple"
    )


def _migrate_to_v1(conn: psycopg.Connection[Any]) -> None:
    _create_search_configuration(conn)
    for statement in (s.strip() for s in _V1.split(";")):
        if statement:
            conn.execute(statement.encode())


_V2 = """
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    sealed TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE secret_key_check (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    sealed TEXT NOT NULL
);
"""


def _migrate_to_v2(conn: psycopg.Connection[Any]) -> None:
    for statement in (s.strip() for s in _V2.split(";")):
        if statement:
            conn.execute(statement.encode())


_V3 = """
CREATE TABLE approvals (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    tool_use_id TEXT NOT NULL,
    process TEXT NOT NULL,
    question TEXT NOT NULL,
    asked_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION,
    status TEXT NOT NULL DEFAULT 'open',
    answer TEXT,
    PRIMARY KEY (conversation_id, tool_use_id)
)
"""


def _migrate_to_v3(conn: psycopg.Connection[Any]) -> None:
    conn.execute(_V3.encode())


_V4 = """
CREATE TABLE callbacks (
    id TEXT PRIMARY KEY,
    seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    sealed_url TEXT NOT NULL,
    event_types TEXT,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX callbacks_by_conversation ON callbacks(conversation_id, seq);
"""


def _migrate_to_v4(conn: psycopg.Connection[Any]) -> None:
    for statement in (s.strip() for s in _V4.split(";")):
        if statement:
            conn.execute(statement.encode())


_V5 = (f"""
CREATE FUNCTION desktop_agent_append_events(
    conversation_ids TEXT[], types TEXT[], payloads TEXT[], created DOUBLE PRECISION[])
RETURNS SETOF BIGINT LANGUAGE plpgsql AS $fn$
DECLARE
    ids BIGINT[];
BEGIN
    PERFORM pg_advisory_xact_lock_shared({WRITE_LOCK});
    PERFORM pg_advisory_xact_lock({EVENT_LOCKS}, code)
        FROM (SELECT DISTINCT hashtext(c) AS code FROM unnest(conversation_ids) AS c) AS k
        ORDER BY code;
    WITH batch AS (
        SELECT c, t, p, ts, n
        FROM unnest(conversation_ids, types, payloads, created) WITH ORDINALITY AS b(c, t, p, ts, n)
    ), numbered AS (
        SELECT b.*, coalesce((SELECT max(e.event_id) FROM events e
                              WHERE e.conversation_id = b.c), 0)
                    + row_number() OVER (PARTITION BY b.c ORDER BY b.n) AS id
        FROM batch b
    ), inserted AS (
        INSERT INTO events(conversation_id, event_id, type, data, created_at)
        SELECT c, id, t, p, ts FROM numbered
    )
    SELECT array_agg(id ORDER BY n) INTO ids FROM numbered;
    PERFORM pg_notify('{EVENTS_CHANNEL}', payload)
        FROM (SELECT part, string_agg(line, E'\\n' ORDER BY c, id) AS payload
              FROM (SELECT c, id, line,
                           sum(octet_length(line) + 1) OVER (ORDER BY c, id)
                               / {NOTIFY_SPLIT_BYTES} AS part
                    FROM (SELECT c, id,
                                 CASE WHEN octet_length(p) <= {CARRIED_DATA_BYTES}
                                           AND strpos(t, ':') = 0
                                      THEN c || ':' || id || ':' || t || ':' || ts || ':' || p
                                      ELSE c || ':' || id END AS line
                          FROM unnest(conversation_ids, ids, types, payloads, created)
                              AS x(c, id, t, p, ts)) AS lines) AS parted
              GROUP BY part ORDER BY part) AS notes;
    RETURN QUERY SELECT unnest(ids);
END
$fn$
""", f"""
CREATE FUNCTION desktop_agent_checkpoint(message_id TEXT, content TEXT, thinking TEXT)
RETURNS INTEGER LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock_shared({WRITE_LOCK});
    UPDATE messages SET
        message = jsonb_set(message::jsonb, '{{content}}', to_jsonb(content))::text,
        metadata = CASE WHEN thinking IS NULL THEN metadata
                        ELSE jsonb_set(metadata::jsonb, '{{thinking}}', to_jsonb(thinking))::text
                   END
        WHERE id = message_id AND status = 'streaming';
    IF FOUND THEN
        RETURN 1;
    END IF;
    PERFORM 1 FROM messages WHERE id = message_id;
    RETURN CASE WHEN FOUND THEN 0 ELSE -1 END;
END
$fn$
""")
"""Appending a batch of events, in one statement instead of a pipelined transaction.

What it does is what :func:`~desktop_agent.store.event_table.append_events` does in a
transaction on SQLite: take the write lock shared and each conversation's log (an
advisory lock per conversation, in one order), give each event the next id of its
conversation, insert them, and NOTIFY a line per event, small events whole (see
:data:`~desktop_agent.store.dialects.EVENTS_CHANNEL`), in payloads under 8,000 bytes.
Why a function: on a busy replica the event log commits hundreds of small batches a
second, and psycopg's client-side work per statement (about 50 µs of Python each, and a
pipeline's sync and result handling on top) made a batch of one event cost about 0.8 ms
of the replica's CPU in six statements (``BEGIN``, two lock statements, the newest ids,
the insert, the NOTIFY, ``COMMIT``). One statement in autocommit is one implicit
transaction, the locks held to its end, the NOTIFY delivered at its commit. Appends do
not advance ``store_writes``: the change token is for a window's views of conversations
and messages, which events do not change.

A streaming reply's checkpoint (about two a second per reply) is the other write a busy
replica makes most, and the same transaction of six statements around one ``UPDATE``;
``desktop_agent_checkpoint`` is that ``UPDATE`` under the shared write lock, returning 1
(saved), 0 (the reply is no longer streaming: ignored) or -1 (no such message). It does
not advance ``store_writes`` either: only a window polls the change token, and windows
keep their conversations in SQLite."""


def _migrate_to_v5(conn: psycopg.Connection[Any]) -> None:
    for statement in _V5:
        conn.execute(statement.encode())


_V6 = f"""
CREATE FUNCTION desktop_agent_append_events(batch TEXT)
RETURNS SETOF BIGINT LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    conversation_ids TEXT[];
    types TEXT[];
    payloads TEXT[];
    created DOUBLE PRECISION[];
    ids BIGINT[];
BEGIN
    SELECT array_agg(e->>0 ORDER BY n), array_agg(e->>1 ORDER BY n),
           array_agg(e->>2 ORDER BY n), array_agg((e->>3)::float8 ORDER BY n)
        INTO conversation_ids, types, payloads, created
        FROM jsonb_array_elements(batch::jsonb) WITH ORDINALITY AS b(e, n);
    PERFORM pg_advisory_xact_lock_shared({WRITE_LOCK});
    PERFORM pg_advisory_xact_lock({EVENT_LOCKS}, code)
        FROM (SELECT DISTINCT hashtext(c) AS code FROM unnest(conversation_ids) AS c) AS k
        ORDER BY code;
    WITH batch AS (
        SELECT c, t, p, ts, n
        FROM unnest(conversation_ids, types, payloads, created) WITH ORDINALITY AS b(c, t, p, ts, n)
    ), newest AS (
        SELECT k.c, coalesce((SELECT max(e.event_id) FROM events e
                              WHERE e.conversation_id = k.c), 0) AS last
        FROM (SELECT DISTINCT c FROM batch) AS k
    ), numbered AS (
        SELECT b.*, newest.last + row_number() OVER (PARTITION BY b.c ORDER BY b.n) AS id
        FROM batch b JOIN newest USING (c)
    ), inserted AS (
        INSERT INTO events(conversation_id, event_id, type, data, created_at)
        SELECT c, id, t, p, ts FROM numbered
    )
    SELECT array_agg(id ORDER BY n) INTO ids FROM numbered;
    PERFORM pg_notify('{EVENTS_CHANNEL}', payload)
        FROM (SELECT part, string_agg(line, E'\\n' ORDER BY c, id) AS payload
              FROM (SELECT c, id, line,
                           sum(octet_length(line) + 1) OVER (ORDER BY c, id)
                               / {NOTIFY_SPLIT_BYTES} AS part
                    FROM (SELECT c, id,
                                 CASE WHEN octet_length(p) <= {CARRIED_DATA_BYTES}
                                           AND strpos(t, ':') = 0
                                      THEN c || ':' || id || ':' || t || ':' || ts || ':' || p
                                      ELSE c || ':' || id END AS line
                          FROM unnest(conversation_ids, ids, types, payloads, created)
                              AS x(c, id, t, p, ts)) AS lines) AS parted
              GROUP BY part ORDER BY part) AS notes;
    RETURN QUERY SELECT unnest(ids);
END
$fn$
"""
"""The batch of events as one JSON text (``[[conversation id, type, data, created at],
...]``) instead of four arrays, planned once, and each conversation's newest id read
once per batch.

- psycopg dumps array parameters in Python, element by element, after making a dumper
  per array: for a batch of four events the four arrays cost the writer thread about
  230 µs of CPU per call, one text parameter made by ``json.dumps`` about 150 µs.
- A PL/pgSQL function's statements are planned anew at each call while PostgreSQL
  weighs a custom plan against the generic one (``plan_cache_mode = auto``), and for
  these statements, on arrays whose length it cannot know, it often kept planning:
  the backend's CPU per call of four events was 355 µs for v5 as it ran, 240 µs with
  its plans kept; v6 keeps them (``force_generic_plan``), about 270 µs (parsing the
  JSON adds about 30 µs).
- v5's ``max(event_id)`` subquery ran once per event; it runs once per conversation
  of the batch.

Measured one call at a time against this repository's test cluster (each figure
the CPU time of the one process, from ``/proc``). The four-array function stays, for
replicas not yet updated."""


def _migrate_to_v6(conn: psycopg.Connection[Any]) -> None:
    conn.execute(_V6.encode())


MIGRATIONS: list[Callable[[psycopg.Connection[Any]], None]] = [
    _migrate_to_v1, _migrate_to_v2, _migrate_to_v3, _migrate_to_v4, _migrate_to_v5,
    _migrate_to_v6]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: psycopg.Connection[Any], location: str) -> int:
    """Bring the database up to :data:`SCHEMA_VERSION`; returns the version found.

    Raises:
        DatabaseUnusableError: A newer version of the app wrote this database.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS store_schema (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM store_schema").fetchone()
        found = int(row[0]) if row else 0
        if found > SCHEMA_VERSION:
            raise DatabaseUnusableError(
                f"The conversation database {location} was written by a newer version of "
                f"Desktop Agent (schema {found}; this version reads up to {SCHEMA_VERSION}). "
                "Update every replica to the same version; the database was left untouched."
            )
        if found == 0 and _foreign_tables(conn):
            raise DatabaseUnusableError(
                f"The database {location} holds tables of another program, not Desktop "
                "Agent's. It was left untouched; give the app a database of its own."
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            logger.info("migrating %s to schema version %d", location, version)
            MIGRATIONS[version - 1](conn)
        if found == 0:
            conn.execute("INSERT INTO store_schema(version) VALUES (%s)", (SCHEMA_VERSION,))
        elif found < SCHEMA_VERSION:
            conn.execute("UPDATE store_schema SET version = %s", (SCHEMA_VERSION,))
    return found


def _foreign_tables(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_tables"
        " WHERE schemaname = current_schema() AND tablename <> 'store_schema'"
    ).fetchone()
    return int(row[0]) if row else 0
