"""Events: pages of a conversation's log, and a Server-Sent Events stream of it.

The stream sends each event with its id (``id:`` line). A client that
reconnects with ``Last-Event-ID`` (or ``?after=``) continues right after the
last event it received: the stream reads the log by id, so nothing is lost or
sent twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Header, Query

from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import ErrorBody, EventOut, EventPage, EventType
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.live_stream import EventStream, LiveFollower
from desktop_agent.server.request_guard import Send

router = APIRouter(tags=["events"])

MAX_PAGE = 1000
KEEPALIVE_SECONDS = 15.0
"""A comment line goes out after this long without events, so proxies keep the stream open."""

KEEPALIVE_FRAME = b": keep-alive\n\n"

SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
"""No caching, and no buffering by a reverse proxy in front (nginx honours this header)."""

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such conversation."},
}


def _type_filter(types: list[EventType] | None) -> frozenset[str] | None:
    return frozenset(types) if types else None


@router.get("/conversations/{conversation_id}/events", response_model=EventPage,
            responses=NOT_FOUND)
async def list_events(
    conversation_id: str,
    after: int = Query(0, ge=0, le=2**62, description="Return events with a larger id."),
    limit: int = Query(100, ge=1, le=MAX_PAGE),
    types: list[EventType] | None = Query(None, description="Only these event types."),  # noqa: B008
    svc: AppServices = Depends(services),  # noqa: B008
) -> EventPage:
    """A page of events, oldest first; pass ``next_after`` as ``after`` for the next page."""
    await asyncio.to_thread(svc.conversation, conversation_id)
    events, next_after, has_more = await svc.events.page(conversation_id, after, limit,
                                                         _type_filter(types))
    return EventPage(
        events=[EventOut(**e.to_dict()) for e in events],
        next_after=next_after,
        has_more=has_more,
    )


@router.get(
    "/conversations/{conversation_id}/events/stream",
    responses={
        200: {"description": "A text/event-stream of events; each has an `id:` line.",
              "content": {"text/event-stream": {"schema": {"type": "string"}}}},
        **NOT_FOUND,
    },
)
async def stream_events(
    conversation_id: str,
    after: int | None = Query(None, ge=0, le=2**62,
                              description="Start after this id (instead of Last-Event-ID)."),
    types: list[EventType] | None = Query(None, description="Only these event types."),  # noqa: B008
    last_event_id: str | None = Header(None, alias="Last-Event-ID", max_length=30),
    svc: AppServices = Depends(services),  # noqa: B008
) -> EventStream:
    """Follow the conversation live; without a resume point the stream starts at the beginning.

    The stream's task catches up from the log; while it waits, the log's commit
    writes new events to the stream itself (:mod:`desktop_agent.server.live_stream`):
    one ``send`` per commit, without sse-starlette's per-event lock and send
    timeout; the keep-alive is a comment line sent when no event came for
    :data:`KEEPALIVE_SECONDS`.
    """
    await asyncio.to_thread(svc.conversation, conversation_id)
    start = after
    if last_event_id is not None and last_event_id.strip():
        try:
            start = int(last_event_id.strip())
        except ValueError:
            raise ApiError(400, "bad_last_event_id",
                           "Last-Event-ID must be the integer id of an event.") from None
        if start < 0:
            raise ApiError(400, "bad_last_event_id", "Last-Event-ID must not be negative.")
    wanted = _type_filter(types)

    async def follow(send: Send) -> None:
        follower = LiveFollower(conversation_id, start or 0, wanted, send)
        svc.events.live.add(follower)
        try:
            while True:
                # No refresh from disk per page: wait_live polls for other processes' events.
                events, _, _ = await svc.events.page(conversation_id, follower.cursor, 500,
                                                     refresh=False)
                # Everything already waiting goes out in one write.
                await follower.send(follower.frames(events))
                # Returns at once when more events are known; meanwhile commits write
                # the new events to the stream themselves (see live_stream).
                if not await svc.events.wait_live(follower, KEEPALIVE_SECONDS):
                    gone = await asyncio.to_thread(svc.store.get_conversation, conversation_id)
                    if gone is None:
                        return
                    await follower.send(KEEPALIVE_FRAME)
        finally:
            svc.events.live.remove(follower)

    return EventStream(follow, headers=SSE_HEADERS)
