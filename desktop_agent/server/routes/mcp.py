"""What a conversation's MCP servers offer (prompts, resources, completion) and ask.

A server's sampling request and form wait, like tool approvals, for an answer
here (``sampling_requested`` / ``elicitation_requested`` events announce them,
``server_question_resolved`` ends them); no answer within the approval timeout
denies the sampling and cancels the form.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Depends

from desktop_agent.core import errors
from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import ErrorBody
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.conversation_runner import ConversationRunner
from desktop_agent.server.mcp_models import (
    CompletionOut,
    CompletionRequest,
    ContentList,
    ContentOut,
    ElicitationReply,
    PromptList,
    PromptOut,
    PromptRequest,
    PromptTextOut,
    QuestionAnswered,
    ResourceList,
    ResourceOut,
    ResourceRead,
    SamplingAnswer,
    ServerQuestionList,
    TemplateOut,
    question_out,
)
from desktop_agent.session import NoMcpServers, UnknownQuestion

router = APIRouter(tags=["mcp"])

ANSWERS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation, server or question."},
    422: {"model": ErrorBody, "description": "The server refused, or the answer is invalid."},
}
BASE = "/conversations/{conversation_id}/mcp"


async def _runner(svc: AppServices, conversation_id: str) -> ConversationRunner:
    return svc.runner(await asyncio.to_thread(svc.conversation, conversation_id))


@contextlib.contextmanager
def _server_errors() -> Iterator[None]:
    """No server configured: 404; a server that refuses or fails: 422 with its reason."""
    try:
        yield
    except NoMcpServers as exc:
        raise ApiError(404, "no_mcp_servers", str(exc)) from exc
    except errors.AgentError as exc:
        raise ApiError(422, "mcp_refused", errors.redact(str(exc))) from exc


@router.get(BASE + "/prompts", response_model=PromptList, responses=ANSWERS)
async def list_prompts(conversation_id: str,
                       svc: AppServices = Depends(services)) -> PromptList:  # noqa: B008
    """The prompts of the MCP servers (offered after '/' as 'server:name')."""
    runner = await _runner(svc, conversation_id)
    return PromptList(prompts=[PromptOut(**p.to_dict())
                               for p in await runner.session.mcp_prompts()])


@router.post(BASE + "/prompts/{server}/{name}", response_model=PromptTextOut,
             responses=ANSWERS)
async def get_prompt(conversation_id: str, server: str, name: str,
                     body: PromptRequest | None = None,
                     svc: AppServices = Depends(services)) -> PromptTextOut:  # noqa: B008
    """A prompt's result as the message to send (cut, and said so, when huge)."""
    runner = await _runner(svc, conversation_id)
    with _server_errors():
        text = await runner.session.get_prompt(server, name,
                                               body.arguments if body is not None else {})
    return PromptTextOut(**text.to_dict())


@router.get(BASE + "/resources", response_model=ResourceList, responses=ANSWERS)
async def list_resources(conversation_id: str,
                         svc: AppServices = Depends(services)) -> ResourceList:  # noqa: B008
    """The resources and resource templates of the MCP servers."""
    runner = await _runner(svc, conversation_id)
    listed, templates = await runner.session.mcp_resources()
    return ResourceList(resources=[ResourceOut(**r.to_dict()) for r in listed],
                        templates=[TemplateOut(**t.to_dict()) for t in templates])


@router.post(BASE + "/resources/read", response_model=ContentList, responses=ANSWERS)
async def read_resource(conversation_id: str, body: ResourceRead,
                        svc: AppServices = Depends(services)) -> ContentList:  # noqa: B008
    """Read a resource to attach to a message; its changes are then followed."""
    runner = await _runner(svc, conversation_id)
    with _server_errors():
        contents = await runner.session.attach_resource(body.server, body.uri)
    return ContentList(contents=[ContentOut(**c.to_dict()) for c in contents])


@router.post(BASE + "/complete", response_model=CompletionOut, responses=ANSWERS)
async def complete(conversation_id: str, body: CompletionRequest,
                   svc: AppServices = Depends(services)) -> CompletionOut:  # noqa: B008
    """Suggestions for an argument of a prompt or a resource template."""
    runner = await _runner(svc, conversation_id)
    with _server_errors():
        values = await runner.session.complete_argument(
            body.server, (body.ref_type, body.ref), body.argument, body.value, body.context)
    return CompletionOut(values=values)


@router.get(BASE + "/questions", response_model=ServerQuestionList, responses=ANSWERS)
async def list_questions(conversation_id: str,
                         svc: AppServices = Depends(services)) -> ServerQuestionList:  # noqa: B008
    """Sampling requests and forms waiting for an answer."""
    runner = await _runner(svc, conversation_id)
    return ServerQuestionList(questions=[question_out(q.to_dict())
                                         for q in runner.session.server_questions()])


@router.post(BASE + "/questions/{question_id}/sampling", response_model=QuestionAnswered,
             responses=ANSWERS)
async def answer_sampling(conversation_id: str, question_id: str, body: SamplingAnswer,
                          svc: AppServices = Depends(services)) -> QuestionAnswered:  # noqa: B008
    """Allow once, allow for this server (this conversation, while the server runs), or deny."""
    runner = await _runner(svc, conversation_id)
    try:
        runner.session.answer_sampling(question_id, body.choice)
    except UnknownQuestion as exc:
        raise ApiError(404, "not_found", str(exc)) from exc
    return QuestionAnswered(id=question_id, answer=body.choice)


@router.post(BASE + "/questions/{question_id}/elicitation", response_model=QuestionAnswered,
             responses=ANSWERS)
async def answer_elicitation(conversation_id: str, question_id: str, body: ElicitationReply,
                             svc: AppServices = Depends(services),  # noqa: B008
                             ) -> QuestionAnswered:
    """Accept (with the form's values, checked against it), decline or cancel a form."""
    runner = await _runner(svc, conversation_id)
    try:
        runner.session.answer_elicitation(question_id, body.action, body.content)
    except UnknownQuestion as exc:
        raise ApiError(404, "not_found", str(exc)) from exc
    except ValueError as exc:
        raise ApiError(422, "invalid_answer", str(exc)) from exc
    return QuestionAnswered(id=question_id, answer=body.action)
