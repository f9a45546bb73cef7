"""HTTP callbacks: register and remove URLs that receive a conversation's events.

With ``serve --database`` a callback registered or removed through any replica is
one for all of them (:mod:`desktop_agent.server.callbacks`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Response, status

from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import CallbackCreate, CallbackList, CallbackOut, ErrorBody
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.callbacks import Callback

router = APIRouter(tags=["callbacks"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation or callback."},
}
MAX_CALLBACKS = 20


def callback_out(callback: Callback) -> CallbackOut:
    return CallbackOut(
        id=callback.id, url=callback.url,
        event_types=sorted(callback.event_types) if callback.event_types is not None else None,  # type: ignore[arg-type]
        delivered=callback.delivered, failed=callback.failed,
        pending=callback.queue.qsize(), last_error=callback.last_error,
    )


@router.post("/conversations/{conversation_id}/callbacks", status_code=status.HTTP_201_CREATED,
             response_model=CallbackOut, responses=NOT_FOUND)
async def add_callback(conversation_id: str, body: CallbackCreate,
                       svc: AppServices = Depends(services)) -> CallbackOut:  # noqa: B008
    """POST every future event (of the chosen types) to ``url`` as JSON, with retries."""
    await asyncio.to_thread(svc.conversation, conversation_id)
    await svc.callbacks.synced(conversation_id)  # those other replicas registered too
    if len(svc.callbacks.list(conversation_id)) >= MAX_CALLBACKS:
        raise ApiError(409, "too_many_callbacks",
                       f"A conversation can have at most {MAX_CALLBACKS} callbacks.")
    callback = await svc.callbacks.register(conversation_id, body.url, body.event_types)
    return callback_out(callback)


@router.get("/conversations/{conversation_id}/callbacks", response_model=CallbackList,
            responses=NOT_FOUND)
async def list_callbacks(conversation_id: str,
                         svc: AppServices = Depends(services)) -> CallbackList:  # noqa: B008
    """Registered callbacks with their delivery figures."""
    await asyncio.to_thread(svc.conversation, conversation_id)
    await svc.callbacks.synced(conversation_id)
    return CallbackList(callbacks=[callback_out(c) for c in svc.callbacks.list(conversation_id)])


@router.delete("/conversations/{conversation_id}/callbacks/{callback_id}",
               status_code=status.HTTP_204_NO_CONTENT, response_class=Response,
               responses=NOT_FOUND)
async def remove_callback(conversation_id: str, callback_id: str,
                          svc: AppServices = Depends(services)) -> Response:  # noqa: B008
    """Stop posting to a callback; events not yet delivered are dropped."""
    await asyncio.to_thread(svc.conversation, conversation_id)
    if not await svc.callbacks.remove(conversation_id, callback_id):
        raise ApiError(404, "not_found", f"No callback with id {callback_id!r}.")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
