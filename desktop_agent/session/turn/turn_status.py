"""What a session is doing now, as its listeners hear it, and when it was last used.

Kept apart from the turn runner because two parts move it: the runner (a turn
starts, is interrupted, ends) and the approval broker's asker (a question
waits for a person, then the turn goes on). Each change is reported once, as
:class:`StateChanged`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from desktop_agent.session.events import (
    ApprovalAsked,
    Outcome,
    RunState,
    SessionEvent,
    StateChanged,
)

if TYPE_CHECKING:
    from desktop_agent.session.approvals.approval_broker import (
        ApprovalAnswer,
        Asker,
        ToolCallQuestion,
    )


class TurnStatus:
    """The session's run state.

    Args:
        emit: Reports session events.

    Attributes:
        state: ``idle``, ``running``, ``waiting_approval`` or ``interrupting``.
        last_used: ``time.monotonic()`` of the last action (for idle eviction).
    """

    def __init__(self, emit: Callable[[SessionEvent], None]) -> None:
        self._emit = emit
        self.state: RunState = "idle"
        self.last_used = time.monotonic()
        self._waiting = 0

    def set(self, state: RunState, outcome: Outcome | None = None) -> None:
        """Move to ``state`` (with the turn's ``outcome`` when it ended) and report it."""
        if state == self.state and outcome is None:
            return
        self.state = state
        self._emit(StateChanged(state, outcome))

    def touch(self) -> None:
        """The session was used now."""
        self.last_used = time.monotonic()

    def ended(self, outcome: Outcome, *, report: bool) -> None:
        """A turn ended: no question waits any more; idle, said when ``report``."""
        self._waiting = 0
        self.touch()
        if report:
            self.set("idle", outcome)

    async def asked(self, question: ToolCallQuestion, ask: Asker) -> ApprovalAnswer:
        """Report the question and the state, then ask the front end with ``ask``."""
        self._emit(ApprovalAsked(question))
        self._waiting += 1
        self.set("waiting_approval")
        try:
            return await ask(question)
        finally:
            self._waiting -= 1
            if self._waiting <= 0 and self.state == "waiting_approval":
                self.set("running")
