"""Finding messages by the words in them (SQLite FTS5)."""

from __future__ import annotations

from typing import Any

from desktop_agent.store.records import SearchHit
from desktop_agent.store.search_query import fts_query
from desktop_agent.store.transactions import Database


class FullTextSearch:
    """The search part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one :class:`Database` (connection, lock, transactions).
    """

    def __init__(self, db: Database) -> None:
        self._db = db

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
        with self._db.reading() as conn:
            return [SearchHit(*row) for row in conn.execute(sql, params).fetchall()]
