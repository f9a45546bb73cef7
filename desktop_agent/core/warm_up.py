"""Load ahead of time what the first turn would otherwise load on the event loop.

The HTTP library takes a few hundred milliseconds to import, the CA
certificates tens of milliseconds, and the tokenizer (used to size every
request) a few hundred milliseconds. Loaded lazily, they land inside the first
turn, on the event loop: a long-running process such as the REST server then
stalls every stream it is serving for that long. Such a process calls
:func:`warm_up` once before it starts serving; it blocks, so an interactive
program runs it in a worker thread instead.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import socket
import threading

log = logging.getLogger("desktop_agent.core")

#: Seconds the throwaway request of :func:`_connect_once` may take (it is local).
_CONNECT_TIMEOUT = 10.0
_EMPTY_LIST = b'{"object": "list", "data": []}'


def warm_up(*, tokenizer: bool = True) -> None:
    """Import the HTTP stack and (optionally) load the tokenizer; never raises."""
    try:
        from desktop_agent.core.wire import model_client

        for name in model_client.sdk_modules(streams=True):
            importlib.import_module(name)

        _connect_once()  # the SDK's own lazy imports, and its HTTP stack's first connection
        if tokenizer:
            from desktop_agent.core.context.tokens import count_text_tokens

            count_text_tokens("warm up")
    except Exception as exc:  # noqa: BLE001 - warming up only saves time; the turn still works
        log.debug("warm-up failed: %s", exc)


def _connect_once() -> None:
    """One request through the SDK's client to a throwaway listener on loopback.

    Why a real request: the HTTP stack imports its connection backend (anyio's
    asyncio backend, its socket streams) only when it first connects, about
    15 modules; ``serve`` measured them landing in the first turn on the event
    loop, a stall of every open stream (``tests/session/test_warm_up.py``).
    Connecting once here loads whatever the installed versions load, with no
    list of their private modules to keep up to date.
    """
    import urllib.request

    from desktop_agent.core.wire import model_client

    if "http" in urllib.request.getproxies() and not urllib.request.proxy_bypass("127.0.0.1"):
        # a proxy would get the request: make the client only (what it imports still counts)
        model_client.new_openai_client("http://127.0.0.1/v1")
        return
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(_CONNECT_TIMEOUT)
        port = listener.getsockname()[1]
        answering = threading.Thread(target=_answer_once, args=(listener,), daemon=True)
        answering.start()

        async def ask() -> None:
            client = model_client.new_openai_client(f"http://127.0.0.1:{port}/v1")
            try:
                await client.with_options(timeout=_CONNECT_TIMEOUT, max_retries=0).models.list()
            finally:
                await client.close()

        asyncio.run(ask())
        answering.join(_CONNECT_TIMEOUT)


def _answer_once(listener: socket.socket) -> None:
    """Answer one request with an empty model list, then close."""
    try:
        connection, _ = listener.accept()
    except OSError:
        return
    with connection:
        connection.settimeout(_CONNECT_TIMEOUT)
        try:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                request += chunk
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                               % (len(_EMPTY_LIST), _EMPTY_LIST))
        except OSError:
            return
