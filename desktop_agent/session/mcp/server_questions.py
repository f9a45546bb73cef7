"""An MCP server's questions to one conversation: run the model (sampling), fill a form.

Shown like tool approvals, and answered the same way by either front end: the
session reports :class:`~desktop_agent.session.events.SamplingAsked` or
:class:`~desktop_agent.session.events.ElicitationAsked` and waits for
:meth:`ServerQuestions.answer_sampling` / :meth:`ServerQuestions.answer_elicitation`
(the window's cards, the REST routes). The rules:

- Sampling: *Allow once*, *Allow for this server* (the rest of the
  conversation's life in this process) or *Deny*. No answer within the
  approval timeout, a stopped turn or a closed tab deny it.
- Elicitation: *Accept* (the values are checked against the form's limits
  first), *Decline* or *Cancel*. No answer within the timeout, a stopped turn
  or a closed tab answer *cancel*, so the server never hangs.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.tooling.mcp.elicitation_form import check_answer
from desktop_agent.core.tooling.mcp.server_requests import (
    ElicitationAnswer,
    ElicitationRequest,
    SamplingReply,
    SamplingRequest,
    ServerRequestRefused,
)
from desktop_agent.session.errors import SessionError
from desktop_agent.session.events import (
    ElicitationAsked,
    SamplingAsked,
    ServerQuestionSettled,
    SessionEvent,
)
from desktop_agent.session.mcp.server_question import SamplingChoice, ServerQuestion

log = logging.getLogger("desktop_agent.session.mcp")

_ids = itertools.count(1)


@dataclass
class _Open:
    question: ServerQuestion
    future: asyncio.Future[Any]


class UnknownQuestion(SessionError):
    """No such question is open (answered already, expired, or never asked)."""


@dataclass
class ServerQuestions:
    """The open server questions of one conversation, and the answers that settle them.

    Args:
        emit: Reports session events.
        timeout: Seconds a question waits (the approval timeout); None: as long as it takes.

    Attributes:
        allowed_servers: Servers whose sampling runs without asking (*Allow for this server*).
    """

    emit: Callable[[SessionEvent], None]
    timeout: float | None
    allowed_servers: set[str] = field(default_factory=set)
    _open: dict[str, _Open] = field(default_factory=dict)

    def pending(self) -> list[ServerQuestion]:
        """The open questions, oldest first."""
        return [o.question for o in self._open.values() if not o.future.done()]

    async def _wait(self, question: ServerQuestion, event: SessionEvent) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._open[question.id] = _Open(question, future)
        self.emit(event)
        try:
            return await asyncio.wait_for(future, self.timeout)
        finally:
            self._open.pop(question.id, None)

    async def sampling(self, request: SamplingRequest,
                       run: Callable[[SamplingRequest], Awaitable[SamplingReply]],
                       ) -> SamplingReply:
        """Ask (unless the server is allowed), then ``run`` the request on the model.

        Raises:
            ServerRequestRefused: Denied, expired, or withdrawn.
        """
        if request.server not in self.allowed_servers:
            question = ServerQuestion(f"s{next(_ids)}", "sampling", request, self.timeout)
            try:
                choice = await self._wait(question, SamplingAsked(question))
            except TimeoutError:
                self.emit(ServerQuestionSettled(question.id, "expired"))
                raise ServerRequestRefused(
                    f"No one answered within {self.timeout:g} s, so the model was not "
                    "asked.") from None
            except asyncio.CancelledError:
                self.emit(ServerQuestionSettled(question.id, "withdrawn"))
                raise ServerRequestRefused("The conversation stopped before anyone "
                                           "answered.") from None
            if choice is SamplingChoice.DENY:
                raise ServerRequestRefused("The person denied the request.")
            if choice is SamplingChoice.ALLOW_SERVER:
                self.allowed_servers.add(request.server)
        return await run(request)

    async def elicitation(self, request: ElicitationRequest) -> ElicitationAnswer:
        """Show the form (or link) and wait; no answer in time or a stop answers *cancel*."""
        question = ServerQuestion(f"e{next(_ids)}", "elicitation", request, self.timeout)
        try:
            answer: ElicitationAnswer = await self._wait(question, ElicitationAsked(question))
        except TimeoutError:
            self.emit(ServerQuestionSettled(question.id, "expired"))
            return ElicitationAnswer("cancel")
        except asyncio.CancelledError:
            self.emit(ServerQuestionSettled(question.id, "withdrawn"))
            return ElicitationAnswer("cancel")
        return answer

    def _take(self, question_id: str, kind: str) -> _Open:
        found = self._open.get(question_id)
        if found is None or found.future.done() or found.question.kind != kind:
            raise UnknownQuestion(f"No {kind} request {question_id!r} is waiting.")
        return found

    def answer_sampling(self, question_id: str, choice: SamplingChoice | str) -> None:
        """Answer a sampling request.

        Raises:
            UnknownQuestion: None such is open.
            ValueError: ``choice`` is not one of :class:`SamplingChoice`.
        """
        found = self._take(question_id, "sampling")
        found.future.set_result(SamplingChoice(choice))
        self.emit(ServerQuestionSettled(question_id, SamplingChoice(choice).value))

    def answer_elicitation(self, question_id: str, action: str,
                           content: Mapping[str, Any] | None = None) -> None:
        """Answer a form: ``accept`` (with values, checked), ``decline`` or ``cancel``.

        Raises:
            UnknownQuestion: None such is open.
            ValueError: An unknown action, or values that break the form's limits
                (the message is a sentence for the person; the question stays open).
        """
        found = self._take(question_id, "elicitation")
        if action not in ("accept", "decline", "cancel"):
            raise ValueError(f"{action!r} is not an answer; use accept, decline or cancel")
        values = None
        request = found.question.request
        if action == "accept" and isinstance(request, ElicitationRequest) \
                and request.mode == "form":
            values = check_answer(request.fields, dict(content or {}))
        found.future.set_result(ElicitationAnswer(action, values))  # type: ignore[arg-type]
        self.emit(ServerQuestionSettled(question_id, action))

    def withdraw_all(self) -> None:
        """The turn stopped or the tab closed: deny or cancel every open question."""
        for found in list(self._open.values()):
            if not found.future.done():
                found.future.cancel()
