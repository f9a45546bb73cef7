"""One ``AsyncOpenAI`` per model server: the client every request to that server goes through.

The openai SDK carries the requests (chat, ``/models``, discovery and each
server's detail endpoints): its auth headers (``api-key`` and ``api-version``
for Azure), its retry rules (``Retry-After``, ``retry-after-ms``,
``x-should-retry``, 408/409/429/5xx and connection errors), request ids and
its typed status errors. Where aiohttp is installed (the app) streamed replies
come through openai's aiohttp transport and other requests through httpx2's
(:mod:`~desktop_agent.core.wire.split_transport`); otherwise all through the
SDK's httpx2 backend (the SDK alone; see :mod:`~desktop_agent.core.wire.http_backend`). The chat
body is sent as the prebuilt JSON bytes and the reply is read as raw bytes by
:mod:`~desktop_agent.core.wire.transport`, so the SDK's typed chunk objects and
its parameter transform (~85 µs per chunk, 9 ms per request after 20 turns)
are never paid.

What the core adds to the SDK, in :class:`ModelServerClient`:

* the wait before a retry comes from the Client's
  :class:`~desktop_agent.core.wire.retry.RetryPolicy` (capped, with jitter or
  without for tests), a server's ``Retry-After`` still winning;
* a time limit on connecting and on the response's head only: the SDK's read
  timeout would arm a timer for every chunk, and silence between chunks is
  watched per stream by :class:`~desktop_agent.core.wire.stream_guard.IdleTimer`;
* a request the server closed the connection on without answering is sent
  once more at once, whatever the retry policy says (llama.cpp times idle
  keep-alive connections out; a request sent on one just then is never answered).

On an openai upgrade: these additions override private methods of the SDK's client
(``_prepare_url``; ``_calculate_retry_timeout``, which calls ``_parse_retry_after_header``;
``_send_request``, which sends through ``_client``) and the public ``platform_headers``.
``pyproject.toml`` pins openai to the minor they were written against. Before raising
the pin, re-read those methods and their callers in ``openai/_base_client.py``
(``_build_request``, ``request``, ``_sleep_for_retry``, ``default_headers``) and run
``tests/core/test_openai_bends.py``: it checks each one's signature and that it takes
effect on a real request, and a failure names the bend and what to re-read.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

from desktop_agent.core.wire import http_backend, split_transport
from desktop_agent.core.wire.retry import RetryPolicy
from desktop_agent.core.wire.tls_context import load_certificates, tls_context

if TYPE_CHECKING:
    import httpx2
    import openai

log = logging.getLogger("desktop_agent.transport")

KEEPALIVE_SECONDS = 4.0
"""How long an idle connection to a model server is kept for the next request.

Below llama.cpp's own 5 s, so the app, not the server, closes it first and a
request is never sent on a connection the server is just closing."""

DEFAULT_MAX_CONNECTIONS = 256
"""Connections open at once per model server (streams beyond it wait for one)."""

AZURE_API_VERSION = "2024-10-21"
"""The Azure OpenAI API version used when neither the URL nor ``OPENAI_API_VERSION`` names one."""

_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")

_PREPARED_URLS = 64
"""Request paths whose merged URL a client keeps (chat, models, a few details per model)."""

_DEFAULT_RETRY = RetryPolicy()
_RETRY_POLICY: contextvars.ContextVar[RetryPolicy | None] = contextvars.ContextVar(
    "desktop_agent_retry_policy", default=None)
"""The retry policy of the request being sent (a client is shared by Clients of one server)."""


HTTPX2_ASYNCIO_MODULES = ("httpcore2._backends.anyio", "anyio._backends._asyncio")
"""What httpx2 imports on its first connection from asyncio (~20 modules, tens of ms)."""


def sdk_modules(*, streams: bool = False) -> list[str]:
    """The modules a request needs imported; ``streams``: a streamed one (a chat reply).

    httpx2's connection backend is among them: it carries the requests around
    a chat (the server's details) and otherwise loads on the first one, on the
    event loop.
    """
    names = ["openai", *HTTPX2_ASYNCIO_MODULES]
    if streams and http_backend.use_aiohttp():
        names.append(split_transport.AIOHTTP_TRANSPORT_MODULE)  # aiohttp itself
    return names


def _import_all(names: list[str]) -> None:
    for name in names:
        importlib.import_module(name)


async def load_sdk(*, streams: bool = False) -> None:
    """Import the openai SDK in a worker thread if no one has yet.

    The import takes about a second of CPU (its typed API); done lazily on
    the event loop by a first request, it froze a window or stalled every
    stream a server was serving for that long. A process that warms up first
    (:func:`~desktop_agent.core.warm_up.warm_up`) pays nothing here. With
    ``streams`` (before a chat request) aiohttp too, where the app streams on it
    (:mod:`~desktop_agent.core.wire.split_transport`).
    """
    missing = [name for name in sdk_modules(streams=streams) if name not in sys.modules]
    if missing:
        await asyncio.to_thread(_import_all, missing)


def retry_policy_for_request(policy: RetryPolicy) -> contextvars.Token[RetryPolicy | None]:
    """Make ``policy`` decide the waits of the requests this task sends next."""
    return _RETRY_POLICY.set(policy)


def reset_retry_policy(token: contextvars.Token[RetryPolicy | None]) -> None:
    """Undo :func:`retry_policy_for_request`."""
    _RETRY_POLICY.reset(token)


def is_azure(base_url: str) -> bool:
    """Whether ``base_url`` is an Azure OpenAI endpoint (it authenticates with ``api-key``)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host.endswith(_AZURE_HOSTS)


def hung_up(exc: BaseException) -> bool:
    """Whether the server closed the connection before any byte of a response.

    The SDK's aiohttp backend wraps aiohttp's error in an httpx2 one, which
    the SDK may wrap again; the cause chain still holds the original.
    """
    return any(http_backend.is_hang_up(e) for e in cause_chain(exc))


def cause_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


@functools.cache
def _client_class(azure: bool) -> type[Any]:
    """The SDK's client class with the core's additions (made on first use: openai is heavy)."""
    import httpx2
    import openai

    base: type[Any] = openai.AsyncAzureOpenAI if azure else openai.AsyncOpenAI

    class ModelServerClient(base):  # type: ignore[misc]
        """The SDK's async client with the core's retry waits, head timeout and hang-up resend."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._prepared_urls: dict[str, tuple[httpx2.URL, httpx2.URL]] = {}

        def _prepare_url(self, url: str) -> httpx2.URL:
            # The SDK parses the path and merges it with the base URL on every
            # request (~45 µs of CPU); the result depends on those two alone
            # and URLs are immutable, so each path is prepared once per base URL.
            base: httpx2.URL = self.base_url
            known = self._prepared_urls.get(url)
            if known is not None and known[0] is base:
                return known[1]
            prepared: httpx2.URL = super()._prepare_url(url)
            if len(self._prepared_urls) >= _PREPARED_URLS:
                self._prepared_urls.clear()
            self._prepared_urls[url] = (base, prepared)
            return prepared

        def platform_headers(self) -> dict[str, str]:
            # The SDK's X-Stainless-* headers tell every server the machine's OS,
            # architecture and Python version: nothing a model server needs.
            return {}

        def _calculate_retry_timeout(self, remaining_retries: int, options: Any,
                                     response_headers: httpx2.Headers | None = None) -> float:
            policy = _RETRY_POLICY.get() or _DEFAULT_RETRY
            attempt = max(1, options.get_max_retries(self.max_retries) - remaining_retries + 1)
            retry_after = self._parse_retry_after_header(response_headers)
            return policy.delay(attempt, retry_after)

        async def _send_request(self, request: httpx2.Request, *, stream: bool,
                                **kwargs: Any) -> httpx2.Response:
            try:
                return await self._send_in_time(request, stream, kwargs)
            except httpx2.TransportError as exc:
                if not hung_up(exc):
                    raise
            log.info("%s closed the connection without answering; sending again",
                     request.url.host)
            return await self._send_in_time(request, stream, kwargs)

        async def _send_in_time(self, request: httpx2.Request, stream: bool,
                                kwargs: dict[str, Any]) -> httpx2.Response:
            """Send; the head must arrive within the request's connect timeout."""
            limit = request.extensions.get("timeout", {}).get("connect")
            try:
                async with asyncio.timeout(limit):
                    response: httpx2.Response = await self._client.send(
                        request, stream=stream, **kwargs)
                    return response
            except TimeoutError as exc:
                raise httpx2.ReadTimeout("no response head in time", request=request) from exc

    ModelServerClient.__qualname__ = ModelServerClient.__name__
    return ModelServerClient


def new_openai_client(base_url: str, api_key: str | None = None, *,
                      headers: Mapping[str, str] | None = None,
                      max_connections: int = DEFAULT_MAX_CONNECTIONS) -> openai.AsyncOpenAI:
    """An ``AsyncOpenAI`` (``AsyncAzureOpenAI`` for Azure URLs), streams on aiohttp where installed.

    Proxies come from the environment (``HTTP(S)_PROXY``, ``NO_PROXY``), read
    once when the client is made. Retries are set per request by the caller
    (the Client's policy); the client's own default is none.

    Args:
        base_url: The server's OpenAI-compatible root (``.../v1``); for Azure
            the deployment's URL, whose ``api-version`` query is used.
        api_key: The key (sent as ``Authorization: Bearer``, or ``api-key`` for Azure).
        headers: Extra headers sent with every request.
        max_connections: Connections open at once to this server.
    """
    import httpx2
    import openai

    limits = httpx2.Limits(max_connections=max_connections,
                           max_keepalive_connections=max_connections,
                           keepalive_expiry=KEEPALIVE_SECONDS)
    backend = split_transport.split_client if http_backend.use_aiohttp() \
        else openai.DefaultAsyncHttpxClient
    load_certificates(base_url)  # over TLS: before the first request, as it always was
    http = backend(limits=limits, verify=tls_context(), trust_env=True, follow_redirects=False)
    key = api_key or "not-needed"
    default_headers = {"User-Agent": "desktop-agent", **dict(headers or {})}
    if is_azure(base_url):
        parts = urlsplit(base_url)
        named = parse_qs(parts.query).get("api-version") or []
        version = (named[0] if named else None) or os.environ.get("OPENAI_API_VERSION") \
            or AZURE_API_VERSION
        plain = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
        client: openai.AsyncOpenAI = _client_class(True)(
            base_url=plain, api_key=key, api_version=version, http_client=http,
            max_retries=0, default_headers=default_headers)
    else:
        client = _client_class(False)(base_url=base_url.rstrip("/"), api_key=key,
                                      http_client=http, max_retries=0,
                                      default_headers=default_headers)
    return client
