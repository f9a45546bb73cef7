"""One streamed chat-completion request: HTTP, SSE decoding, error mapping, retries.

The openai SDK builds the request, sends it and raises typed errors for bad
statuses; the body is read here as raw Server-Sent Events and decoded with
``json.loads``. Reading the events ourselves is what lets one malformed chunk
be skipped instead of ending the stream, and it keeps the per-chunk cost below
the SDK's own model parsing.
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

from . import errors
from .content_parts import has_images
from .retry import RetryPolicy, is_retryable_status, parse_retry_after
from .sse_lines import bounded_lines

if TYPE_CHECKING:
    import openai

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


def http_modules() -> tuple[Any, ...]:
    """The HTTP libraries the openai SDK may use (httpx, or httpx2 in openai 3.x)."""
    import importlib

    modules = []
    for name in ("httpx", "httpx2"):
        try:
            modules.append(importlib.import_module(name))
        except ImportError:
            continue
    return tuple(modules)


def _http_error_types(*names: str) -> tuple[type[BaseException], ...]:
    return tuple(getattr(m, n) for m in http_modules() for n in names if hasattr(m, n))


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for the process.

    Building one loads the system's CA certificates (tens of milliseconds);
    without sharing, every new Client paid that on the event loop, which a
    window or a server starting many conversations feels.
    """
    return ssl.create_default_context()


def http_limits(max_keepalive: int, max_connections: int) -> Any:
    """Connection limits in the HTTP library the openai SDK's client is built on."""
    import importlib

    import openai

    base = openai.DefaultAsyncHttpxClient.__mro__[1]
    module = importlib.import_module(base.__module__.partition(".")[0])
    return module.Limits(max_keepalive_connections=max_keepalive,
                         max_connections=max_connections)


def make_openai_client(base_url: str, api_key: str, timeout: float,
                       headers: Mapping[str, str] | None = None,
                       http_client: Any = None) -> openai.AsyncOpenAI:
    """An SDK client with its own retries off: :func:`open_stream` owns retrying.

    ``http_client`` is a shared one from a
    :class:`~desktop_agent.core.connection_pool.ConnectionPool` (then closing
    the SDK client would close it for everyone: callers drop it instead); None
    gives the SDK client connections of its own.
    """
    import openai

    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "not-needed",
        timeout=timeout,
        max_retries=0,
        default_headers=dict(headers or {}),
        http_client=(http_client if http_client is not None
                     else openai.DefaultAsyncHttpxClient(verify=tls_context())),
    )


def _body_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if body is None:
        response = getattr(exc, "response", None)
        try:
            return str(response.text) if response is not None else ""
        except Exception:  # noqa: BLE001 - the body of a streamed response may be unread
            return ""
    if isinstance(body, dict | list):
        return json.dumps(body)
    return str(body)


def map_status_error(exc: Any, base_url: str, api_key: str, model: str, *,
                     images: bool = False) -> errors.APIError:
    """Turn an SDK status error into the core's exception for that situation.

    ``images`` says the request held a picture, so a refusal that names
    images means the model cannot see.
    """
    status = getattr(exc, "status_code", None)
    body = errors.redact(_body_text(exc), (api_key,))
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
    import openai

    timeouts = (openai.APITimeoutError, TimeoutError, *_http_error_types("TimeoutException"))
    if isinstance(exc, timeouts) or isinstance(exc.__cause__, timeouts):
        return errors.RequestTimeoutError(
            f"The server at {base_url} did not answer in time.", base_url=base_url)
    cause = exc.__cause__ or exc
    if isinstance(cause, (ConnectionRefusedError, *_http_error_types("ConnectError"))):
        return errors.ServerConnectionError(
            f"Could not connect to {base_url}: is the server running?", base_url=base_url)
    return errors.ServerConnectionError(
        f"The connection to {base_url} failed: {type(cause).__name__}", base_url=base_url)


class ChatStream:
    """An open streamed response; iterate :meth:`chunks`, always :meth:`close`."""

    def __init__(self, manager: Any, response: Any, base_url: str) -> None:
        self._manager = manager
        self._response = response
        self._base_url = base_url
        self._lines: AsyncIterator[str] = bounded_lines(
            response.iter_bytes(), base_url=base_url).__aiter__()
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
        http_errors = _http_error_types("HTTPError", "StreamError")
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
            timeout = isinstance(exc, _http_error_types("TimeoutException"))
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
        if self._saw_done:
            with contextlib.suppress(Exception):  # best effort: we close either way
                await asyncio.wait_for(self._drain(), 0.5)
        await self._manager.__aexit__(None, None, None)

    async def _drain(self) -> None:
        async for _ in self._lines:
            pass


def _hung_up(exc: BaseException) -> bool:
    """Whether the server closed the connection before any byte of a response."""
    cause = exc.__cause__ or exc.__context__
    return (isinstance(cause, _http_error_types("RemoteProtocolError"))
            and "without sending a response" in str(cause))


def _wire_body(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request as JSON to send, passed to the SDK as ``extra_body``.

    The SDK's ``create()`` walks every parameter against its TypedDicts
    (``async_maybe_transform``) before sending: for the message list that is
    typing introspection on every message of the history, about 9 ms per
    request after 20 turns and growing with the conversation, on the event
    loop. Our request is already wire JSON (plain dicts, lists and strings),
    so it goes as ``extra_body``, which the SDK merges over the (tiny)
    transformed parameters unchanged; the caller's own ``extra_body`` keys
    (e.g. llama.cpp's ``cache_prompt``) go on top, as before.
    """
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


async def open_stream(
    client: openai.AsyncOpenAI,
    request: dict[str, Any],
    *,
    base_url: str,
    api_key: str,
    retry: RetryPolicy,
    extra_headers: Mapping[str, str] | None = None,
) -> ChatStream:
    """Send a streamed chat request, retrying failures before any content.

    Connection errors, 429 and 5xx are retried with ``retry``; a 4xx that
    names ``stream_options`` drops that option and remembers the server.
    """
    import openai

    attempt = 0
    hung_up_once = False
    while True:
        body = dict(request)
        if base_url in _NO_STREAM_OPTIONS:
            body.pop("stream_options", None)
        manager = client.chat.completions.with_streaming_response.create(
            model=body["model"], messages=[], stream=True, extra_body=_wire_body(body),
            extra_headers=dict(extra_headers or {}) or None)
        try:
            response = await manager.__aenter__()
            return ChatStream(manager, response, base_url)
        except openai.APIStatusError as exc:
            status = exc.status_code
            text = _body_text(exc).lower()
            if (400 <= status < 500 and "stream_options" in body
                    and "stream_options" in text):
                log.info("%s rejects stream_options; sending requests without it", base_url)
                _NO_STREAM_OPTIONS.add(base_url)
                continue
            if is_retryable_status(status) and attempt < retry.max_retries:
                attempt += 1
                wait = retry.delay(attempt, parse_retry_after(exc.response.headers.get(
                    "retry-after")))
                log.info("server answered %s; retry %d in %.2fs", status, attempt, wait)
                await asyncio.sleep(wait)
                continue
            images = any(has_images(m.get("content")) for m in request.get("messages", ()))
            raise map_status_error(exc, base_url, api_key, str(request.get("model")),
                                   images=images) from None
        except (openai.APIConnectionError, OSError) as exc:
            if not hung_up_once and _hung_up(exc):
                # The server closed the kept-alive connection as the request went
                # out (llama.cpp's HTTP server times idle connections out after 5 s);
                # the request was never answered, so it is sent once more on a new
                # connection whatever the retry policy says.
                hung_up_once = True
                log.info("%s closed the connection without answering; sending again",
                         base_url)
                continue
            if attempt < retry.max_retries:
                attempt += 1
                wait = retry.delay(attempt)
                log.info("connection failed (%s); retry %d in %.2fs", type(exc).__name__,
                         attempt, wait)
                await asyncio.sleep(wait)
                continue
            raise map_connection_error(exc, base_url) from None
