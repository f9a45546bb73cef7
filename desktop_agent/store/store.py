"""Conversations on disk: the one place history is read from and written to.

A synchronous API over one SQLite file. One :class:`Store` may be shared by
every thread of a process (calls are serialised by a lock and each write is a
short ``BEGIN IMMEDIATE`` transaction); other processes may open the same file
at the same time (SQLite's locks plus a busy timeout keep them apart).

Messages form a tree: each has a parent, so editing or regenerating adds a
sibling branch instead of overwriting, and the conversation remembers which
leaf is active. Reading the active branch walks parents up from that leaf and
stops after the requested number of messages, so opening a 10,000-message
conversation reads only the page that is shown.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from desktop_agent import paths
from desktop_agent.store import schema
from desktop_agent.store.connection import check_is_ours, connect
from desktop_agent.store.errors import (
    DatabaseAccessError,
    NotFoundError,
    SecretInSettingsError,
    StoreClosedError,
)
from desktop_agent.store.message_text import searchable_text
from desktop_agent.store.process_liveness import current_writer, writer_alive
from desktop_agent.store.records import (
    MESSAGE_STATUSES,
    ConversationRecord,
    MessageRecord,
    NewConversation,
    SearchHit,
)
from desktop_agent.store.search_query import fts_query, like_pattern
from desktop_agent.store.secret_scrub import find_secret, scrub
from desktop_agent.store.wal_checkpointer import SAFETY_NET_PAGES, WalCheckpointer

logger = logging.getLogger("desktop_agent.store")

_MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.parent_id, m.role, m.message, m.metadata, m.status,"
    " m.created_at, m.depth"
)
_CONVERSATION_COLUMNS = "c.id, c.title, c.created_at, c.updated_at, c.settings, c.active_leaf_id"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _new_id() -> str:
    return uuid.uuid4().hex


def _conversation(row: tuple[Any, ...]) -> ConversationRecord:
    return ConversationRecord(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5])


def _message(row: tuple[Any, ...]) -> MessageRecord:
    return MessageRecord(
        row[0],
        row[1],
        row[2],
        row[3],
        json.loads(row[4]),
        json.loads(row[5]),
        row[6],
        row[7],
        row[8],
    )


def _check_message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise ValueError("a message must be a dict with a 'role' string (OpenAI format)")
    return message


def _check_settings(settings: Any) -> dict[str, Any]:
    if not isinstance(settings, dict):
        raise ValueError("conversation settings must be a dict")
    where = find_secret(settings)
    if where:
        raise SecretInSettingsError(
            f"The setting '{where}' looks like a key or token. Store keys with "
            "desktop_agent.secrets.set_secret() and put only the key's name in "
            "'api_key_name'; nothing was saved."
        )
    return settings


def _clean_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValueError("message metadata must be a dict")
    cleaned = scrub(metadata)
    if cleaned != metadata:
        logger.warning("redacted a key-like value from message metadata before saving it")
    return cleaned  # type: ignore[no-any-return]


class Store:
    """The conversation database.

    Attributes:
        path: The SQLite file.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.RLock()
        self.path = path
        conn.execute(f"PRAGMA wal_autocheckpoint = {SAFETY_NET_PAGES}")
        self._checkpointer = WalCheckpointer(path)
        self._checkpointer.start()
        # A store dropped without close() must not leave its thread running.
        weakref.finalize(self, self._checkpointer.stop_soon)

    # -- lifecycle ----------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str | None = None, *, recover: bool = True) -> Store:
        """Open (creating and migrating as needed) the database.

        Args:
            path: The SQLite file; default :func:`desktop_agent.paths.database_path`.
            recover: Mark replies left "streaming" by a process that no longer runs
                as "interrupted" (see :meth:`recover_interrupted`).

        Raises:
            DatabaseUnusableError: The file is damaged, foreign or from a newer app.
        """
        path = Path(path) if path is not None else paths.database_path()
        conn = connect(path)
        try:
            check_is_ours(conn, path, schema.schema_version(conn))
            schema.migrate(conn, path)
        except BaseException:
            conn.close()
            raise
        store = cls(conn, path)
        if recover:
            try:
                store.recover_interrupted()
            except BaseException:
                store.close()
                raise
        return store

    def close(self) -> None:
        """Close the file; later calls raise :class:`StoreClosedError`. Idempotent."""
        self._checkpointer.stop()
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.execute("PRAGMA optimize")
                except sqlite3.Error as exc:  # e.g. a read-only file: nothing to tidy
                    logger.debug("PRAGMA optimize skipped: %s", exc)
                finally:
                    self._conn.close()
                    self._conn = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise StoreClosedError("the conversation store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:  # disk full, read-only, locked for too long...
                raise DatabaseAccessError(
                    f"The conversation database {self.path} could not be used ({exc}). "
                    "Nothing was changed by this action."
                ) from exc

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction, taking the write lock up front."""
        with self._reading() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                # SQLite rolls some failures back by itself (disk full, I/O errors).
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    # -- conversations --------------------------------------------------------------

    def create_conversation(
        self, title: str = "New chat", settings: dict[str, Any] | None = None
    ) -> ConversationRecord:
        """Start an empty conversation."""
        settings = _check_settings(settings or {})
        now = time.time()
        record = ConversationRecord(_new_id(), str(title), now, now, dict(settings), None)
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO conversations(id, title, created_at, updated_at, settings) "
                "VALUES (?, ?, ?, ?, ?)",
                (record.id, record.title, now, now, _dumps(settings)),
            )
        return record

    def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation, or None when there is no such id."""
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?",
                (conversation_id,),
            ).fetchone()
        return _conversation(row) if row else None

    def list_conversations(
        self, limit: int = 100, offset: int = 0, query: str | None = None
    ) -> list[ConversationRecord]:
        """Conversations, most recently updated first.

        Args:
            limit: Page size (-1 for all).
            offset: Page start.
            query: Typed search text: keeps conversations whose title contains it
                or whose messages contain all its words (the last as a prefix).
        """
        sql = f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c"
        params: list[Any] = []
        if query and query.strip():
            match = fts_query(query)
            sql += " WHERE c.title LIKE ? ESCAPE '\\'"
            params.append(like_pattern(query))
            if match:
                sql += (
                    " OR c.id IN (SELECT m.conversation_id FROM message_search s"
                    " JOIN messages m ON m.seq = s.rowid WHERE message_search MATCH ?)"
                )
                params.append(match)
        sql += " ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ? OFFSET ?"
        params += [limit, offset]
        with self._reading() as conn:
            return [_conversation(r) for r in conn.execute(sql, params).fetchall()]

    def count_conversations(self) -> int:
        """How many conversations exist (for a sidebar's scroll range)."""
        with self._reading() as conn:
            return int(conn.execute("SELECT count(*) FROM conversations").fetchone()[0])

    def update_conversation(
        self,
        conversation_id: str,
        title: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> ConversationRecord:
        """Rename and/or replace the settings; returns the updated record."""
        if settings is not None:
            _check_settings(settings)
        with self._writing() as conn:
            self._require_conversation(conn, conversation_id)
            if title is not None:
                conn.execute(
                    "UPDATE conversations SET title = ? WHERE id = ?", (str(title), conversation_id)
                )
            if settings is not None:
                conn.execute(
                    "UPDATE conversations SET settings = ? WHERE id = ?",
                    (_dumps(settings), conversation_id),
                )
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?",
                (time.time(), conversation_id),
            )
        record = self.get_conversation(conversation_id)
        if record is None:  # deleted by another thread or process meanwhile
            raise NotFoundError(f"no conversation {conversation_id}")
        return record

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete a conversation and all its messages; a missing id is not an error."""
        with self._writing() as conn:
            conn.execute(
                "DELETE FROM message_search WHERE rowid IN "
                "(SELECT seq FROM messages WHERE conversation_id = ?)",
                (conversation_id,),
            )
            conn.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation_id,))
            conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- messages ---------------------------------------------------------------------

    def add_message(
        self,
        conversation_id: str,
        message: dict[str, Any],
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        status: str = "complete",
        *,
        new_root: bool = False,
    ) -> MessageRecord:
        """Write a message; it becomes the conversation's active leaf.

        Args:
            conversation_id: The conversation.
            message: OpenAI-format dict (``role``, ``content``, ``tool_calls``...).
            parent_id: The message it follows; None appends to the active branch's
                leaf. Giving an earlier message's parent adds a sibling branch
                (edit / regenerate).
            metadata: Time, model, usage, thinking, tool-call status, approvals.
            status: ``"streaming"`` for a reply about to be checkpointed as it grows.
            new_root: Start a new branch with no parent (editing the first message).
        """
        message = _check_message(message)
        if status not in MESSAGE_STATUSES:
            raise ValueError(f"status must be one of {', '.join(MESSAGE_STATUSES)}")
        metadata = _clean_metadata(metadata)
        now = time.time()
        message_id = _new_id()
        writer = current_writer() if status == "streaming" else None
        with self._writing() as conn:
            leaf = self._require_conversation(conn, conversation_id).active_leaf_id
            parent = None if new_root else (parent_id if parent_id is not None else leaf)
            depth = 0
            if parent is not None:
                row = conn.execute(
                    "SELECT depth FROM messages WHERE id = ? AND conversation_id = ?",
                    (parent, conversation_id),
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"no message {parent} in conversation {conversation_id}")
                depth = row[0] + 1
            cursor = conn.execute(
                "INSERT INTO messages(id, conversation_id, parent_id, role, message, metadata,"
                " status, created_at, depth, writer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message_id,
                    conversation_id,
                    parent,
                    message["role"],
                    _dumps(message),
                    _dumps(metadata),
                    status,
                    now,
                    depth,
                    writer,
                ),
            )
            conn.execute(
                "INSERT INTO message_search(rowid, body) VALUES (?, ?)",
                (cursor.lastrowid, searchable_text(message, metadata)),
            )
            conn.execute(
                "UPDATE conversations SET active_leaf_id = ?, updated_at = ? WHERE id = ?",
                (message_id, now, conversation_id),
            )
        return MessageRecord(
            message_id,
            conversation_id,
            parent,
            message["role"],
            message,
            metadata,
            status,
            now,
            depth,
        )

    def checkpoint_message(
        self, message_id: str, content: str, thinking: str | None = None
    ) -> None:
        """Save a streaming reply's text so far (cheap; call about once a second).

        Only a message still marked "streaming" changes; a late checkpoint after
        :meth:`complete_message` is ignored rather than undoing the final text.
        """
        with self._writing() as conn:
            cursor = conn.execute(
                "UPDATE messages SET message = json_set(message, '$.content', ?1),"
                " metadata = CASE WHEN ?2 IS NULL THEN metadata"
                " ELSE json_set(metadata, '$.thinking', ?2) END"
                " WHERE id = ?3 AND status = 'streaming'",
                (content, thinking, message_id),
            )
            if (
                cursor.rowcount == 0
                and not conn.execute(
                    "SELECT 1 FROM messages WHERE id = ?", (message_id,)
                ).fetchone()
            ):
                raise NotFoundError(f"no message {message_id}")

    def complete_message(
        self,
        message_id: str,
        message: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        status: str = "complete",
    ) -> MessageRecord:
        """Write a reply's final form; ``metadata`` keys are merged into what is there."""
        message = _check_message(message)
        if status not in MESSAGE_STATUSES:
            raise ValueError(f"status must be one of {', '.join(MESSAGE_STATUSES)}")
        with self._writing() as conn:
            row = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS}, m.seq FROM messages m WHERE m.id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no message {message_id}")
            merged = {**json.loads(row[5]), **_clean_metadata(metadata)}
            conn.execute(
                "UPDATE messages SET role = ?, message = ?, metadata = ?, status = ?, writer = ?"
                " WHERE id = ?",
                (
                    message["role"],
                    _dumps(message),
                    _dumps(merged),
                    status,
                    current_writer() if status == "streaming" else None,
                    message_id,
                ),
            )
            self._reindex(conn, row[9], message, merged)
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (time.time(), row[1])
            )
        return MessageRecord(
            row[0], row[1], row[2], message["role"], message, merged, status, row[7], row[8]
        )

    def update_message_metadata(self, message_id: str, updates: dict[str, Any]) -> MessageRecord:
        """Merge keys into a message's metadata (e.g. an approval decided later)."""
        with self._writing() as conn:
            row = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no message {message_id}")
            merged = {**json.loads(row[5]), **_clean_metadata(updates)}
            conn.execute(
                "UPDATE messages SET metadata = ? WHERE id = ?", (_dumps(merged), message_id)
            )
        record = _message(row)
        return MessageRecord(**{**record.__dict__, "metadata": merged})

    def get_message(self, message_id: str) -> MessageRecord | None:
        """The message, or None when there is no such id."""
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?", (message_id,)
            ).fetchone()
        return _message(row) if row else None

    # -- the tree ---------------------------------------------------------------------

    def active_path(
        self, conversation_id: str, limit: int | None = None, *, before: str | None = None
    ) -> list[MessageRecord]:
        """The active branch, root first; with ``limit``, only its last messages.

        Args:
            conversation_id: The conversation.
            limit: Return at most this many messages (the newest); None for all.
            before: Page in older messages: the ones before this message on its branch.
        """
        with self._reading() as conn:
            record = self._require_conversation(conn, conversation_id)
            start = record.active_leaf_id
            if before is not None:
                row = conn.execute(
                    "SELECT parent_id FROM messages WHERE id = ? AND conversation_id = ?",
                    (before, conversation_id),
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"no message {before} in conversation {conversation_id}")
                start = row[0]
            return self._ancestors(conn, start, limit)

    def path_to(self, message_id: str, limit: int | None = None) -> list[MessageRecord]:
        """The branch from the root down to ``message_id`` (the last ``limit`` of it)."""
        with self._reading() as conn:
            return self._ancestors(conn, message_id, limit)

    def _ancestors(
        self, conn: sqlite3.Connection, start: str | None, limit: int | None
    ) -> list[MessageRecord]:
        if start is None or (limit is not None and limit <= 0):
            return []
        rows = conn.execute(
            f"""
            WITH RECURSIVE walk(seq, parent_id, n) AS (
                SELECT seq, parent_id, 1 FROM messages WHERE id = ?1
                UNION ALL
                SELECT p.seq, p.parent_id, walk.n + 1 FROM walk
                JOIN messages p ON p.id = walk.parent_id
                WHERE ?2 < 0 OR walk.n < ?2
            )
            SELECT {_MESSAGE_COLUMNS} FROM walk JOIN messages m ON m.seq = walk.seq
            ORDER BY walk.n DESC
            """,
            (start, -1 if limit is None else limit),
        ).fetchall()
        return [_message(r) for r in rows]

    def children(
        self, message_id: str | None, conversation_id: str | None = None
    ) -> list[MessageRecord]:
        """Direct replies to a message, oldest first; with None, the conversation's roots."""
        with self._reading() as conn:
            if message_id is None:
                if conversation_id is None:
                    raise ValueError("roots need a conversation_id")
                rows = conn.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = ?"
                    " AND m.parent_id IS NULL ORDER BY m.seq",
                    (conversation_id,),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.parent_id = ?"
                    " ORDER BY m.seq",
                    (message_id,),
                ).fetchall()
        return [_message(r) for r in rows]

    def siblings(self, message_id: str) -> list[MessageRecord]:
        """The alternatives at a message's place (itself included), oldest first.

        The GUI shows "2 / 3" arrows from this when a message was edited or regenerated.
        """
        record = self.get_message(message_id)
        if record is None:
            raise NotFoundError(f"no message {message_id}")
        return self.children(record.parent_id, record.conversation_id)

    def latest_leaf(self, message_id: str) -> str:
        """The newest leaf under a message, following the newest child at each step.

        Switching to a sibling branch is ``set_active_leaf(conv, latest_leaf(sibling))``.
        """
        with self._reading() as conn:
            row = conn.execute(
                """
                WITH RECURSIVE walk(id, n) AS (
                    SELECT ?, 0
                    UNION ALL
                    SELECT (SELECT c.id FROM messages c WHERE c.parent_id = walk.id
                            ORDER BY c.seq DESC LIMIT 1), walk.n + 1
                    FROM walk WHERE walk.id IS NOT NULL
                )
                SELECT id FROM walk WHERE id IS NOT NULL ORDER BY n DESC LIMIT 1
                """,
                (message_id,),
            ).fetchone()
            if not conn.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone():
                raise NotFoundError(f"no message {message_id}")
        return str(row[0])

    def set_active_leaf(self, conversation_id: str, message_id: str | None) -> None:
        """Choose which branch is shown (None: the conversation shows as empty)."""
        with self._writing() as conn:
            self._require_conversation(conn, conversation_id)
            if (
                message_id is not None
                and not conn.execute(
                    "SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?",
                    (message_id, conversation_id),
                ).fetchone()
            ):
                raise NotFoundError(f"no message {message_id} in conversation {conversation_id}")
            conn.execute(
                "UPDATE conversations SET active_leaf_id = ? WHERE id = ?",
                (message_id, conversation_id),
            )

    def all_messages(self, conversation_id: str) -> list[MessageRecord]:
        """Every message of every branch, parents before children (for export)."""
        with self._reading() as conn:
            self._require_conversation(conn, conversation_id)
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = ?"
                " ORDER BY m.depth, m.seq",
                (conversation_id,),
            ).fetchall()
        return [_message(r) for r in rows]

    def count_messages(self, conversation_id: str) -> int:
        """How many messages the conversation holds across all branches."""
        with self._reading() as conn:
            return int(
                conn.execute(
                    "SELECT count(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
                ).fetchone()[0]
            )

    # -- search -----------------------------------------------------------------------

    def search(
        self, text: str, limit: int = 50, conversation_id: str | None = None
    ) -> list[SearchHit]:
        """Messages containing all typed words (the last as a prefix), newest first.

        Newest first (not by relevance) because it is what a person scanning their
        history expects, and because it lets SQLite stop after ``limit`` matches:
        ranking would score every match of a common word first.
        """
        match = fts_query(text)
        if match is None:
            return []
        sql = (
            "SELECT m.conversation_id, m.id,"
            " snippet(message_search, 0, '[', ']', '…', 12)"
            " FROM message_search JOIN messages m ON m.seq = message_search.rowid"
            " WHERE message_search MATCH ?"
        )
        params: list[Any] = [match]
        if conversation_id is not None:
            sql += " AND m.conversation_id = ?"
            params.append(conversation_id)
        sql += " ORDER BY message_search.rowid DESC LIMIT ?"
        params.append(limit)
        with self._reading() as conn:
            return [SearchHit(*row) for row in conn.execute(sql, params).fetchall()]

    # -- app settings ------------------------------------------------------------------

    def get_setting(self, key: str, default: Any = None) -> Any:
        """An app-level value (open tabs, window layout), or ``default``."""
        with self._reading() as conn:
            row = conn.execute("SELECT value FROM app_settings WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_setting(self, key: str, value: Any) -> None:
        """Save an app-level JSON value (keys never belong here: use the keyring)."""
        where = find_secret({key: value})
        if where:
            raise SecretInSettingsError(
                f"The app setting '{where}' looks like a key or token; keys belong in the "
                "keyring (desktop_agent.secrets). Nothing was saved."
            )
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO app_settings(key, value) VALUES (?, ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, _dumps(value)),
            )

    def delete_setting(self, key: str) -> None:
        """Forget an app-level value; a missing key is not an error."""
        with self._writing() as conn:
            conn.execute("DELETE FROM app_settings WHERE key = ?", (key,))

    # -- recovery and bulk ----------------------------------------------------------------

    def recover_interrupted(self) -> list[str]:
        """Mark replies left "streaming" by a process that is gone as "interrupted".

        Replies a live process (the REST server, another window) is still
        writing are left alone. The partial text becomes searchable. Returns the
        ids of the messages marked.
        """
        marked = []
        with self._writing() as conn:
            rows = conn.execute(
                "SELECT seq, id, writer, message, metadata FROM messages WHERE status = 'streaming'"
            ).fetchall()
            for seq, message_id, writer, message, metadata in rows:
                if writer_alive(writer):
                    continue
                meta = {**json.loads(metadata), "interrupted_at": time.time()}
                conn.execute(
                    "UPDATE messages SET status = 'interrupted', metadata = ?, writer = NULL"
                    " WHERE seq = ?",
                    (_dumps(meta), seq),
                )
                self._reindex(conn, seq, json.loads(message), meta)
                marked.append(message_id)
        if marked:
            logger.info("marked %d reply(ies) cut off by a crash as interrupted", len(marked))
        return marked

    def insert_conversations(self, items: list[NewConversation]) -> list[ConversationRecord]:
        """Insert whole conversations with fresh ids, all or nothing (imports).

        Raises:
            ValueError: An item is inconsistent (a parent missing or after its child).
        """
        from desktop_agent.store.bulk_insert import insert_all

        with self._writing() as conn:
            return insert_all(conn, items)

    # -- internals --------------------------------------------------------------------

    def _require_conversation(
        self, conn: sqlite3.Connection, conversation_id: str
    ) -> ConversationRecord:
        row = conn.execute(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?",
            (conversation_id,),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no conversation {conversation_id}")
        return _conversation(row)

    @staticmethod
    def _reindex(
        conn: sqlite3.Connection, seq: int, message: dict[str, Any], metadata: dict[str, Any]
    ) -> None:
        conn.execute("DELETE FROM message_search WHERE rowid = ?", (seq,))
        conn.execute(
            "INSERT INTO message_search(rowid, body) VALUES (?, ?)",
            (seq, searchable_text(message, metadata)),
        )
