"""One streamed chat-completion request: the openai SDK sends it, the core reads it.

The request goes out through the server's ``AsyncOpenAI``
(:mod:`~desktop_agent.core.wire.model_client`, aiohttp backend) as the wire
JSON as built: ``client.post("/chat/completions", content=..., stream=True,
cast_to=httpx2.Response)``. The SDK handles auth, retries before a response
and typed status errors; the body is read here as raw Server-Sent Events
(:mod:`~desktop_agent.core.wire.sse_events`) and each chunk decoded with
pydantic-core's JSON parser (on the aiohttp backend straight from the
aiohttp response the SDK holds, see
:mod:`~desktop_agent.core.wire.response_body`). The SDK's public way to the
raw body (``cast_to=httpx2.Response``, ``stream=True``) is used rather than its
``with_raw_response`` wrapper, which would build the typed stream's objects
around it. Reading the events ourselves
lets one malformed chunk be skipped instead of ending the stream, bounds a
line's length, and skips the SDK's typed chunk objects (~85 µs of CPU per
chunk, which the REST server reading many replies at once is bound by). The
SDK's status errors are mapped here to the core's own types by what the body
says (context too long, no vision, model not found).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from desktop_agent.core import errors
from desktop_agent.core.wire import http_backend
from desktop_agent.core.wire.model_client import (
    cause_chain,
    load_sdk,
    new_openai_client,
    reset_retry_policy,
    retry_policy_for_request,
)
from desktop_agent.core.wire.response_body import body_of
from desktop_agent.core.wire.retry import RetryPolicy
from desktop_agent.core.wire.sse_events import SseEvents

if TYPE_CHECKING:
    import httpx2
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


ERROR_BODY_LIMIT = 64 * 1024
"""Characters of an error response's body kept to say what went wrong."""


@functools.cache
def _client_errors() -> tuple[type[BaseException], ...]:
    return http_backend.transport_errors()


class ModelHttp:
    """How one Client reaches its model server: its ``AsyncOpenAI`` and its own headers.

    The SDK client is shared (from a
    :class:`~desktop_agent.core.wire.connection_pool.ConnectionPool`; closing this
    object leaves it open for the others) or this object's own, made on first
    use inside the running loop and closed by :meth:`close`.

    Attributes:
        base_url: The server's root URL, without a trailing slash.
        timeout: Seconds for connecting and for the response's head.
        headers: Sent with each request of this Client (its ``extra_headers``).
    """

    def __init__(self, base_url: str, api_key: str, timeout: float,
                 headers: Mapping[str, str] | None = None,
                 client: openai.AsyncOpenAI | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.api_key = api_key
        self.headers = dict(headers or {})
        self._client = client
        self._own = client is None

    def client(self) -> openai.AsyncOpenAI:
        """The server's SDK client (made now if this object owns one and has none yet)."""
        if self._client is None:
            self._client = new_openai_client(self.base_url, self.api_key)
            self._own = True
        return self._client

    async def close(self) -> None:
        """Close the SDK client if it is this object's own."""
        client, self._client = self._client, None
        if client is not None and self._own:
            await client.close()


def make_model_http(base_url: str, api_key: str, timeout: float,
                    headers: Mapping[str, str] | None = None,
                    client: Any = None) -> ModelHttp:
    """The connection a Client uses; ``client`` is a shared ``AsyncOpenAI`` (None: its own)."""
    return ModelHttp(base_url, api_key, timeout, headers, client)


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
        return _context_too_long(body, detail, model, kwargs)
    if status == 429:
        return errors.RateLimitError(f"The server is busy (429): {detail}", **kwargs)
    return errors.ServerError(f"The server answered {status}: {detail}", **kwargs)


# llama.cpp: "request (3021 tokens) exceeds the available context size (2048 tokens)";
# vLLM and OpenAI: "This model's maximum context length is 4096 tokens. However, you
# requested 5000 tokens (...)" / "... your messages resulted in 5000 tokens"
_WINDOW_PATTERNS = (re.compile(r"context size \((\d+) tokens\)"),
                    re.compile(r"maximum context length is (\d+) tokens"))
_PROMPT_PATTERNS = (re.compile(r"request \((\d+) tokens\)"),
                    re.compile(r"(?:requested|resulted in) (\d+) tokens"))


def _context_too_long(body: str, detail: str, model: str,
                      kwargs: dict[str, Any]) -> errors.ContextTooLongError:
    """The refusal of a prompt over the window, naming the window where the server did."""
    window = _figure(body, "n_ctx", _WINDOW_PATTERNS)
    prompt = _figure(body, "n_prompt_tokens", _PROMPT_PATTERNS)
    if window is None:
        return errors.ContextTooLongError(
            f"The conversation is longer than the model's context window: {detail}.",
            prompt_tokens=prompt, **kwargs)
    size = f" ({prompt:,} tokens)" if prompt else ""
    return errors.ContextTooLongError(
        f"The prompt{size} is longer than the context window the server runs {model} "
        f"with: {window:,} tokens per request.", window=window, prompt_tokens=prompt,
        **kwargs)


def _figure(body: str, key: str, patterns: tuple[re.Pattern[str], ...]) -> int | None:
    """A count the server gave: a field of its error object, else a figure in its words."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, TypeError):
        data = None
    error = data.get("error", data) if isinstance(data, dict) else None
    value = error.get(key) if isinstance(error, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    for pattern in patterns:
        match = pattern.search(body)
        if match:
            return int(match.group(1))
    return None


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
    """Name a transport failure in words a person can act on.

    ``exc`` may be the SDK's ``APIConnectionError`` / ``APITimeoutError``: the
    cause it was raised from says what really happened (the SDK's aiohttp
    backend reports a refused connection as a connect timeout).
    """
    chain = cause_chain(exc)
    refused = http_backend.refused_errors()
    if any(isinstance(e, refused) for e in chain):
        return errors.ServerConnectionError(
            f"Could not connect to {base_url}: is the server running?", base_url=base_url)
    timeouts = http_backend.timeout_errors()
    if any(isinstance(e, timeouts) for e in chain) or type(exc).__name__ == "APITimeoutError":
        return errors.RequestTimeoutError(
            f"The server at {base_url} did not answer in time.", base_url=base_url)
    cause = chain[-1]
    return errors.ServerConnectionError(
        f"The connection to {base_url} failed: {type(cause).__name__}", base_url=base_url)


class ChatStream:
    """An open streamed response; iterate :meth:`chunks`, always :meth:`close`.

    ``body`` yields the response body's bytes as they arrive; ``response`` is
    what is released or closed at the end (None when there is nothing to free).

    Attributes:
        direct: Whether the body is read straight from aiohttp rather than
            through the SDK's wrappers (:mod:`~desktop_agent.core.wire.response_body`).
        malformed_chunks: Chunks skipped because they were not a JSON object.
    """

    def __init__(self, body: AsyncIterator[bytes], base_url: str, response: Any = None, *,
                 direct: bool = False) -> None:
        self._response = response
        self._base_url = base_url
        self.direct = direct
        self._body = body.__aiter__()
        self._events = SseEvents(base_url=base_url)
        self._parse = _json_parser()
        self.malformed_chunks = 0

    @property
    def base_url(self) -> str:
        """The server this stream comes from."""
        return self._base_url

    @property
    def saw_done(self) -> bool:
        """Whether the stream ended with ``data: [DONE]``."""
        return self._events.done

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """Decoded chunks until ``[DONE]`` or the end of the body."""
        http_errors = _client_errors()
        events = self._events
        decode = self._decode
        try:
            async for block in self._body:
                for payload in events.feed(block):
                    chunk = decode(payload)
                    if chunk is not None:
                        yield chunk
                if events.done:
                    return
            for payload in events.finish():
                chunk = decode(payload)
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

    def _decode(self, payload: bytes) -> dict[str, Any] | None:
        """One event's data as a chunk; None when it was skipped as malformed.

        pydantic-core's JSON parser (pydantic's, which the openai SDK loads)
        reads the usual chunk in about a third of ``json.loads``'s time, bytes
        as they came. Whatever it refuses goes through ``json.loads`` as text,
        as every chunk did before: the JSON it refuses that ``json.loads`` reads
        (a lone surrogate escape, invalid UTF-8 read as U+FFFD, nesting past its
        limit) is read, or refused, exactly as before.
        """
        try:
            chunk = self._parse(payload, cache_strings="keys")
        except ValueError:
            return self._decode_text(payload.decode("utf-8", "replace"))
        if chunk.__class__ is dict and "error" not in chunk:
            return cast("dict[str, Any]", chunk)
        return self._checked(chunk)

    def _decode_text(self, payload: str) -> dict[str, Any] | None:
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
        return self._checked(chunk)

    def _checked(self, chunk: Any) -> dict[str, Any] | None:
        """A decoded chunk that is an object and not the server's error; None: skipped."""
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
        if self._events.done:
            # Best effort: we close either way. wait_for, not an asyncio.timeout
            # scope in this task: a drain cut by the scope could leave the
            # task's cancellation pending, and the next request's head timeout
            # then fired at once ("did not answer in time"; caught by
            # tests/e2e/llama/test_llama_long_run.py). wait_for costs a task per reply.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._drain(), 0.5)
        # A body read to its end returns the connection to the pool; one cut
        # short closes it (aiohttp decides by whether the payload is complete).
        await response.aclose()

    async def _drain(self) -> None:
        async for _ in self._body:
            pass


@functools.cache
def _json_parser() -> Callable[..., Any]:
    """pydantic-core's ``from_json``, imported at the first chunk (pydantic is loaded by then)."""
    from pydantic_core import from_json

    return from_json


def _wire_body(request: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body to send: the request with its ``extra_body`` keys merged on top."""
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


def _holds_image(request: Mapping[str, Any]) -> bool:
    """Whether a message of the request has an ``image_url`` content part.

    Read from the chat format itself: the content-part helpers
    (:mod:`~desktop_agent.core.context.content_parts`) sit above the wire.
    """
    return any(isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "image_url" for part in content)
        for content in (m.get("content") for m in request.get("messages", ())))


def _error_text(exc: openai.APIStatusError) -> str:
    """The start of an error response's body (already read by the SDK)."""
    try:
        return exc.response.text[:ERROR_BODY_LIMIT]
    except Exception:  # noqa: BLE001 - the status alone still says what happened
        return ""


async def open_stream(
    http: ModelHttp,
    request: dict[str, Any],
    *,
    base_url: str,
    api_key: str,
    retry: RetryPolicy,
    extra_headers: Mapping[str, str] | None = None,
) -> ChatStream:
    """Send a streamed chat request through the server's ``AsyncOpenAI``.

    The SDK retries connection errors, timeouts, 408/409/429/5xx and what a
    server marks ``x-should-retry``, up to ``retry.max_retries`` times, each
    wait from ``retry`` unless the server names one (``Retry-After``,
    ``retry-after-ms``); a request the server hung up on is sent once more
    whatever the policy says. Here a 4xx that names ``stream_options`` drops
    that option and remembers the server; other failures become the core's
    typed errors.
    """
    await load_sdk(streams=True)  # off the event loop the first time
    import httpx2
    import openai

    client = http.client()
    failures: tuple[type[BaseException], ...] = (openai.APIConnectionError, *_client_errors())
    # the body is read raw (not through a decoder), so it must come uncompressed:
    # httpx2 asks for gzip by default, and a proxy that honours it would hand
    # the reader compressed bytes
    headers = {**http.headers, **dict(extra_headers or {}), "Accept-Encoding": "identity"}
    # connect and the response's head within the timeout; silence between
    # chunks is the IdleTimer's (a read timeout would arm a timer per chunk)
    timeout = httpx2.Timeout(http.timeout, read=None)
    options: dict[str, Any] = {"headers": headers, "timeout": timeout,
                               "max_retries": retry.max_retries}
    token = retry_policy_for_request(retry)
    try:
        while True:
            body = _wire_body(request)
            if base_url in _NO_STREAM_OPTIONS:
                body.pop("stream_options", None)
            try:
                response = cast("httpx2.Response", await client.post(
                    "/chat/completions", cast_to=httpx2.Response,
                    content=json.dumps(body).encode(), options=cast(Any, options),
                    stream=True, stream_cls=openai.AsyncStream[Any]))
            except openai.APIStatusError as exc:
                text = _error_text(exc)
                if 400 <= exc.status_code < 500 and "stream_options" in body and \
                        "stream_options" in text.lower():
                    log.info("%s rejects stream_options; sending requests without it", base_url)
                    _NO_STREAM_OPTIONS.add(base_url)
                    continue
                error = map_status_error(exc.status_code, text, base_url, api_key,
                                         str(request.get("model")),
                                         images=_holds_image(request))
                error.request_id = exc.request_id
                raise error from None
            except failures as exc:
                raise map_connection_error(exc, base_url) from None
            reply, direct = body_of(response)
            return ChatStream(reply, base_url, response, direct=direct)
    finally:
        reset_retry_policy(token)
