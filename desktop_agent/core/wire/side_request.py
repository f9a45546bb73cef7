"""A side request read whole: a request beside the turn whose reply nobody watches stream.

The compaction summary and an MCP server's sampling request both send one body to the
conversation's server and want only the finished reply: the same transport, retry
policy and idle limit as the turn, no tool calls read (``"off"``), nothing yielded on
the way.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from desktop_agent.core.wire.stream import StreamAggregator
from desktop_agent.core.wire.stream_guard import IdleTimer
from desktop_agent.core.wire.transport import open_stream
from desktop_agent.core.wire.wire_settings import WireSettings


async def read_whole_reply(http: Any, body: dict[str, Any],
                           options: WireSettings) -> StreamAggregator:
    """Send ``body`` (``extra_body`` added from ``options``) and read its reply to the end.

    Raises what the turn's own requests raise (the transport's errors, an idle stream).
    """
    if options.extra_body:
        body = {**body, "extra_body": dict(options.extra_body)}
    aggregator = StreamAggregator(options.text_delta_mode, "off")
    async with aclosing(_chunks(http, body, options)) as chunks:
        async for chunk in chunks:
            aggregator.feed(chunk)
    aggregator.finish()
    return aggregator


async def first_token_logprobs(http: Any, body: dict[str, Any],
                               options: WireSettings) -> dict[str, float] | None:
    """Send ``body`` as it is and return the log-probabilities of its first token's options.

    ``body`` (a turn's request made over, its ``extra_body`` already in it) asks for
    ``logprobs`` and ``top_logprobs`` (OpenAI's fields; llama.cpp, vLLM and recent
    Ollama answer them); the reply's text is not wanted. None when the server sent
    none (it ignores the fields). The token strings are the server's own, spaces
    included. Raises what the turn's own requests raise.
    """
    found: dict[str, float] | None = None
    async with aclosing(_chunks(http, body, options)) as chunks:
        async for chunk in chunks:
            if found is None:
                found = _top_logprobs(chunk)
    return found


async def _chunks(http: Any, body: dict[str, Any],
                  options: WireSettings) -> AsyncGenerator[dict[str, Any], None]:
    """The reply's chunks to its end, each within the idle limit; the stream closed after.

    Callers hold it in ``aclosing`` so the stream closes when they stop early too.
    """
    stream = await open_stream(http, body, base_url=options.base_url, api_key=options.api_key,
                               retry=options.retry, extra_headers=options.extra_headers)
    idle = IdleTimer(options.timeout, options.base_url)
    try:
        chunks = stream.chunks()
        while True:
            try:
                chunk = await idle.next(chunks)
            except StopAsyncIteration:
                return
            yield chunk
    finally:
        idle.close()
        await stream.close()


def _top_logprobs(chunk: dict[str, Any]) -> dict[str, float] | None:
    """The first token's ``top_logprobs`` in a chunk, as token -> log-probability."""
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    logprobs = choices[0].get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    top = content[0].get("top_logprobs")
    if not isinstance(top, list):
        return None
    return {entry["token"]: float(entry["logprob"]) for entry in top
            if isinstance(entry, dict) and isinstance(entry.get("token"), str)
            and isinstance(entry.get("logprob"), int | float)}
