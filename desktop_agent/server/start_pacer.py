"""Turns that start together take turns, and leave most of the event loop to the rest.

A turn's start is a few milliseconds of the event loop's time in several
steps: the request's routing and checks, then the steps between its store
calls (the conversation read, the lease and the prompt, the options, the
request to the model server). When fifty turns are
asked for at once, each of those steps is ready together, and one iteration
of the loop runs all fifty before it next reads a socket: the replies already
streaming wait behind them, and so does every event on its way to an SSE
stream. Running one step per iteration was not enough on a machine the starts
keep busy (2 cores shared by three replicas, PostgreSQL and the model server):
events appended in the first 0.7 s of 150 turns starting still waited 20-40
ms (p50), for the CPU the starts took.

So while start steps queue, each one waits until the loop has had
:data:`STREAM_SHARE` times as long as the step before it took for everything
else: a burst of starts gets about a ``1 / (1 + STREAM_SHARE)`` share of the
loop, and the streams, approvals and reads the rest. A turn starting alone
never waits (nothing queues behind its steps, which are store calls apart).
The price is the burst's own pace: its last turns start later.

A turn's steps after its request is sent are not paced (:class:`PacedCalls`):
they are its reply's. Paced, the reply's first write waited behind every start
queued before it (up to 2 s with 50 turns asked for at once), its pieces piled
up unread meanwhile, and the step that finally ran drained them whole: the
median REST client saw its reply's first text 1.2-2.2 s after asking, much of
it in one event, and those steps (3-11 ms) were the loop's longest.

Measured with ``bench/server_load.py --database ... --replicas 3
--conversations 50 --delay 0.05`` (150 turns asked for in the same instant;
figures in the README).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from desktop_agent.session import ExecutorCalls

from .request_guard import AsgiApp, Receive, Scope, Send

T = TypeVar("T")

STREAM_SHARE = 15.0
"""While start steps queue, the loop's time left to other work per unit of time a step took."""


class StartPacer:
    """Lets one start step run at a time, spaced so that other work keeps most of the loop.

    Args:
        stream_share: See :data:`STREAM_SHARE` (its value when the pacer is made, if None).
    """

    def __init__(self, stream_share: float | None = None) -> None:
        self._stream_share = STREAM_SHARE if stream_share is None else stream_share
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._busy = False  # a step was let through and its successor not yet chosen
        self._step_began = 0.0

    @property
    def waiting(self) -> int:
        """Start steps waiting for their turn."""
        return sum(1 for future in self._waiting if not future.done())

    async def step(self) -> None:
        """Return when the caller's next start step may run (at once when none ran just before)."""
        loop = asyncio.get_running_loop()
        if not self._busy:
            self._busy = True
            self._began(loop)
            return
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if not future.cancelled():  # its turn had come: hand it on, or nobody ever runs
                self._let_next()
            raise  # else cancelled while waiting: _let_next skips the future
        self._began(loop)

    def _began(self, loop: asyncio.AbstractEventLoop) -> None:
        self._step_began = time.monotonic()
        # Runs in the loop's next iteration, so after the step (this task's run
        # until its next await): the time since is what the step took, plus what
        # else ran in between, so a loop busier with other work spaces starts more.
        loop.call_soon(self._stepped, loop)

    def _stepped(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._waiting:
            took = time.monotonic() - self._step_began
            loop.call_later(took * self._stream_share, self._let_next)
        else:
            self._let_next()

    def _let_next(self) -> None:
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(None)
                return
        self._busy = False


class PacedCalls:
    """Store calls whose caller resumes on the loop only when the pacer lets it.

    The turn's start steps are the code between its store calls, so the wait
    comes after each call, before the next step runs. Once the turn's request
    is sent its steps are its reply's and go through :attr:`for_reply`, unpaced
    (:class:`~desktop_agent.session.store_calls.PacedStoreCalls` says why).

    Args:
        calls: Where the store calls run (an executor's threads).
        pacer: The process's start pacer.
    """

    def __init__(self, calls: ExecutorCalls, pacer: StartPacer) -> None:
        self._calls = calls
        self._pacer = pacer

    async def __call__(self, call: Callable[[], T], /) -> T:
        """The result of ``call()``, once the next step may run."""
        result = await self._calls(call)
        await self._pacer.step()
        return result

    @property
    def for_reply(self) -> ExecutorCalls:
        """The same executor's calls, not paced: for a turn whose request is sent."""
        return self._calls

    def close(self) -> None:
        """Stop taking calls; those running finish on their own."""
        self._calls.close()


_RUN_PATH = re.compile(r"^/conversations/[^/]+/run/?$")


class PacedStarts:
    """ASGI middleware: a request to start a turn waits for the pacer before it is routed.

    Routing, the key's dependency and the body's validation are the start's
    first step; fifty of them arriving together would otherwise run in one
    iteration of the loop.
    """

    def __init__(self, app: AsgiApp, pacer: StartPacer) -> None:
        self.app = app
        self._pacer = pacer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and scope["method"] == "POST"
                and _RUN_PATH.match(scope["path"])):
            await self._pacer.step()
        await self.app(scope, receive, send)
