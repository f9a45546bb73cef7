"""Reading the message tree: branches, pages of the active branch, siblings.

Reading the active branch walks parents up from its leaf and stops after the
requested number of messages, so opening a 10,000-message conversation reads
only the page that is shown. A turn's start reads back from the leaf a page at
a time until its caller has what its request needs (``enough``), not the whole
branch of a conversation that grew for hours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop_agent.store.engine import Engine, require_conversation
from desktop_agent.store.errors import NotFoundError
from desktop_agent.store.record_rows import MESSAGE_COLUMNS, message_from_row
from desktop_agent.store.records import ConversationRecord, MessageRecord
from desktop_agent.store.sql_connection import SqlConnection

Enough = Callable[[list[MessageRecord]], "bool | None"]
"""Asked with the newest messages read so far (root first) whether they suffice:
True stops, False reads one more page, None reads the rest of the branch at once."""

TAIL_PAGE = 64
"""Messages read at a time when reading back until there are ``enough``."""


class MessageTree:
    """The tree-reading part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one engine (connection, lock, transactions).
    """

    def __init__(self, db: Engine) -> None:
        self._db = db

    def get_message(self, message_id: str) -> MessageRecord | None:
        """The message, or None when there is no such id."""
        with self._db.reading() as conn:
            row = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?", (message_id,)
            ).fetchone()
        return message_from_row(row) if row else None

    def active_path(
        self, conversation_id: str, limit: int | None = None, *, before: str | None = None,
        enough: Enough | None = None, page: int = TAIL_PAGE,
    ) -> list[MessageRecord]:
        """The active branch, root first; with ``limit``, only its last messages.

        Args:
            conversation_id: The conversation.
            limit: Return at most this many messages (the newest); None for all.
            before: Page in older messages: the ones before this message on its branch.
            enough: Read back ``page`` messages at a time until it says they
                suffice (``limit`` is then ignored); the first of them has a
                parent when the root was not reached.
            page: The size of each read with ``enough``.
        """
        with self._db.reading() as conn:
            record = require_conversation(conn, conversation_id)
            start = record.active_leaf_id
            if before is not None:
                row = conn.execute(
                    "SELECT parent_id FROM messages WHERE id = ? AND conversation_id = ?",
                    (before, conversation_id),
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"no message {before} in conversation {conversation_id}")
                start = row[0]
            if enough is not None:
                return self._ancestors_until(conn, start, enough, page)
            return self._ancestors(conn, start, limit)

    def conversation_with_path(
        self, conversation_id: str, enough: Enough | None = None, page: int = TAIL_PAGE,
    ) -> tuple[ConversationRecord, list[MessageRecord]] | None:
        """The conversation and its active branch in one read; None if there is none.

        What a turn's start reads (``serve``): read apart, the record and the branch
        were three queries on two of the pool's connections, the branch's read
        reading the record again; here two, on one. With ``enough`` only the
        branch's newest messages, as :meth:`active_path` reads them.
        """
        with self._db.reading() as conn:
            try:
                record = require_conversation(conn, conversation_id)
            except NotFoundError:
                return None
            if enough is not None:
                return record, self._ancestors_until(conn, record.active_leaf_id, enough, page)
            return record, self._ancestors(conn, record.active_leaf_id, None)

    def newest_rows(self, conversation_id: str, limit: int) -> list[tuple[str, str, str]]:
        """The active branch's newest ``limit`` messages as (id, status, role), root first.

        Why apart from :meth:`active_path`: a front end that shows a page of the
        branch compares it with the store's at each turn's start, to learn
        whether another process moved it; the comparison needs no message's
        text, and parsing a page of long replies for it cost more than the turn's
        own read.
        """
        with self._db.reading() as conn:
            record = require_conversation(conn, conversation_id)
            rows = self._walk(conn, record.active_leaf_id, limit, "m.id, m.status, m.role")
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]

    def path_to(self, message_id: str, limit: int | None = None) -> list[MessageRecord]:
        """The branch from the root down to ``message_id`` (the last ``limit`` of it)."""
        with self._db.reading() as conn:
            return self._ancestors(conn, message_id, limit)

    def _ancestors_until(self, conn: SqlConnection, start: str | None, enough: Enough,
                         page: int) -> list[MessageRecord]:
        """The newest messages up from ``start``, a page at a time until ``enough`` says so."""
        records = self._ancestors(conn, start, max(1, page))
        while records and records[0].parent_id is not None:
            verdict = enough(records)
            if verdict:
                break
            records = self._ancestors(conn, records[0].parent_id,
                                      None if verdict is None else page) + records
        return records

    def _ancestors(
        self, conn: SqlConnection, start: str | None, limit: int | None
    ) -> list[MessageRecord]:
        return [message_from_row(r) for r in self._walk(conn, start, limit, MESSAGE_COLUMNS)]

    def _walk(self, conn: SqlConnection, start: str | None, limit: int | None,
              columns: str) -> list[Any]:
        """``columns`` of ``start`` and its ancestors (the newest ``limit``), root first."""
        if start is None or (limit is not None and limit <= 0):
            return []
        return conn.execute(
            f"""
            WITH RECURSIVE walk(seq, parent_id, n) AS (
                SELECT seq, parent_id, 1 FROM messages WHERE id = ?
                UNION ALL
                SELECT p.seq, p.parent_id, walk.n + 1 FROM walk
                JOIN messages p ON p.id = walk.parent_id
                WHERE ? < 0 OR walk.n < ?
            )
            SELECT {columns} FROM walk JOIN messages m ON m.seq = walk.seq
            ORDER BY walk.n DESC
            """,
            (start, -1 if limit is None else limit, -1 if limit is None else limit),
        ).fetchall()

    def children(
        self, message_id: str | None, conversation_id: str | None = None
    ) -> list[MessageRecord]:
        """Direct replies to a message, oldest first; with None, the conversation's roots."""
        with self._db.reading() as conn:
            if message_id is None:
                if conversation_id is None:
                    raise ValueError("roots need a conversation_id")
                rows = conn.execute(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = ?"
                    " AND m.parent_id IS NULL ORDER BY m.seq",
                    (conversation_id,),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.parent_id = ?"
                    " ORDER BY m.seq",
                    (message_id,),
                ).fetchall()
        return [message_from_row(r) for r in rows]

    def siblings(self, message_id: str) -> list[MessageRecord]:
        """The alternatives at a message's place (itself included), oldest first.

        The GUI shows "2 / 3" arrows from this when a message was edited or regenerated.
        """
        record = self.get_message(message_id)
        if record is None:
            raise NotFoundError(f"no message {message_id}")
        return self.children(record.parent_id, record.conversation_id)

    def branch_position(self, message_id: str) -> tuple[int, int] | None:
        """Which version a message is: (position from 1, number of versions), or None.

        One indexed query (by parent), so the window can ask for each message it
        draws ("‹ 2/3 ›") without reading the whole conversation.
        """
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT s.id FROM messages m"
                f" JOIN messages s ON s.parent_id {self._db.dialect.same_as} m.parent_id"
                " AND s.conversation_id = m.conversation_id"
                " WHERE m.id = ? ORDER BY s.seq",
                (message_id,),
            ).fetchall()
        ids = [str(r[0]) for r in rows]
        if len(ids) < 2 or message_id not in ids:
            return None
        return ids.index(message_id) + 1, len(ids)

    def latest_leaf(self, message_id: str) -> str:
        """The newest leaf under a message, following the newest child at each step.

        Switching to a sibling branch is ``set_active_leaf(conv, latest_leaf(sibling))``.
        """
        with self._db.reading() as conn:
            row = conn.execute(
                """
                WITH RECURSIVE walk(id, n) AS (
                    SELECT CAST(? AS TEXT), 0
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
        with self._db.writing() as conn:
            require_conversation(conn, conversation_id)
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
        with self._db.reading() as conn:
            require_conversation(conn, conversation_id)
            rows = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id = ?"
                " ORDER BY m.depth, m.seq",
                (conversation_id,),
            ).fetchall()
        return [message_from_row(r) for r in rows]

    def count_messages(self, conversation_id: str) -> int:
        """How many messages the conversation holds across all branches."""
        with self._db.reading() as conn:
            return int(
                conn.execute(
                    "SELECT count(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
                ).fetchone()[0]
            )
