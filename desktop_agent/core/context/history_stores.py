"""Conversation sessions: where a Client's history lives between runs.

``Client(options, session=...)`` loads the conversation from a session when
it is entered (or on first use) and appends to it what each query and turn
added, so a script can stop and a later one (or the window, with the
store-backed session in :mod:`desktop_agent.store.store_history`)
carries on. The core only knows this protocol; it never imports the store.

Rules the client keeps:

* Only new messages are appended, after the user's prompt is queued and
  after every turn (also one that failed or was interrupted: the history is
  consistent on every path, so what is saved is too).
* A session may also guard turns (``turn()``, an async context manager held
  while a reply streams and tools run), as the store-backed one does with
  the conversation's turn lease so a script and the window never answer at
  once. Sessions without ``turn()`` need nothing.
* Assigning ``client.message_history`` (trimming it, say) changes what is
  *sent*, not what was saved: the session keeps the full conversation and
  later messages are appended after it.
"""

from __future__ import annotations

import contextlib
import copy
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class HistoryStore(Protocol):
    """A conversation's stored history, loaded once and appended to."""

    async def load(self) -> list[dict[str, Any]]:
        """The conversation so far as OpenAI message dicts (no system prompt)."""
        ...

    async def append(self, messages: list[dict[str, Any]]) -> None:
        """Store ``messages`` after the ones already stored, in order."""
        ...


class MemoryHistory:
    """A session kept in memory: for tests, and to hand history between clients.

    Attributes:
        messages: Everything appended so far.
    """

    def __init__(self, messages: list[dict[str, Any]] | None = None) -> None:
        self.messages: list[dict[str, Any]] = copy.deepcopy(messages or [])

    async def load(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self.messages)

    async def append(self, messages: list[dict[str, Any]]) -> None:
        self.messages.extend(copy.deepcopy(messages))


#: The name this class had before history stores were named for what they hold;
#: scripts written against it keep working.
MemorySession = MemoryHistory


async def fork_history(source: HistoryStore, keep: int | None = None,
                       into: HistoryStore | None = None) -> HistoryStore:
    """A copy of ``source``'s conversation (its first ``keep`` messages) to go on with apart.

    Works with any history store (claude-agent-sdk's ``fork_session``); the
    app's store forks by message id with ``StoreHistory.fork``.

    Args:
        source: The conversation to fork.
        keep: How many of its messages the fork starts with (None: all).
        into: Where the fork lives (default: a new :class:`MemoryHistory`).
    """
    messages = [m for m in await source.load() if m.get("role") != "system"]
    if keep is not None:
        messages = messages[:max(0, keep)]
    target: HistoryStore = into if into is not None else MemoryHistory()
    await target.append(messages)
    return target


class SessionLink:
    """What of a Client's history its session already holds."""

    def __init__(self, session: HistoryStore) -> None:
        self.session = session
        self.loaded = False
        self._saved = 0

    async def load(self) -> list[dict[str, Any]]:
        """The stored history (once); later calls return an empty list."""
        if self.loaded:
            return []
        history = [m for m in await self.session.load() if m.get("role") != "system"]
        self.loaded = True
        self._saved = len(history)
        return history

    def turn(self) -> AbstractAsyncContextManager[object]:
        """The session's turn guard, or one that guards nothing."""
        guard = getattr(self.session, "turn", None)
        if callable(guard):
            entered: AbstractAsyncContextManager[object] = guard()
            return entered
        return contextlib.nullcontext()

    def stored_id(self) -> str | None:
        """The stored conversation's id, when the session is one a store holds."""
        stored_id = getattr(self.session, "conversation_id", None)
        return stored_id if isinstance(stored_id, str) else None

    def rebase(self, history_length: int) -> None:
        """The history was replaced: count it as saved (the store keeps the full one)."""
        self._saved = history_length

    async def save(self, history: list[dict[str, Any]]) -> None:
        """Append what ``history`` gained since the last save."""
        new = history[self._saved:]
        if not new:
            return
        await self.session.append(copy.deepcopy(new))
        self._saved = len(history)
