"""A streamed body's events however the network cuts it, and chunks only ``json.loads`` reads.

The chat stream reads the body's events with a push parser and decodes each
chunk with pydantic-core's JSON parser, falling back to ``json.loads`` for what
that parser refuses. A reply must read the same whatever the split of its
bytes, and the chunks ``json.loads`` always read (a lone surrogate escape,
bytes that are not UTF-8) must still reach the person.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from desktop_agent import Client
from desktop_agent.core import errors
from desktop_agent.core.types import TextBlock
from desktop_agent.core.wire.sse_events import SseEvents
from desktop_agent.core.wire.transport import ChatStream
from desktop_agent.testing import script


def _event(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode()


BODY = (b": keep-alive\r\n\r\n"
        b"data: " + _event("one") + b"\r\n\r\n"
        b"event: message\nid: 7\n"
        b"data: {\"choices\": [{\"index\": 0,\n"
        b"data: \"delta\": {\"content\": \"two\"}}]}\n\n"
        b"data:" + _event("three") + b"\n\n"
        b"data: [DONE]\n\n"
        b"data: " + _event("after the end") + b"\n\n")


async def _body(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def _texts(pieces: list[bytes]) -> tuple[list[str], bool]:
    stream = ChatStream(_body(pieces), "http://test")
    texts = [chunk["choices"][0]["delta"]["content"] async for chunk in stream.chunks()]
    return texts, stream.saw_done


async def test_every_split_of_the_body_gives_the_same_events() -> None:
    expected = (["one", "two", "three"], True)
    assert await _texts([BODY]) == expected
    for cut in range(1, len(BODY)):
        assert await _texts([BODY[:cut], BODY[cut:]]) == expected, cut
    assert await _texts([BODY[i:i + 1] for i in range(len(BODY))]) == expected


async def test_a_last_event_without_its_line_ending_is_still_read() -> None:
    texts, done = await _texts([b"data: " + _event("one") + b"\n\ndata: " + _event("last")])
    assert (texts, done) == (["one", "last"], False)


def test_a_line_past_the_cap_ends_the_stream_with_a_typed_error() -> None:
    events = SseEvents(max_line=64, base_url="http://test")
    events.feed(b"data: " + b"x" * 40)
    with pytest.raises(errors.MalformedStreamError, match="longer than 64 bytes"):
        events.feed(b"x" * 40)


CHUNKS_ONLY_JSON_LOADS_READS = {
    # json.loads keeps a lone surrogate; pydantic-core refuses it
    "a lone surrogate escape": (b'data: {"choices": [{"index": 0, "delta": '
                                b'{"content": "a\\ud800b"}}]}\n\n', "a\ud800b"),
    # bytes that are not UTF-8 were always read as U+FFFD
    "bytes that are not UTF-8": (b'data: {"choices": [{"index": 0, "delta": '
                                 b'{"content": "a\xffb"}}]}\n\n', "a\ufffdb"),
}


@pytest.mark.parametrize("name", list(CHUNKS_ONLY_JSON_LOADS_READS))
async def test_chunks_only_json_loads_reads_are_read_as_before(server, make_options,
                                                              name: str) -> None:
    raw, text = CHUNKS_ONLY_JSON_LOADS_READS[name]
    server.enqueue(script.from_chunks([
        raw, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]))
    async with Client(make_options()) as client:
        await client.query("go")
        items: list[Any] = [item async for item in client.receive_messages()]
    assert "".join(i.text for i in items if isinstance(i, TextBlock)) == text


async def test_a_malformed_chunk_is_skipped_and_the_reply_goes_on(server, make_options) -> None:
    server.enqueue(script.from_chunks([
        b"data: " + _event("Hello")[:-3] + b"\n\n",  # cut short: not JSON
        b"data: " + _event("Hello") + b"\n\n",
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]))
    async with Client(make_options()) as client:
        await client.query("go")
        items: list[Any] = [item async for item in client.receive_messages()]
    assert "".join(i.text for i in items if isinstance(i, TextBlock)) == "Hello"
