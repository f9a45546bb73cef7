"""Tool-approval requests waiting for a person, shared by every conversation.

A conversation's controller puts an :class:`ApprovalRequest` in the queue and
awaits its future; the approval dock shows the queue and resolves a request
when the person clicks. The controller decides what an answer means (rules,
remembered approvals); the queue only carries requests and their state.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from desktop_agent.session import EXIT_PLAN_TOOL, ApprovalAnswer, ApprovalChoice

if TYPE_CHECKING:
    from desktop_agent.session import ChangePreview

__all__ = ["ApprovalChoice", "ApprovalDecision", "ApprovalQueue", "ApprovalRequest",
           "RequestState"]


class RequestState(enum.Enum):
    """Where a request is in its life."""

    PENDING = "pending"
    ANSWERED = "answered"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


# The answers and their meaning are the session's; the dock only carries them.
ApprovalDecision = ApprovalAnswer


_ids = itertools.count(1)


@dataclass(eq=False)
class ApprovalRequest:
    """One tool call waiting for a person.

    Attributes:
        conversation_id: The conversation the call belongs to.
        conversation_title: Its title when the request was made.
        tool_name: The tool the model wants to run.
        tool_input: The model's arguments.
        tool_use_id: The call's id.
        description: The tool's description.
        source: Where the tool comes from (``builtin`` or an MCP server).
        read_only: Whether the tool says it changes nothing.
        unsandboxed: The call would run with the account's full rights (no OS
            sandbox): the dock says so, and offers no remembered approval.
        timeout: Seconds before the request is denied automatically (None: never).
        preview: For ``write_file``/``edit_file``: the session's ChangePreview (the
            diff the call would make, or why it would fail).
        previewer: Works out the preview again for edited arguments (None: not offered).
        agent: The subagent whose call it is (None: the conversation's own agent).
        edited_input: The person's edit of the arguments, not yet answered (None:
            the model's run). One for the request, whether made on its card or in
            the dock: an answer in either place runs it.
        can_preview: A command that may run on an overlay first (*Preview* on its card).
    """

    conversation_id: str
    conversation_title: str
    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    description: str = ""
    source: str | None = None
    read_only: bool = False
    timeout: float | None = None
    unsandboxed: bool = False
    preview: ChangePreview | None = None
    previewer: Callable[[dict[str, Any]], Awaitable[ChangePreview | None]] | None = None
    agent: str | None = None
    edited_input: dict[str, Any] | None = None
    can_preview: bool = False
    number: int = field(default_factory=lambda: next(_ids))
    created: float = field(default_factory=time.monotonic)
    state: RequestState = RequestState.PENDING
    future: asyncio.Future[ApprovalDecision] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def deadline(self) -> float | None:
        """``time.monotonic()`` value at which the request expires."""
        return None if self.timeout is None else self.created + self.timeout

    @property
    def can_remember(self) -> bool:
        """Whether "allow for this conversation" and "always allow" may be offered."""
        return not self.unsandboxed

    @property
    def is_plan(self) -> bool:
        """Whether this is a plan handed in from plan mode (approving it switches the mode)."""
        return self.tool_name == EXIT_PLAN_TOOL

    @property
    def pending(self) -> bool:
        """Whether the request still waits for an answer."""
        return self.state is RequestState.PENDING


class ApprovalQueue(QObject):
    """Requests from all conversations, in arrival order.

    Signals:
        added(object): A new :class:`ApprovalRequest` waits.
        changed(object): A request was answered, expired or cancelled.
        preview_changed(object): A request's diff was worked out again (its
            arguments were edited in the dock); its card shows the new one too.
        input_edited(object): A request's arguments were edited (on its card or in
            the dock); the other place shows the edit too.
        pending_count_changed(str, int): conversation id, its pending requests.
    """

    added = Signal(object)
    changed = Signal(object)
    preview_changed = Signal(object)
    input_edited = Signal(object)
    pending_count_changed = Signal(str, int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._requests: list[ApprovalRequest] = []

    def requests(self) -> list[ApprovalRequest]:
        """All requests still listed (pending first in arrival order, then finished)."""
        return list(self._requests)

    def pending(self, conversation_id: str | None = None) -> list[ApprovalRequest]:
        """Pending requests, optionally of one conversation."""
        return [r for r in self._requests if r.pending and (
            conversation_id is None or r.conversation_id == conversation_id)]

    def submit(self, request: ApprovalRequest) -> None:
        """List a new request; the dock shows it."""
        self._requests.append(request)
        self.added.emit(request)
        self._count_changed(request.conversation_id)

    def answer(self, request: ApprovalRequest, decision: ApprovalDecision) -> bool:
        """Resolve a pending request with the person's decision (False if too late)."""
        if not request.pending or request.future.done():
            return False
        request.state = RequestState.ANSWERED
        request.future.set_result(decision)
        self.discard(request)
        return True

    def edit(self, request: ApprovalRequest, arguments: dict[str, Any]) -> None:
        """Keep the person's edit of a pending request's arguments (its answer runs them)."""
        if not request.pending:
            return
        edited = None if arguments == request.tool_input else dict(arguments)
        if edited == request.edited_input:
            return
        request.edited_input = edited
        self.input_edited.emit(request)

    def set_preview(self, request: ApprovalRequest, preview: ChangePreview) -> None:
        """Give a pending request the diff of its edited arguments (dock and card show it)."""
        if not request.pending:
            return
        request.preview = preview
        self.preview_changed.emit(request)

    def expire(self, request: ApprovalRequest) -> None:
        """Mark a request as denied by timeout; it stays listed so the person sees it."""
        if request.pending:
            request.state = RequestState.EXPIRED
            if not request.future.done():
                request.future.cancel()
            self.changed.emit(request)
            self._count_changed(request.conversation_id)

    def cancel(self, request: ApprovalRequest) -> None:
        """Withdraw a request (its conversation closed or its turn stopped)."""
        if request.pending:
            request.state = RequestState.CANCELLED
            if not request.future.done():
                request.future.cancel()
        self.discard(request)

    def cancel_conversation(self, conversation_id: str) -> None:
        """Withdraw every request of one conversation (deny them)."""
        for request in [r for r in self._requests if r.conversation_id == conversation_id]:
            self.cancel(request)

    def discard(self, request: ApprovalRequest) -> None:
        """Remove a finished request from the list."""
        if request in self._requests:
            self._requests.remove(request)
        self.changed.emit(request)
        self._count_changed(request.conversation_id)

    def _count_changed(self, conversation_id: str) -> None:
        self.pending_count_changed.emit(conversation_id, len(self.pending(conversation_id)))
