"""Conversations as a whole: create, read, list, rename, delete, bulk insert."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from desktop_agent.store.engine import Engine, require_conversation
from desktop_agent.store.errors import NotFoundError, refuse_nul
from desktop_agent.store.record_rows import (
    CONVERSATION_COLUMNS,
    conversation_from_row,
    dumps,
    new_id,
)
from desktop_agent.store.records import ConversationRecord, NewConversation
from desktop_agent.store.search_query import like_pattern
from desktop_agent.store.write_checks import check_settings

#: The title of a conversation nobody has named yet; the one place the words are written.
DEFAULT_TITLE = "New chat"

_ALL = 2**62  # ``limit=-1``: SQLite reads a negative LIMIT as "all", PostgreSQL refuses it


class ConversationCrud:
    """The conversation-level part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one engine (connection, lock, transactions).
    """

    def __init__(self, db: Engine) -> None:
        self._db = db

    def create_conversation(
        self, title: str = DEFAULT_TITLE, settings: dict[str, Any] | None = None
    ) -> ConversationRecord:
        """Start an empty conversation.

        Raises:
            TextWithNulError: The title holds a NUL character.
        """
        settings = check_settings(settings or {})
        now = time.time()
        record = ConversationRecord(new_id(), refuse_nul(str(title), "A title"), now, now,
                                    dict(settings), None)
        with self._db.writing() as conn:
            conn.execute(
                "INSERT INTO conversations(id, title, created_at, updated_at, settings) "
                "VALUES (?, ?, ?, ?, ?)",
                (record.id, record.title, now, now, dumps(settings)),
            )
        return record

    def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation, or None when there is no such id."""
        with self._db.reading() as conn:
            row = conn.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?",
                (conversation_id,),
            ).fetchone()
        return conversation_from_row(row) if row else None

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
        sql = f"SELECT {CONVERSATION_COLUMNS} FROM conversations c"
        params: list[Any] = []
        query = query.replace("\x00", "") if query else query  # no title or text holds one
        if query and query.strip():
            match = self._db.dialect.text_query(query)
            sql += f" WHERE c.title {self._db.dialect.like} ? ESCAPE '\\'"
            params.append(like_pattern(query))
            if match:
                sql += (
                    " OR c.id IN (SELECT m.conversation_id FROM message_search"
                    " JOIN messages m ON m.seq = message_search.rowid"
                    f" WHERE {self._db.dialect.text_match})"
                )
                params.append(match)
        sql += (f" ORDER BY c.updated_at DESC, {self._db.dialect.insertion_order} DESC"
                " LIMIT ? OFFSET ?")
        params += [limit if limit >= 0 else _ALL, offset]
        with self._db.reading() as conn:
            return [conversation_from_row(r) for r in conn.execute(sql, params).fetchall()]

    def count_conversations(self) -> int:
        """How many conversations exist (for a sidebar's scroll range)."""
        with self._db.reading() as conn:
            return int(conn.execute("SELECT count(*) FROM conversations").fetchone()[0])

    def update_conversation(
        self,
        conversation_id: str,
        title: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> ConversationRecord:
        """Rename and/or replace the settings; returns the updated record.

        Replacing the whole dict drops keys another process wrote since this
        caller read them; front ends change settings with :meth:`patch_settings`.

        Raises:
            TextWithNulError: The title holds a NUL character.
        """
        if settings is not None:
            check_settings(settings)
        if title is not None:
            refuse_nul(str(title), "A title")
        with self._db.writing() as conn:
            require_conversation(conn, conversation_id)
            if title is not None:
                conn.execute(
                    "UPDATE conversations SET title = ? WHERE id = ?", (str(title), conversation_id)
                )
            if settings is not None:
                conn.execute(
                    "UPDATE conversations SET settings = ? WHERE id = ?",
                    (dumps(settings), conversation_id),
                )
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?",
                (time.time(), conversation_id),
            )
        record = self.get_conversation(conversation_id)
        if record is None:  # deleted by another thread or process meanwhile
            raise NotFoundError(f"no conversation {conversation_id}")
        return record

    def patch_settings(
        self, conversation_id: str, changes: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Change some settings by key in one transaction; returns the settings now stored.

        Keys not named in ``changes`` keep what is on disk, even if another
        process (the REST server, a second window) wrote them after this caller
        read the conversation; a key set to None is removed.

        Raises:
            NotFoundError: There is no such conversation.
            ValueError: The merged settings break a rule (see ``write_checks``).
            SecretInSettingsError: A value looks like a key or token.
        """
        if not isinstance(changes, Mapping):
            raise ValueError("settings changes must be a mapping of key to value")
        with self._db.writing() as conn:
            row = conn.execute(
                "SELECT settings FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no conversation {conversation_id}")
            merged: dict[str, Any] = json.loads(row[0])
            for key, value in changes.items():
                if value is None:
                    merged.pop(str(key), None)
                else:
                    merged[str(key)] = value
            check_settings(merged, checked={str(key) for key in changes})
            conn.execute(
                "UPDATE conversations SET settings = ?, updated_at = ? WHERE id = ?",
                (dumps(merged), time.time(), conversation_id),
            )
        return merged

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete a conversation, its messages, events and lease; a missing id is no error."""
        with self._db.writing() as conn:
            conn.execute(
                "DELETE FROM message_search WHERE rowid IN "
                "(SELECT seq FROM messages WHERE conversation_id = ?)",
                (conversation_id,),
            )
            conn.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation_id,))
            conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            conn.execute("DELETE FROM events WHERE conversation_id = ?", (conversation_id,))
            conn.execute("DELETE FROM turn_leases WHERE conversation_id = ?", (conversation_id,))

    def insert_conversations(self, items: list[NewConversation]) -> list[ConversationRecord]:
        """Insert whole conversations with fresh ids, all or nothing (imports).

        Raises:
            ValueError: An item is inconsistent (a parent missing or after its child).
        """
        from desktop_agent.store.bulk_insert import insert_all

        with self._db.writing() as conn:
            return insert_all(conn, items, self._db.dialect)
