"""Patterns the seed's scripts rely on, over real HTTP to the scripted server."""

import asyncio

import pytest

from desktop_agent import Client, TextBlock, ToolUseBlock, Usage
from desktop_agent.testing import script
from desktop_agent.testing.script import ChunkFactory, Gate, Script

pytestmark = pytest.mark.timeout(60)


async def test_tool_results_given_while_the_reply_still_streams(server, make_options):
    server.enqueue(script.tool_calls([("add", {"a": 2, "b": 3}), ("add", {"a": 1, "b": 1})]),
                   script.text("2 + 3 is 5 and 1 + 1 is 2."))
    async with Client(make_options()) as client:
        await client.query("add things")
        async for block in client.receive_messages():
            if isinstance(block, ToolUseBlock):  # answered inside the loop, as the seed allows
                await client.add_tool_result(block.id, block.input["a"] + block.input["b"])
        answers = [m["content"] for m in client.history if m["role"] == "tool"]
        assert answers == ["5", "2"]
        texts = [b.text async for b in client.receive_messages() if isinstance(b, TextBlock)]
    assert "".join(texts) == "2 + 3 is 5 and 1 + 1 is 2."
    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert sent[2]["tool_call_id"] == sent[1]["tool_calls"][0]["id"]


async def test_add_tool_result_works_without_await(server, make_options):
    server.enqueue(script.tool_calls([("lookup", {"q": "x"})]), script.text("Found it."))
    async with Client(make_options()) as client:
        await client.query("look")
        calls = [b async for b in client.receive_messages() if isinstance(b, ToolUseBlock)]
        client.add_tool_result(calls[0].id, {"hit": True})  # the seed's method was not async
        reply = [b.text async for b in client.receive_messages() if isinstance(b, TextBlock)]
    assert "".join(reply) == "Found it."
    assert server.requests[1]["messages"][-1]["content"] == '{"hit": true}'


async def test_code_reading_text_on_every_item_sees_only_the_reply(server, make_options):
    server.enqueue(script.text("Plain answer."))
    async with Client(make_options()) as client:
        await client.query("hi")
        items = [item async for item in client.receive_messages()]
    assert isinstance(items[-1], Usage)
    assert "".join(item.text for item in items) == "Plain answer."


async def test_query_right_after_interrupt_from_another_task_is_accepted(server, make_options,
                                                                         gate):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "partial"}), Gate(gate, timeout=60),
                           f.delta({"content": " never"}), f.finish("stop")]),
                   script.text("Second answer."))
    async with Client(make_options()) as client:
        await client.query("long")
        first = asyncio.Event()

        async def read() -> None:  # the seed's "cancel button" pattern: reader in its own task
            async for item in client.receive_messages():
                if isinstance(item, TextBlock):
                    first.set()

        reader = asyncio.create_task(read())
        await first.wait()
        await client.interrupt()
        await client.query("next")  # at once: waits for the stopped turn instead of refusing
        reply = [b.text async for b in client.receive_messages() if isinstance(b, TextBlock)]
        await reader
    assert "".join(reply) == "Second answer."
    assert [m["role"] for m in server.requests[1]["messages"]] == ["user", "assistant", "user"]


async def test_interrupt_inside_the_loop_ends_the_turn_before_it_returns(server, make_options,
                                                                         gate):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "kept"}), Gate(gate, timeout=60),
                           f.delta({"content": " never"}), f.finish("stop")]))
    async with Client(make_options()) as client:
        await client.query("long")
        async for _ in client.receive_messages():
            await client.interrupt()
            assert not client.is_running  # the stream is closed; query() is accepted now
            break
        assert client.turn_metadata["interrupted"] is True
        assert client.history[-1] == {"role": "assistant", "content": "kept"}
