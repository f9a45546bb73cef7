"""A conversation's slash commands (command files, MCP prompts) and skills."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends

from desktop_agent.core import errors
from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import ErrorBody
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.conversation_runner import as_http
from desktop_agent.server.mcp_models import (
    CompactionOut,
    ExpandRequest,
    ExpansionOut,
    SkillList,
    SkillOut,
    SlashCommandList,
    SlashCommandOut,
)
from desktop_agent.session import NoMcpServers, SessionError, UnknownCommand

router = APIRouter(tags=["commands"])

ANSWERS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation or command."},
    422: {"model": ErrorBody, "description": "Arguments that cannot be read, or a refusal."},
}


@router.get("/conversations/{conversation_id}/slash-commands",
            response_model=SlashCommandList, responses=ANSWERS)
async def list_commands(conversation_id: str,
                        svc: AppServices = Depends(services)) -> SlashCommandList:  # noqa: B008
    """What '/' offers: the built-ins REST runs, command files, then the MCP servers' prompts."""
    session = svc.runner(await asyncio.to_thread(svc.conversation, conversation_id)).session
    listed = await session.slash_commands(front="rest")
    _files, skipped = await asyncio.to_thread(session.custom_commands)
    return SlashCommandList(commands=[SlashCommandOut(**c.to_dict()) for c in listed],
                            skipped=skipped)


@router.post("/conversations/{conversation_id}/slash-commands/expand",
             response_model=ExpansionOut, responses=ANSWERS)
async def expand(conversation_id: str, body: ExpandRequest,
                 svc: AppServices = Depends(services)) -> ExpansionOut:  # noqa: B008
    """The message '/name arguments' becomes (show it, then send it with .../run)."""
    session = svc.runner(await asyncio.to_thread(svc.conversation, conversation_id)).session
    try:
        got = await session.expand_slash(body.text, body.values)
    except (UnknownCommand, NoMcpServers) as exc:
        raise ApiError(404, "unknown_command", str(exc)) from exc
    except ValueError as exc:
        raise ApiError(422, "invalid_arguments", str(exc)) from exc
    except errors.AgentError as exc:
        raise ApiError(422, "mcp_refused", errors.redact(str(exc))) from exc
    return ExpansionOut(**got.to_dict())


@router.get("/conversations/{conversation_id}/skills", response_model=SkillList,
            responses=ANSWERS)
async def list_skills(conversation_id: str,
                      svc: AppServices = Depends(services)) -> SkillList:  # noqa: B008
    """The skills found for the conversation (its folder's and the user's), on or off."""
    session = svc.runner(await asyncio.to_thread(svc.conversation, conversation_id)).session
    listing = await asyncio.to_thread(session.skill_listing)
    return SkillList(skills=[SkillOut(**s) for s in listing.to_dicts()],
                     skipped=list(listing.skipped), prompt_tokens=listing.prompt_tokens())


@router.post("/conversations/{conversation_id}/compact", response_model=CompactionOut,
             responses={**ANSWERS, 409: {"model": ErrorBody, "description": (
                 "A turn runs, nothing was answered yet, or compaction is off.")}})
async def compact(conversation_id: str,
                  svc: AppServices = Depends(services)) -> CompactionOut:  # noqa: B008
    """/compact: summarise all but the last exchange in what the model sees next.

    The history is kept whole; the summary is kept with the last reply (a
    'compaction' event is sent) and the next turns send it instead.
    """
    session = svc.runner(await asyncio.to_thread(svc.conversation, conversation_id)).session
    try:
        with as_http():
            block = await session.compact(svc.turn_calls)
    except SessionError as exc:  # the refusals as_http has no code for: compaction off
        raise ApiError(409, "compaction_off", str(exc)) from exc
    except errors.AgentError as exc:
        raise ApiError(422, "model_refused", errors.redact(str(exc))) from exc
    if block is None:
        return CompactionOut(compacted=False)
    return CompactionOut(compacted=True, messages=block.messages, mode=block.mode,
                         summary=block.summary, tokens_before=block.tokens_before,
                         tokens_after=block.tokens_after)
