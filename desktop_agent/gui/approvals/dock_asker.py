"""The window's side of tool approval: questions go to the approval dock.

The decisions themselves (confirmation mode, remembered approvals, the one
timeout, what an answer means) are the session's
:class:`~desktop_agent.session.approvals.approval_broker.ApprovalBroker`; this adapter only
turns a broker question into an :class:`ApprovalRequest` in the window's
shared queue, awaits the person's answer, and marks the request expired or
withdrawn when the broker gives up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.gui.approvals.approval_queue import ApprovalQueue, ApprovalRequest, RequestState
from desktop_agent.session import ApprovalAnswer, Decision, QuestionWithdrawn, ToolCallQuestion

if TYPE_CHECKING:
    from desktop_agent.session import ChangePreview


class DockAsker:
    """Shows a conversation's questions in the approval dock.

    Args:
        queue: The window's shared approval queue.
        title: Returns the conversation's current title.
        on_request: Told about each new request (for notifications).
        previewer: Works out a file call's diff for edited arguments (tool name, input).
    """

    def __init__(self, queue: ApprovalQueue, title: Callable[[], str],
                 on_request: Callable[[ApprovalRequest], None],
                 previewer: Callable[[str, dict[str, Any]],
                                     Awaitable[ChangePreview | None]] | None = None) -> None:
        self._queue = queue
        self._previewer = previewer
        self._title = title
        self._on_request = on_request
        self._open: dict[str, ApprovalRequest] = {}

    async def __call__(self, question: ToolCallQuestion) -> ApprovalAnswer:
        """The broker's :data:`~desktop_agent.session.approvals.approval_broker.Asker`."""
        context = question.context
        request = ApprovalRequest(
            conversation_id=question.conversation_id, conversation_title=self._title(),
            tool_name=question.tool_name, tool_input=dict(question.tool_input),
            tool_use_id=context.tool_use_id, description=context.description,
            source=context.source, read_only=context.read_only, timeout=question.timeout,
            unsandboxed=context.unsandboxed, preview=question.preview,
            can_preview=question.can_preview, agent=context.agent)
        previewer = self._previewer
        if question.preview is not None and previewer is not None:
            name = question.tool_name
            request.previewer = lambda arguments: previewer(name, arguments)
        self._open[context.tool_use_id] = request
        self._queue.submit(request)
        self._on_request(request)
        try:
            answer = await asyncio.shield(request.future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if request.state is RequestState.CANCELLED and not (task and task.cancelling()):
                self._open.pop(context.tool_use_id, None)
                raise QuestionWithdrawn from None
            raise
        self._open.pop(context.tool_use_id, None)
        return answer

    def settled(self, tool_use_id: str, record: dict[str, Any]) -> None:
        """The broker gave up on a question: show it expired, or withdraw it."""
        request = self._open.pop(tool_use_id, None)
        if request is None:
            return
        if record.get("decision") == Decision.EXPIRED:
            self._queue.expire(request)
        else:
            self._queue.cancel(request)
