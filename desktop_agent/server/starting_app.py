"""The app ``serve`` runs: ``/alive`` answers at once, the rest when the real app is ready.

Why: ``desktop-agent serve`` imported FastAPI, every route's module, the
openai SDK and the turn's modules (and probed the sandbox) before it opened
its port, about 2.3 s of CPU; on a loaded machine a load balancer or a
supervisor waited 8 to 10 s for ``/alive`` and could count the replica as
dead. Only the liveness answer is needed that early. :class:`StartingApp` is
the ASGI app uvicorn serves from the start: it answers ``GET /alive`` itself
(behind the same host and key checks, :class:`~.request_guard.RequestGuard`),
builds the real app in a worker thread, then hands every request to it. A
request that comes before (anything but ``/alive`` and ``/ready``) waits for it.

The turn's modules (the openai SDK, the core's client), the sandbox probe and
the tool schemas are warmed up in that thread *after* the API opens: they were
half of the 2.3 s before the first API answer, and a read (listing
conversations, a page of events, a stream opened) needs none of them. Requests
that may start a turn, anything but ``GET`` and ``HEAD``, wait for the warm-up
too, so no turn meets a cold import on the event loop.

The real app's lifespan (its start-up and shutdown work) is run here, through
the ASGI lifespan protocol, once it is built; uvicorn's own lifespan completes
at once so that the port opens. If the build fails, requests are answered 503
with the reason and ``failed`` tells the command to exit with an error.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from .request_guard import RequestGuard

log = logging.getLogger("desktop_agent.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The real app's answer (api_models.Alive): ``service`` lets discovery recognise this server.
ALIVE_BODY = json.dumps({"status": "ok", "service": "desktop-agent"}).encode()


async def _alive(_scope: Scope, _receive: Receive, send: Send) -> None:
    """``GET /alive`` while the real app is being built: the same answer it gives."""
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(ALIVE_BODY)).encode())]})
    await send({"type": "http.response.body", "body": ALIVE_BODY})


NOT_READY_BODY = json.dumps({"status": "starting", "database": None,
                             "error": "The server is still starting."}).encode()


async def _not_ready(_scope: Scope, _receive: Receive, send: Send) -> None:
    """``GET /ready`` while the real app is being built: not ready yet (api_models.Ready)."""
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(NOT_READY_BODY)).encode()),
                            (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": NOT_READY_BODY})


class StartingApp:
    """ASGI app: answers ``/alive`` from the start, serves the real app once it is built.

    Args:
        build: Makes the real app (blocking: it imports); run in a worker thread
            when uvicorn starts.
        warm_up: Prepares what turns use (blocking; never raises), run in the same
            thread once the real app serves; requests other than ``GET`` and
            ``HEAD`` wait for it.
        master_key: The bearer key (None: ``--no-auth``), for the early ``/alive``'s checks.
        allowed_hosts: The Host names answered (as the real app's guard takes them).
        on_failure: Called (on the loop) when ``build`` fails: the command stops the server.

    Attributes:
        failed: Why the real app could not be built ('' while it could).
    """

    def __init__(self, build: Callable[[], AsgiApp], *, master_key: str | None,
                 allowed_hosts: Sequence[str] | None = None,
                 on_failure: Callable[[], None] = lambda: None,
                 warm_up: Callable[[], None] | None = None) -> None:
        self._build = build
        self._warm_up = warm_up
        self._on_failure = on_failure
        self._early = RequestGuard(_alive, master_key=master_key, allowed_hosts=allowed_hosts,
                                   upload_limit=0)
        # A load balancer's readiness probe is told at once, not kept waiting for the build.
        self._early_ready = RequestGuard(_not_ready, master_key=master_key,
                                         allowed_hosts=allowed_hosts, upload_limit=0)
        self._app: AsgiApp | None = None
        self._ready: asyncio.Event | None = None
        self._warmed: asyncio.Event | None = None
        self._starting: asyncio.Task[None] | None = None
        self._lifespan: _Lifespan | None = None
        self.failed = ""

    @property
    def ready(self) -> bool:
        """Whether the real app serves requests now."""
        return self._app is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
            return
        app = self._app
        if app is None:
            if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
                early = {"/alive": self._early, "/ready": self._early_ready}.get(
                    scope.get("path", ""))
                if early is not None:
                    await early(scope, receive, send)
                    return
            if self._ready is not None and not self.failed:
                await self._ready.wait()  # the real app in a moment: as if it were slow
            app = self._app
        if app is None:
            await _not_started(scope, send, self.failed or "The server is still starting.")
            return
        warmed = self._warmed
        if (warmed is not None and not warmed.is_set() and scope["type"] == "http"
                and scope.get("method") not in ("GET", "HEAD")):
            await warmed.wait()  # it may start a turn: not before the turn's modules loaded
        await app(scope, receive, send)

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        """The server's lifespan: start building at once; stop the real app's on shutdown."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._ready = asyncio.Event()
                self._warmed = asyncio.Event()
                self._starting = asyncio.get_running_loop().create_task(
                    self._start(), name="build-app")
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._starting is not None:
                    await asyncio.wait([self._starting])  # a build in its thread runs to its end
                if self._lifespan is not None:
                    await self._lifespan.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self) -> None:
        assert self._ready is not None and self._warmed is not None
        try:
            app = await asyncio.to_thread(self._build)
            lifespan = _Lifespan(app)
            await lifespan.startup()
            self._lifespan = lifespan
            self._app = app
            log.info("the REST API is ready")
        except Exception as exc:
            log.exception("the REST API could not start")
            self.failed = f"The server could not start: {exc}"
            self._on_failure()
            self._warmed.set()
            return
        finally:
            self._ready.set()
        try:
            if self._warm_up is not None:
                await asyncio.to_thread(self._warm_up)
        except Exception:  # only time is lost: a turn does the same work when it needs it
            log.exception("warming up the turn's modules failed")
        finally:
            self._warmed.set()


class _Lifespan:
    """Runs an ASGI app's lifespan protocol: its start-up now, its shutdown later."""

    def __init__(self, app: AsgiApp) -> None:
        self._app = app
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._outbox: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Future[None] | None = None

    async def startup(self) -> None:
        """Start the app's lifespan and wait for its start-up to complete.

        Raises:
            RuntimeError: Its start-up failed (with the app's message).
        """
        scope: Scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"},
                        "state": {}}
        self._task = asyncio.ensure_future(self._app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        answer = await self._answer()
        if answer["type"] != "lifespan.startup.complete":
            raise RuntimeError(answer.get("message") or "its start-up failed")

    async def shutdown(self) -> None:
        """Ask the app to shut down and wait until it has."""
        await self._inbox.put({"type": "lifespan.shutdown"})
        answer = await self._answer()
        if answer["type"] != "lifespan.shutdown.complete":
            log.error("the REST API did not shut down cleanly: %s", answer.get("message"))
        if self._task is not None:
            await asyncio.wait([self._task])

    async def _answer(self) -> Message:
        """The app's next lifespan message (or its failure, if its task ended instead)."""
        assert self._task is not None
        reply = asyncio.ensure_future(self._outbox.get())
        waited: list[asyncio.Future[Any]] = [reply, self._task]
        await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        if reply.done():
            return reply.result()
        reply.cancel()
        error = self._task.exception() if not self._task.cancelled() else None
        return {"type": "lifespan.failed", "message": str(error or "it ended")}


async def _not_started(scope: Scope, send: Send, sentence: str) -> None:
    if scope["type"] != "http":  # a websocket (the API has none): refused, as the guard does
        await send({"type": "websocket.close", "code": 1008})
        return
    body = json.dumps({"error": sentence, "code": "not_started"}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"5")]})
    await send({"type": "http.response.body", "body": body})
