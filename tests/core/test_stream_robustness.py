"""Replies of the wrong shape, without end, or silent but for keep-alives; reused call ids.

Each over real HTTP from the scripted server: the turn ends with a typed
AgentError (never AttributeError, TypeError or RecursionError), the history
stays valid (the next turn works), and nothing grows without bound.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from desktop_agent import Client, tool
from desktop_agent.core import errors
from desktop_agent.core.types import TextBlock, ToolResultBlock, ToolUseBlock
from desktop_agent.core.wire.stream_guard import MIN_CHAR_CAP, IdleTimer
from desktop_agent.testing import script
from desktop_agent.testing.script import Chunk, Pause, Raw


def _chunk(delta: Any = None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"id": "x", "object": "chat.completion.chunk", "model": "m",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    data.update(extra)
    return data


async def _turn(client: Client, prompt: str) -> list[Any]:
    await client.query(prompt)
    return [item async for item in client.receive_messages()]


def _valid(history: list[dict[str, Any]]) -> None:
    calls = {c["id"] for m in history if m["role"] == "assistant"
             for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in history if m["role"] == "tool"}
    assert calls == answered
    assert all(isinstance(m.get("content"), str | None) for m in history)


MALFORMED = {
    "choices a list of numbers": script.from_chunks([{"choices": [1, 2, 3]}]),
    "content a number": script.from_chunks([_chunk({"content": "ok "}),
                                            _chunk({"content": 5})]),
    "delta a string": script.from_chunks([_chunk("hello")]),
    "tool name a number": script.from_chunks([_chunk(
        {"tool_calls": [{"index": 0, "id": "c", "function": {"name": 7, "arguments": "{}"}}]})]),
    "100,000-deep nesting": script.from_chunks(
        [b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"]),
}


@pytest.mark.parametrize("name", list(MALFORMED))
async def test_wrong_shaped_chunks_raise_a_typed_error_and_keep_history_valid(
        server, make_options, name: str) -> None:
    server.enqueue(MALFORMED[name], script.text("Recovered."))
    async with Client(make_options()) as client:
        with pytest.raises(errors.MalformedStreamError, match=r"sent|nested") as caught:
            await _turn(client, "first")
        assert isinstance(caught.value, errors.AgentError)
        _valid(client.history)
        items = await _turn(client, "second")
        assert "".join(i.text for i in items if isinstance(i, TextBlock)) == "Recovered."
        _valid(client.history)


async def test_a_reply_past_the_cap_for_max_tokens_is_stopped_and_kept(
        server, make_options) -> None:
    piece = "word " * 200  # 1,000 characters a chunk, 200,000 in all
    server.enqueue(script.from_chunks([_chunk({"content": piece}) for _ in range(200)]))
    async with Client(make_options(max_tokens=100)) as client:
        with pytest.raises(errors.ReplyTooLongError, match="far beyond max_tokens"):
            await _turn(client, "talk forever")
        kept = client.history[-1]
    assert kept["role"] == "assistant"
    assert MIN_CHAR_CAP <= len(kept["content"]) <= MIN_CHAR_CAP + len(piece)


async def test_keep_alive_comments_do_not_reset_the_idle_timeout(server, make_options) -> None:
    steps: list[Any] = [Chunk(_chunk({"content": "Thinking"}))]
    for _ in range(60):  # 12 s of nothing but comments
        steps += [Raw(b": keep-alive\n\n"), Pause(0.2)]
    server.enqueue(script.Script(steps))
    async with Client(make_options(timeout=1.0)) as client:
        with pytest.raises(errors.RequestTimeoutError, match="keep-alive comments do not count"):
            await _turn(client, "hello")
        assert client.history[-1] == {"role": "assistant", "content": "Thinking"}


async def test_the_idle_timeout_counts_from_each_chunk_not_from_the_start(
        server, make_options) -> None:
    # Chunks 0.6 s apart under a 1 s timeout: 2.4 s in all, never 1 s of silence.
    steps: list[Any] = []
    for word in ("one ", "two ", "three ", "four"):
        steps += [Pause(0.6), Chunk(_chunk({"content": word}))]
    steps += [Chunk(_chunk({}, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])),
              Raw(b"data: [DONE]\n\n")]
    server.enqueue(script.Script(steps))
    async with Client(make_options(timeout=1.0)) as client:
        items = await _turn(client, "slowly")
    assert "".join(i.text for i in items if isinstance(i, TextBlock)) == "one two three four"


async def _never() -> AsyncIterator[dict[str, Any]]:
    await asyncio.Event().wait()
    yield {}


async def test_an_interrupt_at_the_moment_the_idle_timer_fires_stays_an_interrupt() -> None:
    timer = IdleTimer(0.05)

    async def wait() -> dict[str, Any]:
        return await timer.next(_never().__aiter__())

    task = asyncio.create_task(wait())
    await asyncio.sleep(0)  # the wait has begun and armed the timer
    loop = asyncio.get_running_loop()
    loop.call_at(loop.time() + 0.05, task.cancel)  # due with the timer, in the same turn
    with pytest.raises(asyncio.CancelledError):
        await task
    timer.close()


async def test_silence_alone_ends_the_wait_with_a_timeout_error() -> None:
    timer = IdleTimer(0.05, "http://model.invalid/v1")
    with pytest.raises(errors.RequestTimeoutError, match=r"model\.invalid"):
        await timer.next(_never().__aiter__())
    timer.close()


async def test_duplicate_tool_call_ids_are_made_unique_before_history(
        server, make_options) -> None:
    @tool("note", "Takes a note.", {"text": str})
    def note(args: dict[str, Any]) -> str:
        return f"noted {args['text']}"

    server.enqueue(script.tool_calls([("note", {"text": "a"}), ("note", {"text": "b"})],
                                     ids=["call_1", "call_1"]),
                   script.text("First done."),
                   script.tool_calls([("note", {"text": "c"})], ids=["call_1"]),
                   script.text("Second done."))
    async with Client(make_options(tools=[note], auto_execute_tools=True)) as client:
        first = await _turn(client, "two notes")
        second = await _turn(client, "one more")
        history = client.history
    uses = [i for i in first + second if isinstance(i, ToolUseBlock)]
    results = [i for i in first + second if isinstance(i, ToolResultBlock)]
    assert len({u.id for u in uses}) == 3
    assert [r.tool_use_id for r in results] == [u.id for u in uses]
    assert [r.content for r in results] == ["noted a", "noted b", "noted c"]
    _valid(history)
    sent = json.dumps(server.requests[-1]["messages"])
    assert sent.count('"tool_call_id"') == 3
