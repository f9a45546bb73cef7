"""One turn at a time per conversation, across every process on one data folder.

The window and ``desktop-agent serve`` (or two servers) may open the same
conversation. Two turns running at once would interleave two replies in one
branch, so a turn first takes the conversation's lease: a row in
``turn_leases`` written under SQLite's write lock (on PostgreSQL, under the lock
of that conversation's writes), so exactly one process gets it. The other is
told :class:`~desktop_agent.store.errors.ConversationBusyError`.

A lease names its process (``host:pid:start``, see
:mod:`~desktop_agent.store.process_liveness`) and an expiry. A lease whose
process is gone (killed, crashed) or whose expiry passed is taken over, so a
crash never locks a conversation for good. Every reply is streamed under its
conversation's lease, so a reply still marked "streaming" when the lease is
taken was cut off: it is marked "interrupted" then, in the same transaction.
That covers a ``serve`` replica killed on another machine too, whose process
no one here can check. A holder that runs longer than the
lease renews it: :class:`TurnLease` used with ``async with`` does so by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Self, TypeVar

from desktop_agent.store.engine import reindex
from desktop_agent.store.errors import ConversationBusyError, NotFoundError
from desktop_agent.store.process_liveness import current_writer, writer_alive
from desktop_agent.store.record_rows import dumps, new_id
from desktop_agent.store.sql_connection import SqlConnection, SqlCursor

logger = logging.getLogger("desktop_agent.store.turn_lease")

T = TypeVar("T")

DEFAULT_LEASE_SECONDS = 60.0
"""How long a lease lasts without renewal; ``async with`` renews it every third of that."""

Writing = Callable[[], AbstractContextManager[SqlConnection]]


def lease_holder(conn: SqlConnection, conversation_id: str) -> str | None:
    """The owner of a lease still in force on the conversation, or None."""
    row = conn.execute(
        "SELECT owner, process, expires_at FROM turn_leases WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    if row is None or not _in_force(row[1], row[2]):
        return None
    return str(row[0])


def _in_force(process: str, expires_at: float) -> bool:
    return expires_at > time.time() and writer_alive(process)


def _cut_off_replies(conn: SqlConnection, conversation_id: str) -> SqlCursor:
    """The conversation's replies left "streaming" (sent now, read when needed)."""
    return conn.execute(
        "SELECT seq, id, message, metadata FROM messages"
        " WHERE conversation_id = ? AND status = 'streaming'",
        (conversation_id,),
    )


def _interrupt_cut_off_replies(conn: SqlConnection, conversation_id: str,
                               rows: list[Any]) -> None:
    """Mark the replies left "streaming" (``rows``) as "interrupted", their text kept."""
    for seq, message_id, message, metadata in rows:
        meta = {**json.loads(metadata), "interrupted_at": time.time()}
        conn.execute(
            "UPDATE messages SET status = 'interrupted', metadata = ?, writer = NULL"
            " WHERE seq = ?",
            (dumps(meta), seq),
        )
        reindex(conn, seq, json.loads(message), meta)
        logger.info("reply %s of %s was cut off with its turn; marked interrupted",
                    message_id, conversation_id)


class TurnLease:
    """The right to run a turn on one conversation; a context manager (sync or async).

    ``with lease:`` takes it and gives it back; ``async with lease:`` takes it
    in a worker thread and renews it in the background until the block ends.

    Attributes:
        conversation_id: The conversation.
        owner: Who holds it, shown to whoever is refused (e.g. ``"window"``,
            ``"server:8000"``).
        seconds: How long the lease lasts without renewal.
        held: True between a successful :meth:`acquire` and :meth:`release`.
        lost: True when a renewal found the lease taken over by another process.
    """

    def __init__(
        self,
        writing: Writing,
        conversation_id: str,
        owner: str,
        seconds: float = DEFAULT_LEASE_SECONDS,
        *,
        alone: Writing | None = None,
    ) -> None:
        if seconds <= 0:
            raise ValueError("a lease must last a positive number of seconds")
        self._writing = writing
        self._alone = alone
        self.conversation_id = conversation_id
        self.owner = owner
        self.seconds = seconds
        self._token = new_id()
        self.held = False
        self.lost = False
        self._renewer: asyncio.Task[None] | None = None

    def acquire(self) -> None:
        """Take the lease.

        Raises:
            ConversationBusyError: Another live holder has it.
            NotFoundError: There is no such conversation.
        """
        with self._writing() as conn:
            self._take(conn)
        self.held = True
        self.lost = False

    def acquire_with(self, write: Callable[[SqlConnection], T]) -> T:
        """Take the lease and make ``write`` in the same transaction; its result.

        Why: a turn's start takes the lease and stores the prompt. As two
        transactions on PostgreSQL that was two connection checkouts, two
        BEGIN/COMMIT rounds and two of the lease's key locks per turn started;
        as one, the prompt is stored exactly when the lease is taken (a refused
        lease stores nothing, a refused write leaves no lease behind).

        Raises:
            ConversationBusyError: Another live holder has it (nothing is written).
            NotFoundError: There is no such conversation.
        """
        with self._writing() as conn:
            self._take(conn)
            result = write(conn)
        self.held = True
        self.lost = False
        return result

    def _take(self, conn: SqlConnection) -> None:
        """The lease's row, written on ``conn`` inside the caller's write transaction."""
        now = time.time()
        # The conversation, its lease and its replies left streaming in one round
        # trip on PostgreSQL (the statements are pipelined: each waits when read).
        held = conn.execute(
            "SELECT l.owner, l.process, l.token, l.expires_at FROM conversations c"
            " LEFT JOIN turn_leases l ON l.conversation_id = c.id WHERE c.id = ?",
            (self.conversation_id,),
        )
        cut_off = _cut_off_replies(conn, self.conversation_id)
        row = held.fetchone()
        if row is None:
            raise NotFoundError(f"no conversation {self.conversation_id}")
        if row[2] is None:  # no lease row
            row = None
        if row is not None and row[2] != self._token and _in_force(row[1], row[3]):
            raise ConversationBusyError(self.conversation_id, str(row[0]))
        if row is not None and row[2] != self._token:
            logger.info("taking over the turn lease of %s from %s (gone or expired)",
                        self.conversation_id, row[0])
        conn.execute(
            "INSERT INTO turn_leases"
            "(conversation_id, owner, process, token, acquired_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(conversation_id) DO UPDATE SET"
            " owner = excluded.owner, process = excluded.process, token = excluded.token,"
            " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at",
            (self.conversation_id, self.owner, current_writer(), self._token, now,
             now + self.seconds),
        )
        _interrupt_cut_off_replies(conn, self.conversation_id, cut_off.fetchall())

    def renew(self) -> None:
        """Push the expiry ``seconds`` ahead.

        Raises:
            ConversationBusyError: The lease expired and another process took it.
        """
        with self._writing() as conn:
            cursor = conn.execute(
                "UPDATE turn_leases SET expires_at = ? WHERE conversation_id = ? AND token = ?",
                (time.time() + self.seconds, self.conversation_id, self._token),
            )
            if cursor.rowcount == 0:
                holder = lease_holder(conn, self.conversation_id) or "another process"
                self.held = False
                self.lost = True
                raise ConversationBusyError(self.conversation_id, holder)

    def release(self) -> None:
        """Give the lease back (only ours: a taken-over lease is left alone). Idempotent."""
        if not self.held:
            return
        self.held = False
        # One statement, touching only this lease's row (a taken-over one is not ours
        # to delete): where a statement commits by itself (``alone``, PostgreSQL) it
        # needs no transaction and no lock, one round trip instead of a transaction's
        # two with its lock statements, per turn.
        with (self._alone or self._writing)() as conn:
            conn.execute(
                "DELETE FROM turn_leases WHERE conversation_id = ? AND token = ?",
                (self.conversation_id, self._token),
            )

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()

    async def __aenter__(self) -> Self:
        # A lease taken a moment ago (a turn's start takes it before storing the
        # prompt) is not taken again: on PostgreSQL that was a second round of four
        # statements per turn, and the renewal below finds a lease lost meanwhile.
        if not self.held:
            await asyncio.to_thread(self.acquire)
        self._renewer = asyncio.get_running_loop().create_task(
            self._keep_renewed(), name=f"turn-lease-{self.conversation_id}"
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._renewer is not None:
            renewer, self._renewer = self._renewer, None
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
        # Shielded: a cancelled turn must still give the lease back.
        await asyncio.shield(asyncio.to_thread(self.release))

    async def _keep_renewed(self) -> None:
        while True:
            await asyncio.sleep(self.seconds / 3)
            try:
                await asyncio.to_thread(self.renew)
            except ConversationBusyError:
                logger.warning("the turn lease of %s was taken over by another process",
                               self.conversation_id)
                return
            except Exception:  # a locked or full disk: keep trying until expiry
                logger.exception("renewing the turn lease of %s failed", self.conversation_id)
