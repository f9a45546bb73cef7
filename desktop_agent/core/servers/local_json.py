"""JSON from a model server on this machine, asked without the openai SDK.

Why: the window searches for local model servers as soon as it opens
(:mod:`.discovery`), and where one answers it lists its models and their
details: a handful of small JSON requests. Through the SDK's client they
loaded the whole SDK stack (openai, pydantic, httpx2, httpcore2, anyio: about
17 MB of an idle window's resident memory, ``bench/startup.py``) in a window
that may never send a message. h11 (the HTTP/1.1 protocol library httpcore2
itself runs on, 0.4 MB) over an asyncio connection answers them just as well
for a server on a loopback address with no proxy in between
(:func:`~desktop_agent.core.servers.port_check.reached_directly`): the SDK adds
nothing such a request needs (retries are off for these, and Azure's headers
never apply to a local address). The SDK is loaded when a turn is about to be
sent, as before.

Each request opens its own connection and closes it: a loopback connection
costs microseconds, and nothing is left open in an idle window.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from desktop_agent.core.wire.tls_context import tls_context

_T = TypeVar("_T")

MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""The largest answer read (Ollama's ``/api/show`` with its tensor list is well under 1 MB)."""

_READ_SIZE = 64 * 1024


class LocalRequestError(Exception):
    """The server could not be reached or gave no usable HTTP answer (cause chained)."""


class LocalStatusError(LocalRequestError):
    """The server answered with an error status.

    Attributes:
        status_code: The HTTP status (the same attribute the SDK's status errors have).
    """

    def __init__(self, status_code: int, url: str) -> None:
        super().__init__(f"{url} answered {status_code}")
        self.status_code = status_code


class LocalJsonClient:
    """Sends JSON requests to one local server, each on a connection of its own.

    Attributes:
        api_key: Sent as ``Authorization: Bearer``, as the SDK sends it (None: no header).
    """

    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key

    async def get_json(self, url: str, timeout: float | None = None, body: Any = None) -> Any:
        """GET ``url`` (POST ``body`` as JSON when given); the decoded JSON answer.

        ``timeout`` bounds each step (connecting, sending, each read), as the
        SDK's timeout does.

        Raises:
            LocalStatusError: The server answered an error status (400 or above).
            LocalRequestError: It could not be reached, did not answer in time or
                answered something that is not HTTP.
            ValueError: The answer was not JSON.
        """
        import h11  # only once a server answers: an idle window with none never needs it

        try:
            status, payload = await self._exchange(url, timeout, body)
        except (OSError, ValueError, h11.ProtocolError) as exc:  # TimeoutError is an OSError
            raise LocalRequestError(f"{_shown(url)}: {type(exc).__name__}") from exc
        if status >= 400:
            raise LocalStatusError(status, _shown(url))
        return json.loads(payload)

    async def _exchange(self, url: str, timeout: float | None,
                        body: Any) -> tuple[int, bytes]:
        import h11

        parts = urlsplit(url)
        secure = parts.scheme == "https"
        host = parts.hostname or ""
        port = parts.port or (443 if secure else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        data = json.dumps(body).encode() if body is not None else b""
        headers = [("Host", parts.netloc.rpartition("@")[2]), ("Accept", "application/json"),
                   ("Connection", "close")]
        if self.api_key:
            headers.append(("Authorization", f"Bearer {self.api_key}"))
        if body is not None:
            headers += [("Content-Type", "application/json"),
                        ("Content-Length", str(len(data)))]

        reader, writer = await _within(timeout, asyncio.open_connection(
            host, port, ssl=tls_context() if secure else None))
        try:
            connection = h11.Connection(h11.CLIENT)
            request = h11.Request(method="POST" if body is not None else "GET",
                                  target=target, headers=headers)
            writer.write(connection.send(request) or b"")
            if data:
                writer.write(connection.send(h11.Data(data=data)) or b"")
            writer.write(connection.send(h11.EndOfMessage()) or b"")
            await _within(timeout, writer.drain())
            status: int | None = None
            answer = bytearray()
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    connection.receive_data(await _within(timeout, reader.read(_READ_SIZE)))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    answer += event.data
                    if len(answer) > MAX_ANSWER_BYTES:
                        raise ValueError(f"an answer over {MAX_ANSWER_BYTES} bytes")
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
            if status is None:
                raise ConnectionError("the server closed the connection without answering")
            return status, bytes(answer)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def _within(timeout: float | None, step: Awaitable[_T]) -> _T:
    async with asyncio.timeout(timeout):
        return await step


def _shown(url: str) -> str:
    """``url`` as an error may name it: no user name, password or query (they may hold keys)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
