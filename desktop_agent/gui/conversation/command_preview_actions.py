"""The window's side of command previews: session events in, card states out, decisions back.

A previewed ``bash`` call (the conversation's *Preview changes first*, or
*Preview* on its approval) waits in the session until it is applied or
discarded. This adapter keeps each one's :class:`CommandPreviewState` for
its card, and turns the card's Apply, Apply anyway and Discard into the
session's :meth:`~desktop_agent.session.conversation.ConversationSession.apply_preview`
and ``discard_preview``: a conflict (files changed meanwhile) comes back as
names on the card with *Apply anyway*, as undo's conflicts do.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from desktop_agent.gui.loop_work import OwnedTasks
from desktop_agent.gui.transcript.items import CommandPreviewState
from desktop_agent.session import (
    CommandPreviewReady,
    CommandPreviewSettled,
    SessionError,
    SessionEvent,
)

if TYPE_CHECKING:
    from desktop_agent.session import ConversationSession

log = logging.getLogger("desktop_agent.gui.previews")


class CommandPreviewActions(QObject):
    """Command previews of one conversation's tab.

    Args:
        session: The conversation's session.
        timeout: Seconds a preview waits before it is discarded (None: forever).

    Signals:
        preview_changed(str, object): tool use id, its new :class:`CommandPreviewState`.
    """

    preview_changed = Signal(str, object)

    def __init__(self, session: ConversationSession, timeout: float | None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._session = session
        self._timeout = timeout
        self._states: dict[str, CommandPreviewState] = {}  # by tool use id
        self._tasks = OwnedTasks()
        session.subscribe(self._on_event)

    def state(self, tool_use_id: str) -> CommandPreviewState | None:
        """The preview of a call, if it has one."""
        return self._states.get(tool_use_id)

    def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, CommandPreviewReady):
            card = event.card
            if card.tool_use_id is None:
                return  # a REST command's: its own client decides it
            deadline = None if self._timeout is None else time.monotonic() + self._timeout
            self._set(card.tool_use_id, CommandPreviewState(card, deadline=deadline))
        elif isinstance(event, CommandPreviewSettled) and event.tool_use_id is not None:
            state = self._states.get(event.tool_use_id)
            if state is None:
                return
            status = "discarded" if event.outcome == "discarded" else (
                "failed" if event.text.startswith("partly applied") else "applied")
            message = event.text[:1].upper() + event.text[1:]
            self._set(event.tool_use_id, CommandPreviewState(state.card, status, message))

    def _set(self, tool_use_id: str, state: CommandPreviewState) -> None:
        self._states[tool_use_id] = state
        self.preview_changed.emit(tool_use_id, state)

    def decide(self, tool_use_id: str, action: str, reason: str = "") -> None:
        """Apply (``apply``, ``apply_anyway``: overwriting conflicts) or ``discard`` a preview."""
        state = self._states.get(tool_use_id)
        if state is None or not state.deciding:
            return
        if action == "discard":
            work = self._discard(tool_use_id, state, reason)
        else:
            work = self._apply(tool_use_id, state, force=action == "apply_anyway")
        self._tasks.start(work)

    async def _apply(self, tool_use_id: str, state: CommandPreviewState, *,
                     force: bool) -> None:
        # Loaded with the first apply, not by an idle window.
        from desktop_agent.session import PreviewApplyError, PreviewConflictError

        self._set(tool_use_id, CommandPreviewState(state.card, "applying",
                                                   deadline=state.deadline))
        try:
            await self._session.apply_preview(state.card.id, force=force)
        except PreviewConflictError as exc:
            self._set(tool_use_id, CommandPreviewState(state.card, "conflict", str(exc),
                                                       state.deadline))
        except PreviewApplyError:
            pass  # its settled event says what was applied
        except (SessionError, OSError) as exc:
            log.warning("a preview could not be applied: %s", exc)
            self._set(tool_use_id, CommandPreviewState(state.card, "failed", str(exc)))

    async def _discard(self, tool_use_id: str, state: CommandPreviewState,
                       reason: str) -> None:
        try:
            await self._session.discard_preview(state.card.id, reason)
        except SessionError as exc:
            self._set(tool_use_id, CommandPreviewState(state.card, "failed", str(exc)))

    async def cancel_all(self) -> None:
        """Wait for an apply under way (the conversation closes; discarding comes after)."""
        await self._tasks.wait()
