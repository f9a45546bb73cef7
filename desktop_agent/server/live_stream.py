"""An SSE stream the event log writes to straight from its commit.

A stream that waits for news used to be woken by the commit (a future set on
the loop) and then send the new events in its own task step. Under load that
step queued behind every turn step ready by then (a burst of the model's
pieces for 50 replies): about half of an event's time in the server, measured
with ``bench/server_load.py --pin-server``, was that wait. Now the event
log's commit callback writes the frames itself to each stream that waits and
is caught up (:meth:`LiveFollower.push`), one write per commit per stream;
the stream's own task only catches up (from memory or the store), sends
keep-alives and ends the stream.

ASGI's ``send`` is a coroutine function: the commit callback runs it at once
(:func:`run_now`) and it returns without suspending unless the client reads
too slowly (the server's flow control). Then what is left runs as a task and
the stream's task waits for it before it sends again, so frames never
overtake each other. The stream's position (:attr:`LiveFollower.cursor`)
moves only when its frames are handed to ``send``: ids stay the only truth,
so ``Last-Event-ID`` resumes as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from starlette.responses import Response

from .event_record import Event
from .request_guard import Receive, Scope, Send

BODY = "http.response.body"


def run_now(awaitable: Awaitable[None]) -> asyncio.Future[None] | None:
    """Run a coroutine until it first suspends; None when it finished, else its rest as a task.

    Exceptions it raises before suspending propagate to the caller. Any other
    awaitable is simply scheduled.
    """
    if not isinstance(awaitable, Coroutine):
        return asyncio.ensure_future(awaitable)
    coro = awaitable
    try:
        yielded = coro.send(None)
    except StopIteration:
        return None
    return asyncio.ensure_future(_Rest(coro, yielded))


class _Rest:
    """The rest of a coroutine that suspended on ``yielded`` (an asyncio future)."""

    def __init__(self, coro: Coroutine[Any, Any, None], yielded: Any) -> None:
        self._coro = coro
        self._yielded = yielded

    def __await__(self) -> Generator[Any, Any, None]:
        coro, yielded = self._coro, self._yielded
        while True:
            try:
                sent = yield yielded
            except BaseException as exc:  # noqa: BLE001 - thrown in (a cancellation): the coroutine's
                try:
                    yielded = coro.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration:
                    return


class LiveFollower:
    """One SSE stream of one conversation, as the event log sees it.

    Attributes:
        conversation_id: The conversation followed.
        cursor: The id of the last event handed to ``send`` (or skipped by the filter).
        waiting: The stream's task is parked waiting for news, so the commit may
            write to it (never while the task sends or catches up itself).
        sending: A write the commit started that had to wait for the client.
        failed: What a write from the commit raised (the stream ends with it).
        woken: Set when the stream's task must look again (events it was not
            given, a write that waits, an error).
    """

    __slots__ = ("_send", "conversation_id", "cursor", "failed", "sending", "waiting",
                 "wanted", "woken")

    def __init__(self, conversation_id: str, cursor: int, wanted: frozenset[str] | None,
                 send: Send) -> None:
        self.conversation_id = conversation_id
        self.cursor = cursor
        self.wanted = wanted
        self._send = send
        self.waiting = False
        self.sending: asyncio.Future[None] | None = None
        self.failed: BaseException | None = None
        self.woken: asyncio.Future[bool] | None = None

    def frames(self, events: list[Event]) -> bytes:
        """The frames of the wanted ``events``; the cursor moves past all of them."""
        wanted = self.wanted
        chosen = [event.sse_frame() for event in events
                  if wanted is None or event.type in wanted]
        for event in events:
            self.cursor = event.id
        return b"".join(chosen)

    def push(self, events: list[Event]) -> bool:
        """The commit's write of ``events`` (the ones after :attr:`cursor`); False: wake the task.

        Only called while the task waits and nothing is being sent.
        """
        body = self.frames(events)
        if not body:
            return True
        try:
            self.sending = run_now(self._send({"type": BODY, "body": body, "more_body": True}))
        except Exception as exc:  # noqa: BLE001 - what send raises ends the stream, in its task
            self.failed = exc
            return False
        return self.sending is None

    def wake(self, by_commit: bool = True) -> None:
        """Let the stream's task look again."""
        woken = self.woken
        if woken is not None and not woken.done():
            woken.set_result(by_commit)

    async def send(self, body: bytes) -> None:
        """The task's own write, after any write the commit started."""
        if self.sending is not None:
            sending, self.sending = self.sending, None
            await sending
        if self.failed is not None:
            raise self.failed
        if body:
            await self._send({"type": BODY, "body": body, "more_body": True})


class LiveFollowers:
    """The streams of each conversation that commits write to."""

    def __init__(self) -> None:
        self._followers: dict[str, list[LiveFollower]] = {}

    def __contains__(self, conversation_id: object) -> bool:
        """A stream follows the conversation (read by the store's thread too: one lookup)."""
        return conversation_id in self._followers

    def add(self, follower: LiveFollower) -> None:
        """Let commits write to ``follower``'s stream while its task waits."""
        self._followers.setdefault(follower.conversation_id, []).append(follower)

    def remove(self, follower: LiveFollower) -> None:
        """The stream ended."""
        followers = self._followers.get(follower.conversation_id)
        if followers is not None and follower in followers:
            followers.remove(follower)
            if not followers:
                del self._followers[follower.conversation_id]

    def wake(self, conversation_id: str) -> None:
        """Let every stream's task of the conversation look again."""
        for follower in self._followers.get(conversation_id, ()):
            follower.wake()

    def push(self, conversation_id: str, newest: int,
             held_after: Callable[[int], list[Event] | None]) -> None:
        """A commit: write its events to the conversation's waiting streams; wake the rest.

        ``held_after(cursor)``: the committed events after ``cursor`` held in
        memory (None when some are not); ``newest``: the conversation's newest id.
        A stream is written to only while its task waits and nothing it sent
        is still on its way.
        """
        for follower in self._followers.get(conversation_id, ()):
            if not follower.waiting or follower.sending is not None:
                follower.wake()
                continue
            events = held_after(follower.cursor)
            if events is None or not follower.push(events) or follower.cursor < newest:
                follower.wake()


Follow = Callable[[Send], Awaitable[None]]


class EventStream(Response):
    """A ``text/event-stream`` answer whose body ``follow(send)`` writes itself.

    ``follow`` returns when the stream ends; a client that goes away ends it too
    (ASGI's ``http.disconnect``, or a write that fails).
    """

    media_type = "text/event-stream"

    def __init__(self, follow: Follow, headers: dict[str, str]) -> None:
        # As StreamingResponse does: no body, so no Content-Length.
        self.status_code = 200
        self.background = None
        self._follow = follow
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})
        following = asyncio.ensure_future(self._follow(send))
        watching = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({following, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (following, watching):
                task.cancel()
            await asyncio.gather(following, watching, return_exceptions=True)
        if following.cancelled() or following.exception() is not None:
            error = None if following.cancelled() else following.exception()
            if error is not None and not isinstance(error, OSError):
                raise error
            return  # the client went away
        await send({"type": BODY, "body": b"", "more_body": False})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
