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

:class:`Store` is assembled from one mixin per responsibility, each in its own
module over the shared connection in :mod:`desktop_agent.store.transactions`:
:mod:`~desktop_agent.store.conversation_crud`,
:mod:`~desktop_agent.store.message_writes`,
:mod:`~desktop_agent.store.message_tree`,
:mod:`~desktop_agent.store.full_text_search` and
:mod:`~desktop_agent.store.app_settings`. Mixins rather than a façade that
delegates to helpers, because the methods all share one connection, lock and
transaction helper: a façade would repeat every public signature and docstring
just to forward the call, while mixins keep each method written once and
``Store`` still one class with the same methods as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from desktop_agent import paths
from desktop_agent.store import event_table, schema
from desktop_agent.store.app_settings import AppSettings
from desktop_agent.store.connection import check_is_ours, connect
from desktop_agent.store.conversation_crud import ConversationCrud
from desktop_agent.store.event_table import NewEvent, StoredEvent
from desktop_agent.store.full_text_search import FullTextSearch
from desktop_agent.store.message_tree import MessageTree
from desktop_agent.store.message_writes import MessageWrites
from desktop_agent.store.records import ChangeToken
from desktop_agent.store.turn_lease import DEFAULT_LEASE_SECONDS, TurnLease, lease_holder


class Store(ConversationCrud, MessageWrites, MessageTree, FullTextSearch, AppSettings):
    """The conversation database.

    Attributes:
        path: The SQLite file.
    """

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

    # -- cross-process consistency -------------------------------------------------------
    def change_token(self) -> ChangeToken:
        """A cheap fingerprint of the file's state (one PRAGMA, no table read).

        An open window polls it (say every second) and re-reads a conversation
        or the sidebar only when :meth:`ChangeToken.changed_elsewhere` says
        another process (the REST server, ``desktop-agent import``) committed.
        """
        with self._reading() as conn:
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        return ChangeToken(version, self._local_writes)

    def turn_lease(
        self, conversation_id: str, owner: str, *, seconds: float = DEFAULT_LEASE_SECONDS
    ) -> TurnLease:
        """The conversation's turn lease, to hold while a turn runs (``with`` or ``async with``).

        Entering raises :class:`~desktop_agent.store.errors.ConversationBusyError`
        when another live process (or another holder in this one) has it; a
        lease of a process that is gone, or past its expiry, is taken over.
        """
        return TurnLease(self._writing, conversation_id, owner, seconds)

    def turn_lease_holder(self, conversation_id: str) -> str | None:
        """Who runs a turn on the conversation right now (the lease's owner), or None."""
        with self._reading() as conn:
            return lease_holder(conn, conversation_id)

    # -- event log -----------------------------------------------------------------------
    def append_events(self, events: Sequence[NewEvent]) -> list[StoredEvent]:
        """Append events in one transaction; the database gives each its id."""
        if not events:
            return []
        with self._writing() as conn:
            return event_table.append_events(conn, events)

    def read_events(
        self, conversation_id: str, after: int = 0, limit: int = 100, before: int | None = None
    ) -> list[StoredEvent]:
        """Events with ids in ``(after, before)``, oldest first, at most ``limit``."""
        with self._reading() as conn:
            return event_table.read_events(conn, conversation_id, after, limit, before)

    def last_event_id(self, conversation_id: str) -> int:
        """The id of the conversation's newest event (0 when it has none)."""
        with self._reading() as conn:
            return event_table.last_event_id(conn, conversation_id)

    def event_conversations(self) -> list[str]:
        """Conversations that have events on disk."""
        with self._reading() as conn:
            return event_table.event_conversations(conn)

    def delete_events(self, conversation_id: str) -> None:
        """Forget a conversation's events (:meth:`delete_conversation` does it too)."""
        with self._writing() as conn:
            event_table.delete_events(conn, conversation_id)
