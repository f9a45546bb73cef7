"""Finding messages by the words in them (SQLite FTS5, PostgreSQL text search)."""

from __future__ import annotations

from desktop_agent.store.engine import Engine
from desktop_agent.store.records import SearchHit


class FullTextSearch:
    """The search part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one engine (connection, lock, transactions).
    """

    def __init__(self, db: Engine) -> None:
        self._db = db

    def search(
        self, text: str, limit: int = 50, conversation_id: str | None = None
    ) -> list[SearchHit]:
        """Messages containing all typed words (the last as a prefix), newest first.

        Newest first (not by relevance) because it is what a person scanning their
        history expects, and because it lets SQLite stop after ``limit`` matches:
        ranking would score every match of a common word first.
        """
        dialect = self._db.dialect
        match = dialect.text_query(text.replace("\x00", ""))  # no indexed text holds one
        if match is None:
            return []
        snippet, params = dialect.snippet(match)
        sql = (
            f"SELECT m.conversation_id, m.id, {snippet}"
            " FROM message_search JOIN messages m ON m.seq = message_search.rowid"
            f" WHERE {dialect.text_match}"
        )
        params.append(match)
        if conversation_id is not None:
            sql += " AND m.conversation_id = ?"
            params.append(conversation_id)
        sql += " ORDER BY message_search.rowid DESC LIMIT ?"
        params.append(limit)
        with self._db.reading() as conn:
            return [SearchHit(*row) for row in conn.execute(sql, params).fetchall()]
