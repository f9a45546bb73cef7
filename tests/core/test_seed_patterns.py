"""Patterns the seed's scripts rely on, over real HTTP to the scripted server."""

import pytest

from desktop_agent import Client, TextBlock, ToolUseBlock, Usage
from desktop_agent.testing import script

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
