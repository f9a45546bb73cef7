"""A Client session kept in the app's SQLite store: scripts and the window share conversations.

``Client(options, session=StoreHistory(store, conversation_id))`` loads the
conversation's active branch (what the window shows) and appends every new
message to it, so a script continues a conversation started in the window
and the window shows, on its next read, what a script added. It implements
:class:`desktop_agent.core.context.history_stores.HistoryStore`; the core never
imports this module.

claude-agent-sdk's ``resume`` and ``fork_session``, by conversation id:
:meth:`StoreHistory.resume` opens a stored conversation (the app's data folder
by default) to continue it, and :meth:`StoreHistory.fork` copies its branch up
to a message into a new conversation (as the window's "branch from here"
starts a new path), so the original stays as it was.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from desktop_agent.store.errors import NotFoundError
from desktop_agent.store.store import Store

#: Written in the metadata of messages a script added (the server writes "server").
SOURCE = "sdk"
#: The lease owner other processes are told about when they find the conversation busy.
LEASE_OWNER = "script"


def _worth_sending(message: dict[str, Any]) -> bool:
    """Skip empty assistant messages (an interrupted reply that had produced nothing)."""
    if message.get("role") != "assistant":
        return True
    return bool(message.get("content") or message.get("tool_calls"))


class StoreHistory:
    """One conversation in a :class:`Store`, as a Client session.

    Attributes:
        store: The store the conversation lives in.
        conversation_id: The conversation; None until a new one is created on
            first write.
    """

    def __init__(self, store: Store, conversation_id: str | None = None, *,
                 title: str = "Script conversation", settings: dict[str, Any] | None = None,
                 owns_store: bool = False) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self._title = title
        self._settings = settings
        self._owns_store = owns_store
        self._leaf: str | None = None  # the active leaf this session last read or wrote

    @classmethod
    def open(cls, conversation_id: str | None = None, path: Path | str | None = None,
             **kwargs: Any) -> StoreHistory:
        """A session over the store at ``path`` (default: the window's own database)."""
        return cls(Store.open(path), conversation_id, owns_store=True, **kwargs)

    @classmethod
    def resume(cls, conversation_id: str, path: Path | str | None = None) -> StoreHistory:
        """A stored conversation to continue (claude-agent-sdk's ``resume``).

        Args:
            conversation_id: Its id (the window's conversation, or one a script made).
            path: The store (a database file or URL); default: the app's data folder.

        Raises:
            NotFoundError: No conversation has that id there (the store is closed again).
        """
        history = cls.open(conversation_id, path)
        if history.store.get_conversation(conversation_id) is None:
            history.close()
            raise NotFoundError(f"No conversation {conversation_id!r} is stored in "
                                f"{path or 'the app data folder'}.")
        return history

    def fork(self, message_id: str | None = None, *, title: str | None = None) -> StoreHistory:
        """A new conversation holding this one's branch up to ``message_id`` (None: all of it).

        claude-agent-sdk's ``fork_session``: the fork continues on its own, the
        original is not changed. Settings, and each message's metadata, are
        copied; the fork shares this one's store (closed with it).

        Raises:
            NotFoundError: This conversation, or the message in its branch, is not found.
        """
        if self.conversation_id is None:
            raise NotFoundError("Nothing to fork: this session has no conversation yet.")
        record = self.store.get_conversation(self.conversation_id)
        if record is None:
            raise NotFoundError(f"No conversation {self.conversation_id!r} is stored.")
        path = self.store.active_path(self.conversation_id)
        if message_id is not None:
            ids = [r.id for r in path]
            if message_id not in ids:
                raise NotFoundError(f"Message {message_id!r} is not on the active branch of "
                                    f"conversation {self.conversation_id!r}.")
            path = path[:ids.index(message_id) + 1]
        forked = self.store.create_conversation(title or f"{record.title} (fork)",
                                                dict(record.settings))
        parent: str | None = None
        for message in path:
            if message.status == "streaming":
                continue
            parent = self.store.add_message(forked.id, dict(message.message), parent,
                                            dict(message.metadata or {}),
                                            status=message.status).id
        return StoreHistory(self.store, forked.id)

    def close(self) -> None:
        """Close the store if this session opened it."""
        if self._owns_store:
            self.store.close()

    def _ensure_conversation(self) -> str:
        if self.conversation_id is None:
            record = self.store.create_conversation(self._title, self._settings)
            self.conversation_id = record.id
            self._leaf = None
        return self.conversation_id

    def _load(self) -> list[dict[str, Any]]:
        if self.conversation_id is None:
            return []
        path = self.store.active_path(self.conversation_id)
        self._leaf = path[-1].id if path else None
        return [dict(r.message) for r in path
                if r.status != "streaming" and _worth_sending(r.message)]

    def _append(self, messages: list[dict[str, Any]]) -> None:
        conversation_id = self._ensure_conversation()
        for message in messages:
            if not _worth_sending(message):
                continue
            metadata = {"source": SOURCE} if message.get("role") == "assistant" else None
            record = self.store.add_message(conversation_id, message, metadata=metadata,
                                            expected_parent=self._leaf)
            self._leaf = record.id

    async def load(self) -> list[dict[str, Any]]:
        """The active branch, root first (raises NotFoundError for an unknown id)."""
        return await asyncio.to_thread(self._load)

    async def append(self, messages: list[dict[str, Any]]) -> None:
        """Add ``messages`` to the end of the active branch.

        Raises:
            StaleParentError: another process added to (or switched) the branch
                since this session read it; nothing was written.
        """
        await asyncio.to_thread(self._append, messages)

    def turn(self) -> AbstractAsyncContextManager[object]:
        """The conversation's turn lease, held (and renewed) while a turn runs."""
        return self.store.turn_lease(self._ensure_conversation(), LEASE_OWNER)
