"""A stream that just stops (no finish_reason, no [DONE]) is an incomplete reply, text kept."""

import pytest

from desktop_agent import Client, TextBlock, ToolUseBlock, tool
from desktop_agent.core import errors
from desktop_agent.testing.script import DONE, ChunkFactory, Script

pytestmark = pytest.mark.timeout(60)


@tool("get_weather", "Weather for a city", {"city": str})
async def get_weather(args):
    return "sunny"


async def test_a_truncated_stream_keeps_the_text_and_says_so(server, make_options):
    f = ChunkFactory()
    # LLMock's truncation fault: chunks, then the body ends cleanly
    server.enqueue(Script([f.delta({"content": "The answer is "}), f.delta({"content": "4"})]))
    seen = []
    async with Client(make_options()) as client:
        await client.query("2+2?")
        with pytest.raises(errors.IncompleteReplyError, match="ended the reply early") as caught:
            async for item in client.receive_messages():
                seen.append(item)
        assert isinstance(caught.value, errors.ServerConnectionError) and caught.value.mid_stream
        assert "".join(b.text for b in seen if isinstance(b, TextBlock)) == "The answer is 4"
        assert client.history[-1] == {"role": "assistant", "content": "The answer is 4"}
        assert client.turn_metadata["dropped"] is True


async def test_a_truncated_tool_call_is_not_run(server, make_options):
    f = ChunkFactory()
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Par'}}
    server.enqueue(Script([f.delta({"content": "Let me check. "}),
                           f.delta({"tool_calls": [call]})]))
    seen = []
    async with Client(make_options(tools=[get_weather], auto_execute_tools=True)) as client:
        await client.query("weather?")
        with pytest.raises(errors.IncompleteReplyError):
            async for item in client.receive_messages():
                seen.append(item)
        assert not any(isinstance(b, ToolUseBlock) for b in seen)
        assert client.history[-1] == {"role": "assistant", "content": "Let me check. "}
    assert len(server.requests) == 1


@pytest.mark.parametrize("ending", ["finish_only", "done_only"])
async def test_either_proper_ending_is_complete(server, make_options, ending):
    f = ChunkFactory()
    steps = [f.delta({"content": "Done."})]
    steps += [f.finish("stop")] if ending == "finish_only" else [DONE]
    server.enqueue(Script(steps))
    async with Client(make_options()) as client:
        await client.query("hi")
        items = [i async for i in client.receive_messages()]
        assert "".join(i.text for i in items if isinstance(i, TextBlock)) == "Done."
