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

:class:`Store` is composed of one part per responsibility, each in its own
module and each handed the one :class:`~desktop_agent.store.transactions.Database`
(connection, lock, transactions):
:class:`~desktop_agent.store.conversation_crud.ConversationCrud`,
:class:`~desktop_agent.store.message_writes.MessageWrites`,
:class:`~desktop_agent.store.message_tree.MessageTree`,
:class:`~desktop_agent.store.full_text_search.FullTextSearch`,
:class:`~desktop_agent.store.app_settings.AppSettings`,
:class:`~desktop_agent.store.cross_process.CrossProcess` (change token, turn
lease) and :class:`~desktop_agent.store.event_table.EventTable`. Store itself
only forwards: its methods are the public API (one line each, the parts carry
the details), so a part can change inside without callers noticing, and no
part can reach into another's state.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal, Self

from desktop_agent.appdata import paths
from desktop_agent.store import schema
from desktop_agent.store.app_settings import AppSettings
from desktop_agent.store.connection import check_is_ours, connect
from desktop_agent.store.conversation_crud import ConversationCrud
from desktop_agent.store.cross_process import CrossProcess
from desktop_agent.store.event_table import EventTable, NewEvent, StoredEvent
from desktop_agent.store.full_text_search import FullTextSearch
from desktop_agent.store.message_tree import MessageTree
from desktop_agent.store.message_writes import UNCHECKED, MessageWrites, _Unchecked
from desktop_agent.store.records import (
    ChangeToken,
    ConversationRecord,
    MessageRecord,
    NewConversation,
    SearchHit,
)
from desktop_agent.store.transactions import Database
from desktop_agent.store.turn_lease import DEFAULT_LEASE_SECONDS, TurnLease


class Store:
    """The conversation database.

    Attributes:
        path: The SQLite file.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._db = Database(conn, path)
        self.path = path
        self._conversations = ConversationCrud(self._db)
        self._writes = MessageWrites(self._db)
        self._tree = MessageTree(self._db)
        self._search = FullTextSearch(self._db)
        self._app_settings = AppSettings(self._db)
        self._cross = CrossProcess(self._db)
        self._events = EventTable(self._db)

    @classmethod
    def open(cls, path: Path | str | None = None, *, recover: bool = True) -> Store:
        """Open (creating and migrating as needed) the database.

        Args:
            path: The SQLite file; default :func:`desktop_agent.appdata.paths.database_path`.
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
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        """The raw connection under the store's lock (tests inspect the file with it)."""
        return self._db.reading()

    # -- conversation_crud -----------------------------------------------------------------
    def create_conversation(
        self, title: str = "New chat", settings: dict[str, Any] | None = None
    ) -> ConversationRecord:
        """Start an empty conversation."""
        return self._conversations.create_conversation(title, settings)

    def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation, or None when there is no such id."""
        return self._conversations.get_conversation(conversation_id)

    def list_conversations(
        self, limit: int = 100, offset: int = 0, query: str | None = None
    ) -> list[ConversationRecord]:
        """Conversations, most recently updated first."""
        return self._conversations.list_conversations(limit, offset, query)

    def count_conversations(self) -> int:
        """How many conversations exist (for a sidebar's scroll range)."""
        return self._conversations.count_conversations()

    def update_conversation(
        self,
        conversation_id: str,
        title: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> ConversationRecord:
        """Rename and/or replace the settings; returns the updated record."""
        return self._conversations.update_conversation(conversation_id, title, settings)

    def patch_settings(
        self, conversation_id: str, changes: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Change some settings by key in one transaction; returns the settings now stored."""
        return self._conversations.patch_settings(conversation_id, changes)

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete a conversation, its messages, events and lease; a missing id is no error."""
        self._conversations.delete_conversation(conversation_id)

    def insert_conversations(self, items: list[NewConversation]) -> list[ConversationRecord]:
        """Insert whole conversations with fresh ids, all or nothing (imports)."""
        return self._conversations.insert_conversations(items)

    # -- message_writes --------------------------------------------------------------------
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
    ) -> MessageRecord:
        """Write a message; it becomes the conversation's active leaf."""
        return self._writes.add_message(conversation_id, message, parent_id, metadata, status,
                                        new_root=new_root, expected_parent=expected_parent)

    def checkpoint_message(
        self, message_id: str, content: str, thinking: str | None = None
    ) -> None:
        """Save a streaming reply's text so far (cheap; call about once a second)."""
        self._writes.checkpoint_message(message_id, content, thinking)

    def complete_message(
        self,
        message_id: str,
        message: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        status: str = "complete",
    ) -> MessageRecord:
        """Write a reply's final form; ``metadata`` keys are merged into what is there."""
        return self._writes.complete_message(message_id, message, metadata, status)

    def update_message_metadata(self, message_id: str, updates: dict[str, Any]) -> MessageRecord:
        """Merge keys into a message's metadata (e.g. an approval decided later)."""
        return self._writes.update_message_metadata(message_id, updates)

    def recover_interrupted(self) -> list[str]:
        """Mark replies left "streaming" by a process that is gone as "interrupted"."""
        return self._writes.recover_interrupted()

    # -- message_tree ----------------------------------------------------------------------
    def get_message(self, message_id: str) -> MessageRecord | None:
        """The message, or None when there is no such id."""
        return self._tree.get_message(message_id)

    def active_path(
        self, conversation_id: str, limit: int | None = None, *, before: str | None = None
    ) -> list[MessageRecord]:
        """The active branch, root first; with ``limit``, only its last messages."""
        return self._tree.active_path(conversation_id, limit, before=before)

    def path_to(self, message_id: str, limit: int | None = None) -> list[MessageRecord]:
        """The branch from the root down to ``message_id`` (the last ``limit`` of it)."""
        return self._tree.path_to(message_id, limit)

    def children(
        self, message_id: str | None, conversation_id: str | None = None
    ) -> list[MessageRecord]:
        """Direct replies to a message, oldest first; with None, the conversation's roots."""
        return self._tree.children(message_id, conversation_id)

    def siblings(self, message_id: str) -> list[MessageRecord]:
        """The alternatives at a message's place (itself included), oldest first."""
        return self._tree.siblings(message_id)

    def branch_position(self, message_id: str) -> tuple[int, int] | None:
        """Which version of its place a message is: (position, count), None when alone."""
        return self._tree.branch_position(message_id)

    def latest_leaf(self, message_id: str) -> str:
        """The newest leaf under a message, following the newest child at each step."""
        return self._tree.latest_leaf(message_id)

    def set_active_leaf(self, conversation_id: str, message_id: str | None) -> None:
        """Choose which branch is shown (None: the conversation shows as empty)."""
        self._tree.set_active_leaf(conversation_id, message_id)

    def all_messages(self, conversation_id: str) -> list[MessageRecord]:
        """Every message of every branch, parents before children (for export)."""
        return self._tree.all_messages(conversation_id)

    def count_messages(self, conversation_id: str) -> int:
        """How many messages the conversation holds across all branches."""
        return self._tree.count_messages(conversation_id)

    # -- full_text_search ------------------------------------------------------------------
    def search(
        self, text: str, limit: int = 50, conversation_id: str | None = None
    ) -> list[SearchHit]:
        """Messages containing all typed words (the last as a prefix), newest first."""
        return self._search.search(text, limit, conversation_id)

    # -- app_settings ----------------------------------------------------------------------
    def get_setting(self, key: str, default: Any = None) -> Any:
        """An app-level value (open tabs, window layout), or ``default``."""
        return self._app_settings.get_setting(key, default)

    def set_setting(self, key: str, value: Any) -> None:
        """Save an app-level JSON value (keys never belong here: use the keyring)."""
        self._app_settings.set_setting(key, value)

    def delete_setting(self, key: str) -> None:
        """Forget an app-level value; a missing key is not an error."""
        self._app_settings.delete_setting(key)

    # -- cross_process ---------------------------------------------------------------------
    def change_token(self) -> ChangeToken:
        """A cheap fingerprint of the file's state (one PRAGMA, no table read)."""
        return self._cross.change_token()

    def turn_lease(
        self, conversation_id: str, owner: str, *, seconds: float = DEFAULT_LEASE_SECONDS
    ) -> TurnLease:
        """The conversation's turn lease, to hold while a turn runs (``with`` or ``async with``)."""
        return self._cross.turn_lease(conversation_id, owner, seconds=seconds)

    def turn_lease_holder(self, conversation_id: str) -> str | None:
        """Who runs a turn on the conversation right now (the lease's owner), or None."""
        return self._cross.turn_lease_holder(conversation_id)

    # -- event_table -----------------------------------------------------------------------
    def append_events(self, events: Sequence[NewEvent]) -> list[StoredEvent]:
        """Append events in one transaction; the database gives each its id."""
        return self._events.append_events(events)

    def read_events(
        self, conversation_id: str, after: int = 0, limit: int = 100, before: int | None = None
    ) -> list[StoredEvent]:
        """Events with ids in ``(after, before)``, oldest first, at most ``limit``."""
        return self._events.read_events(conversation_id, after, limit, before)

    def last_event_id(self, conversation_id: str) -> int:
        """The id of the conversation's newest event (0 when it has none)."""
        return self._events.last_event_id(conversation_id)

    def event_conversations(self) -> list[str]:
        """Conversations that have events on disk."""
        return self._events.event_conversations()

    def delete_events(self, conversation_id: str) -> None:
        """Forget a conversation's events."""
        self._events.delete_events(conversation_id)
