"""Reading one model reply: the request, the stream, retry before content, interrupt.

One request is sent and its chunks are turned into blocks as they arrive. A
connection that drops before any content is retried; an interrupt keeps what
arrived so far. What to do with the finished reply (history, tools) is the
turn loop's business, not this module's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from desktop_agent.core import errors
from desktop_agent.core.turn_control import TurnControl
from desktop_agent.core.types import Block, PromptProgressBlock, ToolUseBlock, ToolUseError
from desktop_agent.core.wire.stream import StreamAggregator
from desktop_agent.core.wire.stream_guard import IdleTimer, StreamGuard, ended_without_finish
from desktop_agent.core.wire.transport import ChatStream, open_stream
from desktop_agent.core.wire.usage import UsageTotals
from desktop_agent.core.wire.wire_settings import WireSettings

log = logging.getLogger("desktop_agent.client")


async def read_reply(http: Any, options: WireSettings, request: dict[str, Any],
                     aggregator: StreamAggregator, usage: UsageTotals, control: TurnControl,
                     metadata: dict[str, Any]) -> AsyncIterator[Block]:
    """One reply, retried if the connection drops before any content arrived.

    Args:
        http: The OpenAI client to send with.
        options: Server, limits and retry policy.
        request: The request, sent as it is again for each attempt (not changed here).
        aggregator: Collects the reply; the caller reads it afterwards.
        usage: Adds this reply's figures.
        control: The turn's interrupt switch.
        metadata: The turn's metadata (``requests`` is counted here).
    """
    retries = options.retry.begin()
    while True:
        try:
            async for block in _attempt(http, options, request, aggregator, usage, control,
                                        metadata):
                yield block
            return
        except errors.ServerConnectionError as exc:
            if (not getattr(exc, "mid_stream", False) or aggregator.content_chunks
                    or control.interrupt_requested):
                raise
            wait = retries.next_delay()
            if wait is None:
                raise
            log.info("connection dropped before any content; retry %d in %.2fs",
                     retries.retries, wait)
            await asyncio.sleep(wait)


async def _attempt(http: Any, options: WireSettings, request: dict[str, Any],
                   aggregator: StreamAggregator, usage: UsageTotals, control: TurnControl,
                   metadata: dict[str, Any]) -> AsyncIterator[Block]:
    """One request: stream its blocks; on interrupt keep what arrived."""
    metadata["requests"] = metadata.get("requests", 0) + 1
    sent_at = time.perf_counter()
    first_at: float | None = None
    stream: ChatStream | None = None
    idle = IdleTimer(options.timeout, options.base_url)
    try:
        control.awaiting_server = True
        try:
            stream = await open_stream(
                http, request, base_url=options.base_url,
                api_key=options.api_key, retry=options.retry,
                extra_headers=options.extra_headers)
            chunks = stream.chunks()
            guard = StreamGuard(options.max_tokens, options.base_url)
            while True:
                control.awaiting_server = True
                try:
                    chunk = await idle.next(chunks)
                except StopAsyncIteration:
                    break
                finally:
                    control.awaiting_server = False
                guard.check(chunk)
                blocks = aggregator.feed(chunk)
                if blocks:
                    if first_at is None and not _only_progress(blocks):
                        first_at = time.perf_counter()
                    for block in blocks:
                        yield block
                if control.interrupt_requested:
                    break
        except asyncio.CancelledError:
            if not control.interrupt_requested:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            control.awaiting_server = False
        if not control.interrupt_requested:
            ended_early = ended_without_finish(aggregator, stream)
            for block in aggregator.finish():
                if first_at is None:
                    first_at = time.perf_counter()
                if not (ended_early and isinstance(block, ToolUseBlock | ToolUseError)):
                    yield block
            if ended_early:
                raise ended_early
        else:
            aggregator.finish_reason = aggregator.finish_reason or "interrupted"
    finally:
        idle.close()
        if stream is not None:
            await asyncio.shield(stream.close())
        usage.add(aggregator, sent_at, first_at, time.perf_counter())


def _only_progress(blocks: list[Block]) -> bool:
    """Prompt progress comes before the first token and must not count as it."""
    return all(isinstance(b, PromptProgressBlock) for b in blocks)
