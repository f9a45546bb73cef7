"""A side request read whole: a request beside the turn whose reply nobody watches stream.

The compaction summary and an MCP server's sampling request both send one body to the
conversation's server and want only the finished reply: the same transport, retry
policy and idle limit as the turn, no tool calls read (``"off"``), nothing yielded on
the way.
"""

from __future__ import annotations

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
    stream = await open_stream(http, body, base_url=options.base_url, api_key=options.api_key,
                               retry=options.retry, extra_headers=options.extra_headers)
    aggregator = StreamAggregator(options.text_delta_mode, "off")
    idle = IdleTimer(options.timeout, options.base_url)
    try:
        chunks = stream.chunks()
        while True:
            try:
                chunk = await idle.next(chunks)
            except StopAsyncIteration:
                break
            aggregator.feed(chunk)
        aggregator.finish()
    finally:
        idle.close()
        await stream.close()
    return aggregator
