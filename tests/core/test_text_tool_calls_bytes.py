"""Text-written tool calls survive any split of the raw SSE bytes, non-ASCII included.

The body a server sends is cut at every byte boundary (inside UTF-8
characters, inside ``data:`` lines, inside the markup) and read through the
real SSE reader and aggregator; each format gives the calls its native form
would. One run per format goes end to end over HTTP through ``Client``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from desktop_agent import Client
from desktop_agent.core.types import TextBlock, ToolUseBlock
from desktop_agent.core.wire.stream import StreamAggregator
from desktop_agent.core.wire.transport import ChatStream
from desktop_agent.testing import script

CALL = ("read_file", {"path": "café/naïve.txt", "offset": 2})
FORMS = {
    "hermes": ('Je regarde…\n<tool_call>{"name": "read_file", "arguments": {"path": '
               '"café/naïve.txt", "offset": 2}}</tool_call>'),
    "mistral": ('Je regarde…[TOOL_CALLS][{"name": "read_file", "arguments": {"path": '
                '"café/naïve.txt", "offset": 2}}]'),
    "function": 'Je regarde…<function=read_file>{"path": "café/naïve.txt", "offset": 2}</function>',
    "python_tag": ('<|python_tag|>{"name": "read_file", "parameters": {"path": "café/naïve.txt", '
                   '"offset": 2}}<|eom_id|>'),
    "bare": '{"name": "read_file", "parameters": {"path": "café/naïve.txt", "offset": 2}}',
}


def sse_body(text: str, piece: int = 9) -> bytes:
    events = [{"choices": [{"index": 0, "delta": {"content": text[i:i + piece]}}]}
              for i in range(0, len(text), piece)]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n"
                    for e in events)
    return body + b"data: [DONE]\n\n"


async def _body(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def read(pieces: list[bytes]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    stream = ChatStream(_body(pieces), "http://test")
    aggregator = StreamAggregator("incremental")
    blocks = []
    async for chunk in stream.chunks():
        blocks += aggregator.feed(chunk)
    blocks += aggregator.finish()
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    return text, [(b.name, b.input) for b in blocks if isinstance(b, ToolUseBlock)]


@pytest.mark.parametrize("form", sorted(FORMS))
async def test_every_byte_split_gives_the_native_call(form: str) -> None:
    body = sse_body(FORMS[form])
    visible = FORMS[form].split("<")[0].split("[TOOL_CALLS]")[0] \
        if form in ("hermes", "mistral", "function") else ""
    for cut in range(1, len(body)):
        text, calls = await read([body[:cut], body[cut:]])
        assert calls == [CALL], cut
        assert text.strip() == visible.strip(), cut
    text, calls = await read([body[i:i + 1] for i in range(len(body))])
    assert calls == [CALL] and text.strip() == visible.strip()


@pytest.mark.parametrize("form", sorted(FORMS))
async def test_client_runs_the_call_sent_byte_by_byte(server, make_options, form: str) -> None:
    from desktop_agent.core.tooling.tools import Tool

    seen: list[dict[str, Any]] = []
    tool = Tool("read_file", "Read.", {"type": "object", "properties": {
        "path": {"type": "string"}, "offset": {"type": "integer"}}},
        lambda args: seen.append(args) or "contents")
    body = sse_body(FORMS[form])
    server.enqueue(script.from_chunks([body[i:i + 1] for i in range(len(body))], done=False),
                   script.text("Fini."))
    async with Client(make_options(tools=[tool], auto_execute_tools=True)) as client:
        await client.query("Lis le fichier")
        async for _ in client.receive_messages():
            pass
        history = client.history
    assert seen == [CALL[1]]
    call = history[1]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == CALL
    assert "<tool_call>" not in (history[1]["content"] or "")
    assert history[-1] == {"role": "assistant", "content": "Fini."}
