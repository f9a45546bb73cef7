"""One streamed chat-completion request: HTTP, SSE decoding, error mapping, retries.

The request goes out on aiohttp and the body is read here as raw Server-Sent
Events, decoded with ``json.loads``. Reading the events ourselves lets one
malformed chunk be skipped instead of ending the stream. aiohttp rather than
the openai SDK (on httpx) because of what a chunk costs: at 50 concurrent
streams httpx's streaming read took ~115 µs of CPU per chunk on a 2-core
machine and aiohttp (whose HTTP parser is written in C) ~38 µs, and the REST
server reading many replies at once is CPU-bound on exactly that. The SDK
also walked every message of the history with typing introspection before
each request (9 ms after 20 turns); here the body is the wire JSON as built.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from desktop_agent.core import errors
from desktop_agent.core.context.content_parts import has_images
from desktop_agent.core.wire.retry import RetryPolicy, is_retryable_status, parse_retry_after
from desktop_agent.core.wire.sse_lines import bounded_lines

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger("desktop_agent.transport")

# Base URLs whose server rejected ``stream_options``; remembered for the process.
_NO_STREAM_OPTIONS: set[str] = set()

_CONTEXT_MARKERS = (
    "context length", "context_length", "context size", "exceed_context", "maximum context",
    "too many tokens", "n_ctx", "context window", "prompt is too long", "too long",
)
# how servers word "this model cannot see" (llama.cpp without mmproj, LM Studio,
# vLLM, Ollama); read only when the request held a picture
_VISION_MARKERS = ("image input is not supported", "does not support image", "mmproj",
                   "not a multimodal model", "at most 0 image", "image_url",
                   "unsupported content", "vision")
_MODEL_MARKERS = ("model not found", "model_not_found", "no such model", "unknown model",
                  "invalid model name", "does not exist", "not found")


KEEPALIVE_SECONDS = 4.0
"""How long an idle connection to a model server is kept for the next request.

Below llama.cpp's own 5 s, so the app, not the server, closes it first and a
request is never sent on a connection the server is just closing."""

ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of an error response read to say what went wrong."""


@functools.cache
def _client_errors() -> tuple[type[BaseException], ...]:
    import aiohttp

    return (aiohttp.ClientError, OSError)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for the process.

    Building one loads the system's CA certificates (tens of milliseconds);
    without sharing, every new Client paid that on the event loop, which a
    window or a server starting many conversations feels.
    """
    return ssl.create_default_context()


def new_session(max_connections: int = 256) -> aiohttp.ClientSession:
    """An aiohttp session for model servers: pooled keep-alive connections.

    Timeouts are set per request by :func:`open_stream` (the wait for the
    response) and per stream by :class:`~desktop_agent.core.wire.stream_guard.IdleTimer` (silence
    between chunks), not per socket read, which would arm a timer per chunk.
    The environment's proxy is passed per request (:func:`env_proxy`), not
    through ``trust_env``.
    """
    import aiohttp

    connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0,
                                     ssl=tls_context(), keepalive_timeout=KEEPALIVE_SECONDS)
    return aiohttp.ClientSession(connector=connector, trust_env=False,
                                 timeout=aiohttp.ClientTimeout(total=None),
                                 skip_auto_headers=("User-Agent",),
                                 headers={"User-Agent": "desktop-agent"})


_ENV_PROXIES: dict[str, tuple[Any, Any]] = {}
"""The environment's proxy and its login for each request URL, once looked up."""


async def env_proxy(url: str) -> tuple[Any, Any]:
    """The proxy the environment names for ``url`` and its login, or ``(None, None)``.

    The same rules as aiohttp's ``trust_env`` (``HTTP(S)_PROXY``, ``NO_PROXY``,
    a proxy login in ~/.netrc), looked up once per URL (one per model server).
    With ``trust_env`` aiohttp looked them up in a worker thread before every
    request (reading ~/.netrc may block): one thread hand-off per model request,
    which on a small machine with 50 turns starting at once was a visible share
    of the start-up work. A proxy set after start-up applies after a restart.
    """
    known = _ENV_PROXIES.get(url)
    if known is None:
        known = _ENV_PROXIES[url] = await asyncio.to_thread(_lookup_env_proxy, url)
    return known


def _lookup_env_proxy(url: str) -> tuple[Any, Any]:
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:  # none for this URL, or NO_PROXY says go direct
        return None, None


class ModelHttp:
    """How one Client reaches its model server: the URL, its headers and an HTTP session.

    The session is shared (from a
    :class:`~desktop_agent.core.wire.connection_pool.ConnectionPool`; closing this
    object leaves it open for the others) or this object's own, made on first
    use inside the running loop and closed by :meth:`close`.
    """

    def __init__(self, base_url: str, api_key: str, timeout: float,
                 headers: Mapping[str, str] | None = None,
                 session: aiohttp.ClientSession | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Authorization": f"Bearer {api_key or 'not-needed'}",
                        "Content-Type": "application/json", **dict(headers or {})}
        self._session = session
        self._own = session is None

    def session(self) -> aiohttp.ClientSession:
        """The HTTP session (made now if this object owns one and has none yet)."""
        if self._session is None:
            self._session = new_session()
            self._own = True
        return self._session

    async def close(self) -> None:
        """Close the session if it is this object's own."""
        session, self._session = self._session, None
        if session is not None and self._own:
            await session.close()


def make_model_http(base_url: str, api_key: str, timeout: float,
                    headers: Mapping[str, str] | None = None,
                    session: Any = None) -> ModelHttp:
    """The connection a Client uses; ``session`` is a shared one (None: its own)."""
    return ModelHttp(base_url, api_key, timeout, headers, session)


def map_status_error(status: int, body_text: str, base_url: str, api_key: str, model: str, *,
                     images: bool = False) -> errors.APIError:
    """Turn an error status and its body into the core's exception for that situation.

    ``images`` says the request held a picture, so a refusal that names
    images means the model cannot see.
    """
    body = errors.redact(body_text, (api_key,))
    lowered = body.lower()
    kwargs: dict[str, Any] = {"status": status, "body": body, "base_url": base_url}
    detail = _error_message(body) or f"HTTP {status}"
    if status in (401, 403):
        return errors.AuthenticationError(
            f"The server at {base_url} refused the API key ({status}): {detail}", **kwargs)
    if status == 404 or (status == 400 and any(m in lowered for m in _MODEL_MARKERS[:5])):
        return errors.ModelNotFoundError(
            f"The server at {base_url} does not have the model {model!r}: {detail}", **kwargs)
    if images and status in (400, 422, 500, 501) and any(m in lowered for m in _VISION_MARKERS):
        return errors.VisionNotSupportedError(
            f"The model {model!r} at {base_url} refused the image (it cannot see images, or "
            f"the server was started without vision support): {detail}", **kwargs)
    if status in (400, 413, 422) and any(m in lowered for m in _CONTEXT_MARKERS):
        return errors.ContextTooLongError(
            f"The conversation is longer than the model's context window: {detail}", **kwargs)
    if status == 429:
        return errors.RateLimitError(f"The server is busy (429): {detail}", **kwargs)
    return errors.ServerError(f"The server answered {status}: {detail}", **kwargs)


def _error_message(body: str) -> str:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        return body[:300]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)[:300]
        return str(err)[:300]
    return body[:300]


def map_connection_error(exc: BaseException, base_url: str) -> errors.ServerConnectionError:
    """Name a transport failure in words a person can act on."""
    import aiohttp

    if isinstance(exc, TimeoutError | aiohttp.ServerTimeoutError):
        return errors.RequestTimeoutError(
            f"The server at {base_url} did not answer in time.", base_url=base_url)
    if isinstance(exc, ConnectionRefusedError | aiohttp.ClientConnectorError):
        return errors.ServerConnectionError(
            f"Could not connect to {base_url}: is the server running?", base_url=base_url)
    cause = exc.__cause__ or exc
    return errors.ServerConnectionError(
        f"The connection to {base_url} failed: {type(cause).__name__}", base_url=base_url)


class ChatStream:
    """An open streamed response; iterate :meth:`chunks`, always :meth:`close`.

    ``body`` yields the response body's bytes as they arrive; ``response`` is
    what is released or closed at the end (None when there is nothing to free).
    """

    def __init__(self, body: AsyncIterator[bytes], base_url: str, response: Any = None) -> None:
        self._response = response
        self._base_url = base_url
        self._lines: AsyncIterator[str] = bounded_lines(body, base_url=base_url).__aiter__()
        self._saw_done = False
        self.malformed_chunks = 0

    @property
    def base_url(self) -> str:
        """The server this stream comes from."""
        return self._base_url

    @property
    def saw_done(self) -> bool:
        """Whether the stream ended with ``data: [DONE]``."""
        return self._saw_done

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """Decoded chunks until ``[DONE]`` or the end of the body."""
        http_errors = _client_errors()
        data_lines: list[str] = []
        try:
            async for line in self._lines:
                if line.startswith("data:"):
                    data_lines.append(line[5:].lstrip(" ") if len(line) > 5 else "")
                    if len(data_lines) == 1 and line.endswith("}"):
                        # the common case: one data line per event; decode now
                        payload = data_lines.pop()
                        chunk = self._decode(payload)
                        if chunk is not None:
                            yield chunk
                    continue
                if line:
                    continue  # event:, id:, retry: fields and ': comments'
                if not data_lines:
                    continue
                payload = "\n".join(data_lines)
                data_lines.clear()
                if payload.strip() == "[DONE]":
                    self._saw_done = True
                    return
                chunk = self._decode(payload)
                if chunk is not None:
                    yield chunk
        except http_errors as exc:
            timeout = isinstance(exc, TimeoutError)
            error_type = errors.RequestTimeoutError if timeout else errors.ServerConnectionError
            error = error_type(
                f"The connection to {self._base_url} dropped mid-reply "
                f"({type(exc).__name__}).", base_url=self._base_url)
            error.mid_stream = True  # the client may retry if nothing had arrived yet
            raise error from exc

    def _decode(self, payload: str) -> dict[str, Any] | None:
        try:
            chunk = json.loads(payload)
        except RecursionError:
            raise errors.MalformedStreamError(
                f"The server at {self._base_url} sent a chunk nested too deeply to read.",
                base_url=self._base_url) from None
        except json.JSONDecodeError:
            self.malformed_chunks += 1
            log.warning("skipped a malformed chunk from %s: %.120r", self._base_url, payload)
            return None
        if not isinstance(chunk, dict):
            self.malformed_chunks += 1
            return None
        if "error" in chunk and not chunk.get("choices"):
            err = chunk["error"]
            message = err.get("message") if isinstance(err, dict) else str(err)
            raise errors.ServerError(f"The server reported an error mid-reply: {message}",
                                     body=json.dumps(chunk)[:1000], base_url=self._base_url)
        return chunk

    async def close(self) -> None:
        """Release the HTTP response (also on cancellation).

        After ``[DONE]`` the rest of the body (normally just the chunked
        terminator) is read briefly, so the connection goes back to the pool
        instead of being thrown away; an interrupted reply is closed at once.
        """
        response, self._response = self._response, None
        if response is None:
            return
        if self._saw_done:
            with contextlib.suppress(Exception):  # best effort: we close either way
                await asyncio.wait_for(self._drain(), 0.5)
            response.release()
        else:
            response.close()

    async def _drain(self) -> None:
        async for _ in self._lines:
            pass


def _hung_up(exc: BaseException) -> bool:
    """Whether the server closed the connection before any byte of a response."""
    import aiohttp

    return isinstance(exc, aiohttp.ServerDisconnectedError)


def _wire_body(request: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body to send: the request with its ``extra_body`` keys merged on top."""
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


async def _error_text(response: Any) -> str:
    """The start of an error response's body (for the message), never raising."""
    try:
        data = await asyncio.wait_for(response.content.read(ERROR_BODY_LIMIT), 5.0)
        return bytes(data).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the status alone still says what happened
        return ""
    finally:
        response.close()


async def open_stream(
    http: ModelHttp,
    request: dict[str, Any],
    *,
    base_url: str,
    api_key: str,
    retry: RetryPolicy,
    extra_headers: Mapping[str, str] | None = None,
) -> ChatStream:
    """Send a streamed chat request, retrying failures before any content.

    Connection errors, 429 and 5xx are retried with ``retry``; a 4xx that
    names ``stream_options`` drops that option and remembers the server. A
    request the server closed the connection on without answering is sent
    once more on a new connection whatever the retry policy says: llama.cpp's
    HTTP server times idle keep-alive connections out, and a request sent on
    one just then was never answered.
    """
    url = f"{http.base_url}/chat/completions"
    headers = {**http.headers, **dict(extra_headers or {})}
    proxy, proxy_auth = await env_proxy(url)
    retries = retry.begin()
    hung_up_once = False
    while True:
        body = _wire_body(request)
        if base_url in _NO_STREAM_OPTIONS:
            body.pop("stream_options", None)
        failures: tuple[type[BaseException], ...] = (*_client_errors(), TimeoutError)
        try:
            async with asyncio.timeout(http.timeout):  # connecting and the response's head
                response = await http.session().post(
                    url, data=json.dumps(body).encode(), headers=headers,
                    proxy=proxy, proxy_auth=proxy_auth)
        except failures as exc:
            if not hung_up_once and _hung_up(exc):
                hung_up_once = True
                log.info("%s closed the connection without answering; sending again",
                         base_url)
                continue
            wait = retries.next_delay()
            if wait is None:
                raise map_connection_error(exc, base_url) from None
            log.info("connection failed (%s); retry %d in %.2fs", type(exc).__name__,
                     retries.retries, wait)
            await asyncio.sleep(wait)
            continue
        status = response.status
        if status < 400:
            return ChatStream(response.content.iter_any(), base_url, response)
        retry_after = response.headers.get("retry-after")
        text = await _error_text(response)
        if 400 <= status < 500 and "stream_options" in body and \
                "stream_options" in text.lower():
            log.info("%s rejects stream_options; sending requests without it", base_url)
            _NO_STREAM_OPTIONS.add(base_url)
            continue
        wait = retries.next_delay(parse_retry_after(retry_after)) \
            if is_retryable_status(status) else None
        if wait is not None:
            log.info("server answered %s; retry %d in %.2fs", status, retries.retries, wait)
            await asyncio.sleep(wait)
            continue
        images = any(has_images(m.get("content")) for m in request.get("messages", ()))
        raise map_status_error(status, text, base_url, api_key, str(request.get("model")),
                               images=images)
