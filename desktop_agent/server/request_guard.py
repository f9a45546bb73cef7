"""The gate every request passes before any route reads a byte of its body.

FastAPI checks a route's dependencies (the bearer key) only after it has
parsed the body: an anonymous 200 MB JSON body cost 399 MB of memory before
its 401, and an anonymous upload was spooled to disk first. This ASGI
middleware answers first, from the headers alone:

1. the ``Host`` header must be an allowed name (with ``--no-auth`` only
   loopback names, so a web page that rebinds its DNS name to 127.0.0.1
   cannot drive the API; with a key, an optional allow-list);
2. the bearer key must match (every path but ``/alive``);
3. the body may not be larger than the route's limit: a declared
   ``Content-Length`` over it is refused at once, and a chunked body is cut
   off with a 413 the moment it passes the limit;
4. the address may not hold a NUL character (``%00``): no name, path or
   search text can hold one (PostgreSQL's text cannot), so it is a 422 with a
   sentence on both engines, and the connection stays open.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from starlette.exceptions import HTTPException

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Largest request body for routes other than uploads (JSON bodies: messages with images).
DEFAULT_BODY_LIMIT = 16 * 1024 * 1024
#: Room for the multipart framing around an upload's bytes.
UPLOAD_OVERHEAD = 64 * 1024
#: Bytes of a refused body read (and dropped) so the client can read the refusal.
DISCARD_LIMIT = 1024 * 1024
#: Host names that only ever mean this machine.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: Paths served without a key.
OPEN_PATHS = frozenset({"/alive", "/ready"})

_UPLOAD_PATH = re.compile(r"^/conversations/[^/]+/files/?$")
_CHALLENGE = [(b"www-authenticate", b"Bearer")]


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a body passes its limit.

    An HTTPException, so the app's handler turns it into a JSON 413 wherever
    the body was being read.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is larger than the limit of {limit} bytes.")


def host_name(value: str) -> str:
    """The name part of a ``Host`` header (no port, no IPv6 brackets), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class RequestGuard:
    """ASGI middleware: host check, bearer key and body limit before the app runs.

    Args:
        app: The application to guard.
        master_key: The bearer key, or None (``--no-auth``: loopback hosts only).
        allowed_hosts: Host names accepted (``*`` for any). Default: loopback
            names without a key; any name with a key.
        body_limit: Largest body for every route but uploads.
        upload_limit: Largest upload (the multipart framing is allowed on top).
    """

    def __init__(self, app: AsgiApp, *, master_key: str | None,
                 allowed_hosts: Sequence[str] | None = None,
                 body_limit: int = DEFAULT_BODY_LIMIT, upload_limit: int) -> None:
        self.app = app
        self.master_key = master_key.encode("ascii") if master_key is not None else None
        if allowed_hosts is None:
            allowed_hosts = LOOPBACK_HOSTS if master_key is None else ("*",)
        elif master_key is None:
            allowed_hosts = [h for h in allowed_hosts if host_name(h) in LOOPBACK_HOSTS]
        self.allowed_hosts = frozenset(host_name(h) for h in allowed_hosts)
        self.body_limit = body_limit
        self.upload_limit = upload_limit + UPLOAD_OVERHEAD

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # the API has none; refuse rather than guard
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _discard(receive)
            await _answer(send, *refusal)
            return
        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            drained = await _discard(receive)
            await _answer(send, 422, "invalid_request",
                          "The request's address holds a NUL character (%00); no name, path "
                          "or search text may contain one.", close=not drained)
            return
        limit = self._limit(scope)
        declared = headers.get("content-length", b"").decode("latin-1")
        if declared.isdigit() and int(declared) > limit:
            await _discard(receive)
            await _answer(send, 413, "too_large",
                          f"The request body is larger than the limit of {limit} bytes.")
            return
        await self.app(scope, _limited(receive, limit), send)

    def _refusal(self, scope: Scope, headers: dict[str, bytes]
                 ) -> tuple[int, str, str, list[tuple[bytes, bytes]]] | None:
        host = host_name(headers.get("host", b"").decode("latin-1"))
        if "*" not in self.allowed_hosts and host not in self.allowed_hosts:
            return (400, "bad_host", f"This server does not answer to the host name {host!r}; "
                    "use 127.0.0.1 or localhost (or add the name to the allowed hosts).", [])
        if self.master_key is None or scope["path"] in OPEN_PATHS:
            return None
        given = headers.get("authorization", b"")
        scheme, _, token = given.partition(b" ")
        if scheme.lower() != b"bearer" or not token.strip():
            return (401, "unauthorized",
                    "Missing bearer key: send 'Authorization: Bearer <key>'.", _CHALLENGE)
        if not hmac.compare_digest(token.strip(), self.master_key):
            return (401, "unauthorized", "Wrong bearer key.", _CHALLENGE)
        return None

    def _limit(self, scope: Scope) -> int:
        if scope.get("method") == "POST" and _UPLOAD_PATH.match(scope["path"]):
            return self.upload_limit
        return self.body_limit


def _limited(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises :class:`BodyTooLarge` once more than ``limit`` bytes came."""
    seen = 0

    async def counted() -> Message:
        nonlocal seen
        message = await receive()
        if message.get("type") == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(limit)
        return message

    return counted


async def _discard(receive: Receive) -> bool:
    """Read and drop up to :data:`DISCARD_LIMIT` bytes of a refused body; True if it all came.

    A client still sending its body when the answer comes sees a reset instead
    of the answer; reading a bounded amount lets ordinary clients read why they
    were refused. Past the bound the connection is closed on them.
    """
    dropped = 0
    while dropped <= DISCARD_LIMIT:
        message = await receive()
        if message.get("type") != "http.request":
            return False
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return True
    return False


async def _answer(send: Send, status: int, code: str, message: str,
                  extra: list[tuple[bytes, bytes]] | None = None, *, close: bool = True) -> None:
    body = json.dumps({"error": message, "code": code}).encode()
    closing = [(b"connection", b"close")] if close else []
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            *closing, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
