"""Text streams from a real llama.cpp server through ``query()`` and ``Client``."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable

import httpx
import pytest
from agent_fixtures import llama_options
from llama_process import LlamaServer

from desktop_agent import Client, ResultMessage, TextBlock, Usage, query

pytestmark = pytest.mark.e2e

PROMPT = "Write two sentences about the sea."
EVAL_LINE = re.compile(r"(?<!prompt )\beval time =.*?([0-9.]+) tokens per second")


def _server_eval_speeds(server: LlamaServer) -> list[float]:
    """The generation speeds llama-server printed, one per finished request."""
    text = server.log_path.read_text(errors="replace")
    return [float(m.group(1)) for m in EVAL_LINE.finditer(text)]


async def _speeds_after(server: LlamaServer, seen: int) -> list[float]:
    """Wait (bounded) until the server's log shows a request beyond the first ``seen``."""
    deadline = time.monotonic() + server.scaled_timeout(10)
    speeds = _server_eval_speeds(server)
    while len(speeds) <= seen and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        speeds = _server_eval_speeds(server)
    return speeds


def _log_count(server: LlamaServer, text: str) -> int:
    return server.log_path.read_text(errors="replace").count(text)


async def _log_grows(server: LlamaServer, text: str, before: int) -> bool:
    """Wait (bounded) until ``text`` appears in the server's log more than ``before`` times."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _log_count(server, text) > before:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_query_streams_real_text_in_pieces(llama_server: LlamaServer) -> None:
    texts: list[str] = []
    async for message in query(PROMPT, llama_options(llama_server, max_tokens=32)):
        if isinstance(message, ResultMessage):  # how the query ended, yielded last
            assert not message.is_error and message.result.strip()
            continue
        assert message.model == "smollm2"
        for block in message.content:
            assert isinstance(block, TextBlock)
            texts.append(block.text)

    assert len(texts) > 1, "the reply should arrive token by token, not in one piece"
    assert "".join(texts).strip()


async def test_client_reports_the_servers_usage_and_speed(
        start_llama_server: Callable[..., LlamaServer]) -> None:
    # A server of its own, so the next speed in its log belongs to this request (the
    # one before it is the start-up measurement of the server's speed).
    llama_server = start_llama_server()
    # llama.cpp logs a request's timings after it has answered, so the start-up
    # measurement's line can land after start() returned (seen on a busy machine:
    # this request was then compared with the start-up speed). Wait for it first.
    seen = len(await _speeds_after(llama_server, 0))
    items = []
    async with Client(llama_options(llama_server, max_tokens=32)) as client:
        await client.query(PROMPT)
        async for item in client.receive_messages():
            items.append(item)
        history = client.history

    *blocks, usage = items
    assert isinstance(usage, Usage)
    texts = [b.text for b in blocks if isinstance(b, TextBlock)]
    assert len(texts) > 1 and len(texts) == len(blocks)
    reply = "".join(texts)
    assert history == [{"role": "user", "content": PROMPT},
                       {"role": "assistant", "content": reply}]

    # Token counts are the server's: the same prompt counted by the server directly.
    async with httpx.AsyncClient(timeout=30) as http:
        raw = await http.post(f"{llama_server.base_url}/chat/completions", json={
            "model": "smollm2", "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 1})
    assert usage.prompt_tokens == raw.json()["usage"]["prompt_tokens"]
    assert usage.completion_tokens is not None and 0 < usage.completion_tokens <= 32
    assert usage.time_to_first_token is not None and usage.time_to_first_token > 0
    # Tokens per second is the server's own figure (llama.cpp's `timings`), which its
    # log prints with two decimals for the same request.
    speeds = await _speeds_after(llama_server, seen)
    assert usage.tokens_per_second is not None
    assert usage.tokens_per_second == pytest.approx(speeds[seen], abs=0.01)


async def test_client_keeps_a_multi_turn_conversation(llama_server: LlamaServer) -> None:
    async with Client(llama_options(llama_server, max_tokens=16)) as client:
        for prompt in ("Hello!", "What did I just say?"):
            await client.query(prompt)
            async for _item in client.receive_messages():
                pass
        history = client.history

    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert all(m["content"].strip() for m in history)
    assert client.last_usage is not None and client.last_usage.prompt_tokens is not None
    # the second request carried the first exchange
    assert client.last_usage.prompt_tokens > 20


async def test_interrupt_keeps_the_partial_reply_and_the_next_turn_works(
        llama_server: LlamaServer) -> None:
    received: list[str] = []
    cancels = _log_count(llama_server, "cancel task")
    async with Client(llama_options(llama_server, max_tokens=400)) as client:
        await client.query("Write a long story about a dragon who learns to bake bread.")
        async for item in client.receive_messages():
            if isinstance(item, TextBlock):
                received.append(item.text)
                if len(received) == 5:
                    await client.interrupt()
        partial = client.history
        interrupted = client.turn_metadata["interrupted"]
        # llama-server saw the connection close and stopped generating for it
        assert await _log_grows(llama_server, "cancel task", cancels)

        client.update_options(llama_options(llama_server, max_tokens=16))
        await client.query("Thanks!")
        items = [item async for item in client.receive_messages()]
        history = client.history

    assert interrupted and len(received) >= 5
    assert partial[-1] == {"role": "assistant", "content": "".join(received)}
    assert client.last_usage is not None and client.last_usage.completion_tokens
    assert any(isinstance(i, TextBlock) for i in items)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
