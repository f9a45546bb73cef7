"""The bytes of a streamed response the openai SDK received: from aiohttp itself where it can.

On its aiohttp backend the SDK wraps aiohttp's response for httpx2: each
block of the body then passes through three async generators (openai's
vendored ``AiohttpResponseStream.__aiter__``, which also enters a context
manager, httpx2's ``BoundAsyncStream`` and ``Response.aiter_raw``, which
counts bytes and runs a chunker) before the core's SSE reader sees it. At
50 streams that cost ~3-4 µs of CPU per chunk, a tenth of the transport's
whole cost. The request, its retries and its status errors stay the SDK's;
only the reading of a body the SDK has already accepted is taken here from
the aiohttp response it holds.

The short cut is taken only when the objects are exactly what this module
expects (httpx2's stream wrapping openai's ``AiohttpResponseStream``
wrapping an ``aiohttp.ClientResponse``, nothing read yet); otherwise, for
instance on the SDK's httpx2 backend or after an SDK upgrade that changes
the wrapping, the body is read through the SDK's public ``aiter_raw``.
Both ways yield the same raw (undecoded) bytes, and the response is closed the
same way (``Response.aclose``, which releases the aiohttp response through the
SDK's wrapper).

On an openai (or httpx2) upgrade: the short cut reads private attributes
(httpx2's ``BoundAsyncStream._stream``, the SDK's
``AiohttpResponseStream._aiohttp_response``), so a change there makes it fall
back silently, slower and otherwise unnoticed. ``tests/core/test_openai_bends.py``
(the direct body read) and ``tests/core/test_http_backends.py`` fail when the short
cut is no longer taken; run them before raising openai's pin in ``pyproject.toml``,
and re-read ``openai/_vendor/httpx_aiohttp/transport.py`` if they fail.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from desktop_agent.core.wire import http_backend

if TYPE_CHECKING:
    import httpx2

_SDK_WRAPPER = "AiohttpResponseStream"
"""The class openai's vendored aiohttp transport wraps each response in."""


@functools.cache
def _aiohttp_response_class() -> type[Any] | None:
    if not http_backend.aiohttp_installed():
        return None
    import aiohttp

    return aiohttp.ClientResponse


def aiohttp_response(response: httpx2.Response) -> Any | None:
    """The ``aiohttp.ClientResponse`` under an unread SDK response, or None."""
    cls = _aiohttp_response_class()
    if cls is None or response.is_stream_consumed or response.is_closed:
        return None
    wrapper = getattr(response.stream, "_stream", None)  # httpx2's BoundAsyncStream
    if type(wrapper).__name__ != _SDK_WRAPPER:
        return None
    raw = getattr(wrapper, "_aiohttp_response", None)
    return raw if isinstance(raw, cls) else None


def body_of(response: httpx2.Response) -> tuple[AsyncIterator[bytes], bool]:
    """The response's body as it arrives, and whether it comes straight from aiohttp.

    The response is marked consumed either way, so nothing reads it twice;
    close it with ``await response.aclose()``.
    """
    raw = aiohttp_response(response)
    if raw is None:
        return response.aiter_raw(), False
    response.is_stream_consumed = True
    body: AsyncIterator[bytes] = raw.content.iter_any()
    return body, True
