"""Writing messages: append, checkpoint a streaming reply, finish it, recover it.

The writes that keep a reply safe while it streams sit together here because
they share one rule: only a message still marked "streaming" is overwritten by
a checkpoint, and one left "streaming" by a dead process becomes "interrupted".
"""

from __future__ import annotations

import enum
import json
import logging
import time
from typing import Any, Final, Literal

from desktop_agent.store.engine import Engine, reindex
from desktop_agent.store.errors import NotFoundError, StaleParentError
from desktop_agent.store.message_text import searchable_text
from desktop_agent.store.process_liveness import current_writer, writer_alive
from desktop_agent.store.record_rows import MESSAGE_COLUMNS, dumps, message_from_row, new_id
from desktop_agent.store.records import MESSAGE_STATUSES, MessageRecord
from desktop_agent.store.sql_connection import SqlConnection
from desktop_agent.store.turn_lease import TurnLease
from desktop_agent.store.write_checks import check_message, clean_metadata

# The name the store has always logged under, so log filters keep working.
logger = logging.getLogger("desktop_agent.store")


class _Unchecked(enum.Enum):
    UNCHECKED = enum.auto()


UNCHECKED: Final = _Unchecked.UNCHECKED
"""``add_message(expected_parent=UNCHECKED)``: append without checking the active leaf."""


class MessageWrites:
    """The message-writing part of :class:`~desktop_agent.store.store.Store`.

    It works on the store's one engine (connection, lock, transactions).
    """

    def __init__(self, db: Engine) -> None:
        self._db = db

    def add_message(
        self,
        conversation_id: str,
        message: dict[str, Any],
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        status: str = "complete",
        *,
        new_root: bool = False,
        expected_parent: str | Literal[_Unchecked.UNCHECKED] | None = UNCHECKED,
        lease: TurnLease | None = None,
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
            expected_parent: The active leaf the caller last read (None: the
                conversation was empty). When given and the leaf moved meanwhile
                (another process appended or switched branch), nothing is written.
            lease: The conversation's turn lease, taken in the same transaction
                before the message is written (a turn's prompt): see
                :meth:`~desktop_agent.store.turn_lease.TurnLease.acquire_with`.

        Raises:
            StaleParentError: The active leaf is not ``expected_parent``; re-read
                the active path instead of forking the tree (no lease is taken).
            NotFoundError: No such conversation or parent message.
            ConversationBusyError: ``lease`` is held by another live process
                (nothing is written).
        """
        message = check_message(message)
        if status not in MESSAGE_STATUSES:
            raise ValueError(f"status must be one of {', '.join(MESSAGE_STATUSES)}")
        metadata = clean_metadata(metadata)
        now = time.time()
        message_id = new_id()
        writer = current_writer() if status == "streaming" else None

        def write(conn: SqlConnection) -> MessageRecord:
            # The conversation and the parent's depth in one read (one round trip on
            # PostgreSQL): the parent is the one given, else the active leaf.
            row = conn.execute(
                "SELECT c.active_leaf_id, m.depth FROM conversations c"
                " LEFT JOIN messages m ON m.conversation_id = c.id"
                " AND m.id = COALESCE(?, c.active_leaf_id) WHERE c.id = ?",
                (parent_id, conversation_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no conversation {conversation_id}")
            leaf = row[0]
            if expected_parent is not UNCHECKED and expected_parent != leaf:
                raise StaleParentError(conversation_id, expected_parent, leaf)
            parent = None if new_root else (parent_id if parent_id is not None else leaf)
            depth = 0
            if parent is not None:
                if row[1] is None:
                    raise NotFoundError(f"no message {parent} in conversation {conversation_id}")
                depth = row[1] + 1
            self._db.dialect.insert_searchable_message(
                conn,
                "INSERT INTO messages(id, conversation_id, parent_id, role, message, metadata,"
                " status, created_at, depth, writer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message_id,
                    conversation_id,
                    parent,
                    message["role"],
                    dumps(message),
                    dumps(metadata),
                    status,
                    now,
                    depth,
                    writer,
                ),
                searchable_text(message, metadata),
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

        if lease is not None:
            if lease.conversation_id != conversation_id:
                raise ValueError("the lease is another conversation's")
            return lease.acquire_with(write)
        with self._db.writing_beside((conversation_id,)) as conn:
            return write(conn)

    def checkpoint_message(
        self, message_id: str, content: str, thinking: str | None = None
    ) -> None:
        """Save a streaming reply's text so far (cheap; call about once a second).

        Only a message still marked "streaming" changes; a late checkpoint after
        :meth:`complete_message` is ignored rather than undoing the final text.
        That rule is the ``UPDATE``'s own condition, which the database checks
        under the row's lock, so on PostgreSQL checkpoints run beside event
        appends and each other (:meth:`Engine.writing_beside`; only a whole
        :meth:`Engine.writing` waits for them): a server streaming 150 replies
        checkpoints 150 a second.
        """
        call = self._db.dialect.checkpoint_call
        if call is not None:  # one statement, its own transaction (PostgreSQL's function)
            with self._db.reading() as conn:
                row = conn.execute(call, (message_id, content, thinking)).fetchone()
            if row is None or int(row[0]) < 0:
                raise NotFoundError(f"no message {message_id}")
            return
        with self._db.writing_beside() as conn:
            cursor = self._db.dialect.checkpoint(conn, content, thinking, message_id)
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
        *,
        conversation_id: str | None = None,
    ) -> MessageRecord:
        """Write a reply's final form; ``metadata`` keys are merged into what is there.

        ``conversation_id``, when the caller knows it, spares reading it first
        (see :meth:`_conversation_of`); a wrong one is refused as not found.
        """
        message = check_message(message)
        if status not in MESSAGE_STATUSES:
            raise ValueError(f"status must be one of {', '.join(MESSAGE_STATUSES)}")
        with self._db.writing_beside(self._conversation_of(message_id, conversation_id)) as conn:
            row = conn.execute(
                f"SELECT {MESSAGE_COLUMNS}, m.seq FROM messages m WHERE m.id = ?", (message_id,)
            ).fetchone()
            if row is None or (conversation_id is not None and row[1] != conversation_id):
                raise NotFoundError(f"no message {message_id}")
            merged = {**json.loads(row[5]), **clean_metadata(metadata)}
            conn.execute(
                "UPDATE messages SET role = ?, message = ?, metadata = ?, status = ?, writer = ?"
                " WHERE id = ?",
                (
                    message["role"],
                    dumps(message),
                    dumps(merged),
                    status,
                    current_writer() if status == "streaming" else None,
                    message_id,
                ),
            )
            reindex(conn, row[9], message, merged)
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (time.time(), row[1])
            )
        return MessageRecord(
            row[0], row[1], row[2], message["role"], message, merged, status, row[7], row[8]
        )

    def update_message_metadata(self, message_id: str, updates: dict[str, Any], *,
                                conversation_id: str | None = None) -> MessageRecord:
        """Merge keys into a message's metadata (e.g. an approval decided later).

        ``conversation_id`` as in :meth:`complete_message`.
        """
        with self._db.writing_beside(self._conversation_of(message_id, conversation_id)) as conn:
            row = conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?", (message_id,)
            ).fetchone()
            if row is None or (conversation_id is not None and row[1] != conversation_id):
                raise NotFoundError(f"no message {message_id}")
            merged = {**json.loads(row[5]), **clean_metadata(updates)}
            conn.execute(
                "UPDATE messages SET metadata = ? WHERE id = ?", (dumps(merged), message_id)
            )
        record = message_from_row(row)
        return MessageRecord(**{**record.__dict__, "metadata": merged})

    def _conversation_of(self, message_id: str, known: str | None = None) -> tuple[str, ...]:
        """The message's conversation, to name in :meth:`Engine.writing_beside`.

        Read before the write (a message never moves to another conversation),
        and only where the engine heeds the name (PostgreSQL); an unknown id
        names none, and the write itself says it is not found. ``known``, the
        caller's word for it, is taken instead: a turn's last two writes (the
        reply's final form, its usage) read it that way once each per turn, a
        round trip of their own. The write checks it against the row it reads.
        """
        if not self._db.dialect.keyed_writes:
            return ()
        if known is not None:
            return (known,)
        with self._db.reading() as conn:
            row = conn.execute(
                "SELECT conversation_id FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
        return (str(row[0]),) if row is not None else ()

    def recover_interrupted(self) -> list[str]:
        """Mark replies left "streaming" by a process that is gone as "interrupted".

        Replies a live process (the REST server, another window) is still
        writing are left alone. The partial text becomes searchable. Returns the
        ids of the messages marked.
        """
        marked = []
        with self._db.writing() as conn:
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
                    (dumps(meta), seq),
                )
                reindex(conn, seq, json.loads(message), meta)
                marked.append(message_id)
        if marked:
            logger.info("marked %d reply(ies) cut off by a crash as interrupted", len(marked))
        return marked
