"""The app's HTTP client for a model server: streamed replies on aiohttp, the rest on httpx2.

Why: aiohttp reads a streamed reply for less CPU per chunk than httpx2
(``bench/http_chunk_cost.py``; in the window 1.7-1.9x less,
``bench/window_stream_cpu.py``), so the app runs the openai SDK on aiohttp. But
aiohttp and the seven packages it imports (yarl, multidict, attrs, ...) cost
~10 MB of resident memory, and openai's aiohttp client imports them when it is
made: a window whose server search found a model server carried them while
idle, for a ``GET /v1/models`` and a detail request or two whose answers are
read whole. An answer read whole costs the same on either library; only a
streamed reply pays per chunk.

So :class:`SplitTransport` sends a request whose response the SDK streams
(``send(..., stream=True)``: a chat reply) through openai's own aiohttp transport
(``openai._vendor.httpx_aiohttp``, the one ``DefaultAioHttpClient`` uses), made,
and aiohttp imported, for the first such request; every other request goes
through httpx2's own transport, which the SDK has imported anyway. Both sit under
the server's one ``AsyncOpenAI`` (its auth, retries, request ids and typed
errors) and its one ``httpx2.AsyncClient`` (proxies from the environment, the
TLS context); each keeps its own pool of up to ``max_connections``.
:func:`~desktop_agent.core.wire.model_client.load_sdk` imports the aiohttp
transport in a worker thread before the first chat, so the import does not
land on the event loop.

On an openai (or httpx2) upgrade: ``SplitClient`` overrides httpx2's private
``AsyncClient._init_transport`` and ``_init_proxy_transport`` (openai's
``DefaultAsyncHttpxClient`` inherits them) and makes openai's private vendored
``AiohttpTransport`` as ``DefaultAioHttpClient`` does. Before raising openai's pin in
``pyproject.toml``, re-read those in ``httpx2/_client.py`` and
``openai/_vendor/httpx_aiohttp/transport.py`` and run ``tests/core/test_openai_bends.py``
(bends 4 and 5: the signatures, and a reply streamed on aiohttp directly and through a
proxy).

Measured (``bench/startup.py --rss-only``, from source, Xvfb): an idle window
whose search found a model server 128.4 -> 121.2 MB, five tabs 138.7 -> 130.5 MB.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

STREAMED = "desktop_agent.streamed"
"""The request extension that says the SDK will stream the response (set by the client)."""

AIOHTTP_TRANSPORT_MODULE = "openai._vendor.httpx_aiohttp.transport"
"""openai's aiohttp transport for httpx2 (importing it imports aiohttp)."""


def aiohttp_transport(*, verify: ssl.SSLContext | str | bool, cert: Any, trust_env: bool,
                      limits: httpx2.Limits, proxy: httpx2.Proxy | None = None,
                      ) -> httpx2.AsyncBaseTransport:
    """The openai SDK's aiohttp transport, as its ``DefaultAioHttpClient`` makes it."""
    from openai._vendor.httpx_aiohttp.transport import AiohttpTransport

    transport: httpx2.AsyncBaseTransport = AiohttpTransport(
        verify=verify, cert=cert, trust_env=trust_env, limits=limits, proxy=proxy)
    return transport


@functools.cache
def _classes() -> tuple[type[Any], type[Any]]:
    """The transport and client classes (made on first use: httpx2 and openai are heavy)."""
    import httpx2
    import openai

    default_limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)

    class SplitTransport(httpx2.AsyncBaseTransport):
        """Streamed responses through aiohttp (made when first needed), the rest through httpx2.

        Attributes:
            streamed: The aiohttp transport, None until a streamed request came.
        """

        def __init__(self, plain: httpx2.AsyncBaseTransport,
                     make_streamed: Callable[[], httpx2.AsyncBaseTransport]) -> None:
            self.plain = plain
            self.streamed: httpx2.AsyncBaseTransport | None = None
            self._make_streamed = make_streamed

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            if not request.extensions.get(STREAMED):
                return await self.plain.handle_async_request(request)
            if self.streamed is None:
                self.streamed = self._make_streamed()
            return await self.streamed.handle_async_request(request)

        async def aclose(self) -> None:
            try:
                await self.plain.aclose()
            finally:
                if self.streamed is not None:
                    await self.streamed.aclose()

    class SplitClient(openai.DefaultAsyncHttpxClient):
        """The SDK's default httpx2 client (its timeouts and limits) on :class:`SplitTransport`."""

        def _init_transport(self, verify: ssl.SSLContext | str | bool = True, cert: Any = None,
                            trust_env: bool = True, http1: bool = True, http2: bool = False,
                            limits: httpx2.Limits = default_limits,
                            transport: httpx2.AsyncBaseTransport | None = None,
                            ) -> httpx2.AsyncBaseTransport:
            if transport is not None:
                return transport
            plain = super()._init_transport(verify=verify, cert=cert, trust_env=trust_env,
                                            http1=http1, http2=http2, limits=limits)
            return SplitTransport(plain, functools.partial(
                aiohttp_transport, verify=verify, cert=cert, trust_env=trust_env,
                limits=limits))

        def _init_proxy_transport(self, proxy: httpx2.Proxy,
                                  verify: ssl.SSLContext | str | bool = True, cert: Any = None,
                                  trust_env: bool = True, http1: bool = True,
                                  http2: bool = False, limits: httpx2.Limits = default_limits,
                                  ) -> httpx2.AsyncBaseTransport:
            plain = super()._init_proxy_transport(proxy, verify=verify, cert=cert,
                                                  trust_env=trust_env, http1=http1,
                                                  http2=http2, limits=limits)
            return SplitTransport(plain, functools.partial(
                aiohttp_transport, verify=verify, cert=cert, trust_env=trust_env,
                limits=limits, proxy=proxy))

        async def send(self, request: httpx2.Request, *, stream: bool = False,
                       **kwargs: Any) -> httpx2.Response:
            request.extensions[STREAMED] = stream
            response: httpx2.Response = await super().send(request, stream=stream, **kwargs)
            return response

    SplitTransport.__qualname__ = SplitTransport.__name__
    SplitClient.__qualname__ = SplitClient.__name__
    return SplitTransport, SplitClient


def split_client(**kwargs: Any) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for the SDK that streams on aiohttp (``kwargs`` as httpx2's)."""
    client: httpx2.AsyncClient = _classes()[1](**kwargs)
    return client


def split_transport_class() -> type[Any]:
    """The class of the transports :func:`split_client` makes (for tests and checks)."""
    return _classes()[0]
