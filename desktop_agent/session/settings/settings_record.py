"""The conversation's record as its session last read it: title and settings, patched by key.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
Every other part reads the settings here (a turn at its start, the approval
broker at each question, the working folder for its path), so a change made
through the session, or read back after another process wrote one, reaches
them all at once, and listeners hear it once (:class:`TitleChanged`,
:class:`SettingsChanged`).

Each change is a step written once, as a coroutine handing its store calls to
a :class:`~desktop_agent.session.store_calls.StoreCalls`; the session
runs them at once for the window (see
:class:`~desktop_agent.session.store_calls.AtOnce`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from desktop_agent.session.events import SessionEvent, SettingsChanged, TitleChanged
from desktop_agent.session.settings.permission_rules import (
    allow_in_conversation,
    conversation_allowed_tools,
    revoke_in_conversation,
)
from desktop_agent.session.settings.plain_settings import plainly_valid

if TYPE_CHECKING:
    from desktop_agent.session.store_calls import StoreCalls
    from desktop_agent.store import ConversationRecord, Store


class SettingsRecord:
    """The conversation's record, re-read and changed through the session.

    Args:
        store: The conversation store.
        record: The conversation as just read.
        emit: Reports session events.
    """

    def __init__(self, store: Store, record: ConversationRecord,
                 emit: Callable[[SessionEvent], None]) -> None:
        self._store = store
        self._record = record
        self._emit = emit

    @property
    def conversation_id(self) -> str:
        """The store id of the conversation."""
        return self._record.id

    @property
    def record(self) -> ConversationRecord:
        """The conversation's record as last read."""
        return self._record

    @property
    def settings(self) -> dict[str, Any]:
        """A copy of the settings as last read."""
        return dict(self._record.settings)

    @property
    def current(self) -> Mapping[str, Any]:
        """The settings as last read, not copied (for the parts: read them, never change them).

        A new mapping whenever they are read again, so a part that kept one
        can tell by identity whether the settings changed since.
        """
        return self._record.settings

    def vision(self) -> bool | None:
        """Whether the conversation's model reads pictures (None: unknown)."""
        vision = self._record.settings.get("vision")
        return vision if isinstance(vision, bool) else None

    async def reload(self, call: StoreCalls, read: ConversationRecord | None = None) -> None:
        """Re-read title and settings now, even mid-turn (a PATCH, confirmation mode).

        ``read``: the conversation as the caller read it just now (not read again).
        """
        fresh = read if read is not None and read.id == self._record.id else \
            await call(partial(self._store.get_conversation, self._record.id))
        if fresh is None:
            return
        old, self._record = self._record, fresh
        if fresh.title != old.title:
            self._emit(TitleChanged(fresh.title))
        if fresh.settings != old.settings:
            self._emit(SettingsChanged(dict(fresh.settings)))

    async def rename(self, call: StoreCalls, title: str) -> None:
        """Give the conversation a new title (blank titles are ignored)."""
        title = " ".join(title.split())
        if title and title != self._record.title:
            await call(partial(self._store.update_conversation, self._record.id, title=title))
            await self.reload(call)

    async def update_settings(self, call: StoreCalls, /, **changes: Any) -> None:
        """Change settings by key (None removes one); keys others wrote are kept.

        Raises:
            SettingsError: A value breaks the schema, or asks for
                ``bypassPermissions`` without an active sandbox (nothing is saved).
        """
        if not plainly_valid(changes):  # the server and model a search found: no pydantic
            from desktop_agent.session.settings.conversation_settings import checked_changes

            checked_changes(changes)
        current = self._record.settings
        changes = {k: v for k, v in changes.items()
                   if (v is None and k in current) or (v is not None and current.get(k) != v)}
        if changes:
            if {"permission_mode", "sandbox"} & changes.keys():
                from desktop_agent.session.settings.settings_check import check_permission_mode

                merged = {**current, **changes}
                check_permission_mode({k: v for k, v in merged.items() if v is not None},
                                      changes)
            await call(partial(self._store.patch_settings, self._record.id, changes))
            await self.reload(call)

    async def allow_in_conversation(self, call: StoreCalls, tool_name: str) -> None:
        """Stop asking about ``tool_name`` in this conversation."""
        settings = self._record.settings
        if tool_name not in conversation_allowed_tools(settings):
            await self.update_settings(
                call, permission_rules=allow_in_conversation(settings, tool_name))

    async def revoke_in_conversation(self, call: StoreCalls, tool_name: str) -> None:
        """Ask about ``tool_name`` again in this conversation."""
        await self.update_settings(
            call, permission_rules=revoke_in_conversation(self._record.settings, tool_name))
