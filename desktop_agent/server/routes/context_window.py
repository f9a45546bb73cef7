"""A conversation's model: the context window its server applies, and the one-click fix.

What the window's banner and Conversation settings show, for a script: the
window the server runs the model with (not the length it was trained for),
where that figure came from, and, once a turn was checked, what the
conversation needs and the warning with its fix. The same check streams as
``context_window`` events before each turn; a prompt the server cut without
an error as ``prompt_cut``. On Ollama the fix can be done here: a copy of the
model with a larger ``num_ctx``, and the conversation switched to it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from desktop_agent.core import errors
from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.routes.conversations import NOT_FOUND
from desktop_agent.session import SessionError, context_window_for

router = APIRouter(tags=["conversations"])


class ContextWindowOut(BaseModel):
    """The window the conversation's server applies to its model."""

    model: str | None = None
    applied: int | None = Field(default=None, description="Tokens per request (prompt and "
                                "reply) the server runs the model with; null when unknown.")
    trained: int | None = Field(default=None, description="What the model was trained for, "
                                "where the server says.")
    source: str | None = Field(default=None, description="Where 'applied' came from, e.g. "
                               "'Ollama /api/ps (loaded)' or 'learned from a cut prompt'.")
    server: str | None = Field(default=None, description="Ollama, LM Studio, llama.cpp, vLLM, "
                               "LiteLLM; null when none of them answered.")
    assumed: bool = Field(default=False, description="Whether 'applied' is a default the "
                          "server is believed to use rather than a figure it reported.")
    last_check: dict[str, Any] | None = Field(
        default=None, description="The check before the last turn (as the context_window "
        "event): needed, fixed, short, warning and fix; null before any turn here.")


class LargerWindowIn(BaseModel):
    """The window to give the model (the check's ``fix.tokens``)."""

    tokens: int = Field(ge=512, le=10_000_000)


class LargerWindowOut(BaseModel):
    """The model made and now used by the conversation."""

    model: str


@router.get("/conversations/{conversation_id}/context-window",
            response_model=ContextWindowOut, responses=NOT_FOUND)
async def context_window(conversation_id: str,
                         svc: AppServices = Depends(services),  # noqa: B008
                         ) -> ContextWindowOut:
    """The window the server applies to the conversation's model, and where the figure came from."""
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    settings = dict(record.settings or {})
    window = await context_window_for(settings)
    runner = svc.runners.peek(record.id)
    out = ContextWindowOut(model=settings.get("model"),
                           last_check=runner.last_context_check if runner else None)
    if window is not None:
        out = out.model_copy(update={"applied": window.applied, "trained": window.trained,
                                     "source": window.source, "server": window.server,
                                     "assumed": window.assumed})
    return out


@router.post("/conversations/{conversation_id}/context-window/larger",
             response_model=LargerWindowOut, responses=NOT_FOUND)
async def make_larger_window(conversation_id: str, body: LargerWindowIn,
                             svc: AppServices = Depends(services),  # noqa: B008
                             ) -> LargerWindowOut:
    """On Ollama: make a copy of the model that runs with ``tokens`` and switch to it.

    409 on other servers (the check's warning names the setting to change there);
    502 when Ollama refuses or cannot be reached.
    """
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    runner = svc.runner(record)
    try:
        made = await runner.session.make_larger_window(body.tokens, svc.turn_calls)
    except SessionError as exc:
        raise ApiError(409, "not_ollama", str(exc)) from exc
    except errors.APIError as exc:
        raise ApiError(502, "server_refused", errors.redact(str(exc))) from exc
    svc.events.append(conversation_id, "settings", {"changed": ["context_length", "model"],
                                                    "title_changed": False})
    return LargerWindowOut(model=made)
