"""One store, two engines: what the store's parts need from the database below them.

The conversation store runs on SQLite (the desktop, one ``serve``) and on PostgreSQL
(several ``serve`` replicas sharing one set of conversations). The session layer and
the front ends see one :class:`~desktop_agent.store.store.Store` and never learn which.

How: one set of parts (conversations, message writes, the tree, search, settings,
events, the turn lease) written once in the SQL both engines speak, each handed an
:class:`Engine` (a connection under a lock, short write transactions) and its
:class:`~desktop_agent.store.dialects.Dialect` for the few statements that differ
(full-text search, the change token, a JSON field update, the new row's key).

Why not SQLAlchemy Core and Alembic: SQLite's speed is a budget (a 10,000-message
conversation opens in < 100 ms, an autosave costs microseconds), and a query layer
between the parts and ``sqlite3`` costs on every call; the store's SQL is plain
enough that about ten statements differ, and a second migration history for
PostgreSQL, started at SQLite's current schema, is shorter than teaching one
history both engines. Why not two whole implementations: about ninety statements
and their rules (stale-parent checks, checkpoints only while streaming, merged
metadata, gapless event ids) would be written twice and drift apart.

Writes are serialised on both engines: SQLite's ``BEGIN IMMEDIATE`` takes the
file's write lock, and PostgreSQL's write transaction first takes one
transaction-scoped advisory lock, so read-then-write rules (the lease check, a
message's depth) hold across replicas exactly as across processes. The writes a
busy server makes most (events, checkpoints of streaming replies) say what they
touch (:meth:`Engine.writing_beside`), and PostgreSQL runs those of different
conversations at once; there the two are each one statement, a function in the schema
(:data:`Dialect.append_events_call`, :data:`Dialect.checkpoint_call`), taking the
same locks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from desktop_agent.store.dialects import Dialect, EventsCommitted
from desktop_agent.store.errors import NotFoundError
from desktop_agent.store.message_text import searchable_text
from desktop_agent.store.record_rows import CONVERSATION_COLUMNS, conversation_from_row
from desktop_agent.store.records import ConversationRecord
from desktop_agent.store.sql_connection import SqlConnection


class Engine(Protocol):
    """One database behind the store: a shared connection, its lock and its transactions.

    Attributes:
        dialect: The statements that differ on this engine.
        location: What to name the database in messages (the file, or the server
            and database without the password).
        local_writes: Transactions committed through this engine.
    """

    dialect: Dialect
    location: str
    local_writes: int

    def reading(self) -> AbstractContextManager[SqlConnection]:
        """The connection under the lock; engine errors become ``DatabaseAccessError``."""
        ...

    def writing(self) -> AbstractContextManager[SqlConnection]:
        """One short write transaction, serialised with every other writer."""
        ...

    def writing_beside(self, keys: Iterable[str] = ()) -> AbstractContextManager[SqlConnection]:
        """A write that may run beside other such writes naming none of ``keys``.

        For writes whose rules involve only what ``keys`` name (a conversation's
        event log: its next id) or a single statement (a checkpoint's ``UPDATE``).
        Serialised with every :meth:`writing` all the same. SQLite has one write
        lock and runs it as :meth:`writing`; PostgreSQL lets replicas append to
        different conversations at once.
        """
        ...

    def external_version(self, conn: SqlConnection) -> int:
        """A number that changes when another connection commits (the change token)."""
        ...

    def close(self) -> None:
        """Close the connection; later calls raise ``StoreClosedError``. Idempotent."""
        ...

    def watch_events(self, on_commit: EventsCommitted) -> Callable[[], None] | None:
        """Report other processes' appended events as they commit; returns a stop function.

        None when the engine cannot push them (SQLite: readers poll the file).
        """
        ...

    def watch_approvals(self, on_answer: Callable[[str], None]) -> Callable[[], None] | None:
        """Report answers to tool-call questions as they commit (by conversation id).

        None when questions are not shared between processes (SQLite: each
        process answers the questions of its own turns, in memory).
        """
        ...

    def watch_channel(self, channel: str,
                      on_note: Callable[[str], None]) -> Callable[[], None] | None:
        """Hear another channel's notifications (their payload as text); a stop function.

        None where the engine has no such thing (SQLite).
        """
        ...


def engine_path(engine: Engine) -> Path | None:
    """The SQLite file under ``engine``, or None for a database server."""
    path = getattr(engine, "path", None)
    return path if isinstance(path, Path) else None


def require_conversation(conn: SqlConnection, conversation_id: str) -> ConversationRecord:
    """The conversation's header, read on ``conn``, or NotFoundError."""
    row = conn.execute(
        f"SELECT {CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?",
        (conversation_id,),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no conversation {conversation_id}")
    return conversation_from_row(row)


def reindex(
    conn: SqlConnection, seq: int, message: dict[str, Any], metadata: dict[str, Any]
) -> None:
    """Replace a message's entry in the full-text index."""
    conn.execute("DELETE FROM message_search WHERE rowid = ?", (seq,))
    conn.execute(
        "INSERT INTO message_search(rowid, body) VALUES (?, ?)",
        (seq, searchable_text(message, metadata)),
    )
