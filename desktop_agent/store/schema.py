"""The database schema and its migrations, from the first release on.

The schema version lives in ``PRAGMA user_version``. Each migration moves the
database from version N-1 to N inside the same ``BEGIN IMMEDIATE`` transaction
that rereads the version, so two processes starting at once cannot both
migrate, and a failed migration leaves the file as it was. Before migrating a
database that already holds data, a copy is saved next to it
(``<name>.v<N>.bak``) so an upgrade can always be undone by hand.

Migrations are append-only: never edit a released one; add the next.

- v1: conversations, messages (a tree through ``parent_id``), app settings.
- v2: ``messages.depth`` (so the last page of a long branch is read without
  walking it all), ``messages.writer`` (which process is streaming a reply),
  and the FTS5 full-text index over message text.
- v3: ``events`` (each conversation's event log, ids allocated by the database
  so two processes on one folder never reuse an id; rows of the REST server's
  old ``server_events`` table, made outside migrations, are moved in) and
  ``turn_leases`` (which process runs a turn on a conversation right now).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

from desktop_agent.store.errors import DatabaseUnusableError
from desktop_agent.store.message_text import searchable_text

logger = logging.getLogger("desktop_agent.store.schema")

_V1 = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    settings TEXT NOT NULL DEFAULT '{}',
    active_leaf_id TEXT
);
CREATE INDEX conversations_by_update ON conversations(updated_at DESC);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES messages(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    message TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'complete',
    created_at REAL NOT NULL
);
CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
CREATE INDEX messages_by_parent ON messages(parent_id, seq);
CREATE TABLE app_settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


def _migrate_to_v1(conn: sqlite3.Connection) -> None:
    for statement in _split(_V1):
        conn.execute(statement)


def _migrate_to_v2(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE messages ADD COLUMN depth INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE messages ADD COLUMN writer TEXT")
    # Depth of existing messages: walk down from the roots once.
    conn.execute(
        """
        WITH RECURSIVE walk(id, depth) AS (
            SELECT id, 0 FROM messages WHERE parent_id IS NULL
            UNION ALL
            SELECT m.id, walk.depth + 1 FROM messages m JOIN walk ON m.parent_id = walk.id
        )
        UPDATE messages SET depth = (SELECT depth FROM walk WHERE walk.id = messages.id)
        """
    )
    conn.execute("CREATE INDEX messages_streaming ON messages(status) WHERE status = 'streaming'")
    conn.execute(
        "CREATE VIRTUAL TABLE message_search USING fts5("
        "body, tokenize = 'unicode61 remove_diacritics 2')"
    )
    rows = conn.execute("SELECT seq, message, metadata FROM messages").fetchall()
    for seq, message, metadata in rows:
        text = searchable_text(json.loads(message), json.loads(metadata))
        conn.execute("INSERT INTO message_search(rowid, body) VALUES (?, ?)", (seq, text))


_V3 = """
CREATE TABLE events (
    conversation_id TEXT NOT NULL,
    event_id INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, event_id)
) WITHOUT ROWID;
CREATE TABLE turn_leases (
    conversation_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    process TEXT NOT NULL,
    token TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
"""


def _migrate_to_v3(conn: sqlite3.Connection) -> None:
    for statement in _split(_V3):
        conn.execute(statement)
    old = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'server_events'"
    ).fetchone()
    if old:
        conn.execute(
            "INSERT OR IGNORE INTO events(conversation_id, event_id, type, data, created_at)"
            " SELECT conversation_id, event_id, type, data, created_at FROM server_events"
        )
        conn.execute("DROP TABLE server_events")


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_to_v1,
    _migrate_to_v2,
    _migrate_to_v3,
]
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    """The version stored in the file (0 for a new, empty database)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, path: Path | None) -> int:
    """Bring the database up to :data:`SCHEMA_VERSION`; returns the version found.

    Args:
        conn: An autocommit connection (``isolation_level=None``).
        path: The database file, for the pre-migration backup; None for memory.

    Raises:
        DatabaseUnusableError: The file was written by a newer version of the app.
    """
    found = schema_version(conn)
    _refuse_newer(found, path)
    if found == SCHEMA_VERSION:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = schema_version(conn)  # another process may have migrated meanwhile
        _refuse_newer(found, path)
        if found > 0 and path is not None:
            _backup(conn, path, found)
        for version in range(found + 1, SCHEMA_VERSION + 1):
            logger.info("migrating %s to schema version %d", path or "database", version)
            MIGRATIONS[version - 1](conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


def _refuse_newer(found: int, path: Path | None) -> None:
    if found > SCHEMA_VERSION:
        raise DatabaseUnusableError(
            f"The conversation database {path or ''} was written by a newer version of "
            f"Desktop Agent (schema {found}; this version reads up to {SCHEMA_VERSION}). "
            "Update the app to open it; the file was left untouched."
        )


def _backup(conn: sqlite3.Connection, path: Path, version: int) -> None:
    target = path.with_name(f"{path.name}.v{version}.bak")
    if target.exists():
        return
    # A second, read-only connection copies the committed state: WAL lets it read
    # while this transaction holds the write lock (nothing is written yet).
    source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()
    logger.info("saved a copy of the schema-v%d database as %s", version, target)
