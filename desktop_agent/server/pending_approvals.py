"""The REST server's side of tool approval: questions wait as pending approvals.

The decisions (confirmation mode, remembered approvals, the one timeout,
what an answer means) are the session's
:class:`~desktop_agent.session.approvals.approval_broker.ApprovalBroker`. This adapter parks
each broker question as a Future that the approve and reject routes resolve,
and lists the open ones for ``GET .../approvals``.

This in-memory class serves SQLite, the same code path as before replicas
existed, kept as a short cut on purpose: one ``serve`` per data folder answers
the questions of the turns it runs, so a question never needs to leave the
process, and answering costs no database write and no wait for a
notification (SQLite has no way to push one; a second ``serve`` on the same
file answers only its own turns' questions, as it always did). Several
replicas on PostgreSQL use
:class:`~desktop_agent.server.shared_approvals.SharedApprovals`, which keeps the
same Futures and adds a row per question that any replica can answer; the
routes and the runner call the same methods on both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from desktop_agent.session import ApprovalAnswer, QuestionWithdrawn, ToolCallQuestion

Answered = Callable[[str, ApprovalAnswer], None]
"""Told ``(tool use id, answer)`` when an answer reaches the waiting turn."""


@dataclass
class PendingApproval:
    """One call waiting for a decision."""

    tool_use_id: str
    question: ToolCallQuestion
    future: asyncio.Future[ApprovalAnswer]
    requested_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The shape of ``ApprovalOut`` and of the ``approval_requested`` event."""
        context = self.question.context
        return {
            "tool_use_id": self.tool_use_id,
            "tool_name": self.question.tool_name,
            "input": self.question.tool_input,
            "read_only": context.read_only,
            "source": context.source,
            "description": context.description,
            "requested_at": self.requested_at,
            "unsandboxed": context.unsandboxed,
            "agent": context.agent,
            "diff": None if self.question.preview is None else self.question.preview.to_dict(),
            "can_preview": self.question.can_preview,
        }


def was_withdrawn(pending: PendingApproval) -> bool:
    """Whether a wait ended because the question was closed, not the turn's task cancelled.

    Closing a question cancels its future; cancelling the task (Stop, shutdown)
    must still propagate as a cancellation.
    """
    task = asyncio.current_task()
    return pending.future.cancelled() and not (task and task.cancelling())


class PendingApprovals:
    """The open questions of one conversation, by tool call id; the broker's asker.

    Attributes:
        shared: False: questions live in this process only (see the module docstring).

    Args:
        on_open: Told about each new pending approval.
        on_answered: Told when an answer resolves a question (the event log's
            ``approval_resolved``), right after the turn is handed the answer.
    """

    shared = False

    def __init__(self, on_open: Callable[[PendingApproval], None] = lambda _p: None,
                 on_answered: Answered = lambda _i, _a: None) -> None:
        self._open: dict[str, PendingApproval] = {}
        self._on_open = on_open
        self._on_answered = on_answered

    async def __call__(self, question: ToolCallQuestion) -> ApprovalAnswer:
        """Park a question until a route answers it."""
        pending = PendingApproval(question.context.tool_use_id, question,
                                  asyncio.get_running_loop().create_future())
        self._open[pending.tool_use_id] = pending
        self._on_open(pending)
        try:
            return await pending.future
        except asyncio.CancelledError:
            if was_withdrawn(pending):
                raise QuestionWithdrawn from None
            raise
        finally:
            self._open.pop(pending.tool_use_id, None)

    def get(self, tool_use_id: str) -> PendingApproval | None:
        """An open request, or None."""
        pending = self._open.get(tool_use_id)
        if pending is None or pending.future.done():
            return None
        return pending

    def all(self) -> list[PendingApproval]:
        """Open requests, oldest first."""
        return [p for p in self._open.values() if not p.future.done()]

    def resolve(self, tool_use_id: str, answer: ApprovalAnswer) -> bool:
        """Hand an answer to the waiting turn; False when there is no such open request."""
        pending = self.get(tool_use_id)
        if pending is None:
            return False
        pending.future.set_result(answer)
        self._on_answered(tool_use_id, answer)
        return True

    async def answer(self, tool_use_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a request (the approve and reject routes); False when none is open."""
        return self.resolve(tool_use_id, answer)

    async def listed(self) -> list[dict[str, Any]]:
        """The open requests in the shape of ``ApprovalOut``, oldest first."""
        return [pending.to_dict() for pending in self.all()]

    def withdraw_all(self) -> None:
        """Withdraw every open request (the turn is being stopped): each is denied."""
        for pending in self.all():
            pending.future.cancel()
