"""The last answer to an error no route expected: a sentence, and the connection kept.

FastAPI hands an exception no handler takes to Starlette's outermost
middleware, which sends the app's 500 answer and then raises the exception
again, so that the server logs it. uvicorn, seeing an exception after the
answer went out, closes the connection: a client that keeps its connection
alive (every HTTP library does) had its next request on it reset. During a
race of restores and commands that was 288 answers of 500, each followed by a
reset. This middleware sits inside that one: it logs the error, answers the
500 itself and returns, so the connection serves the next request. Only an
error after the answer started (a stream cut in the middle) still closes it:
half an answer cannot be told apart from a whole one otherwise.
"""

from __future__ import annotations

import json
import logging

from .request_guard import AsgiApp, Message, Receive, Scope, Send

log = logging.getLogger("desktop_agent.server.errors")

UNEXPECTED = "The server hit an unexpected error; see its log."
"""The sentence of a 500 (the error's details are in the log, never in the answer)."""


class UnexpectedErrors:
    """ASGI middleware: an unhandled exception becomes a JSON 500 on a connection kept alive.

    Args:
        app: The application (with its own handlers for the errors it expects).
    """

    def __init__(self, app: AsgiApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if started:
                raise  # half an answer went out: only closing the connection says so
            log.error("unexpected error while answering %s %s", scope.get("method"),
                      scope.get("path"), exc_info=exc)
            body = json.dumps({"error": UNEXPECTED, "code": "internal_error"}).encode()
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
