"""Client sessions through the core protocol (MemoryHistory), over real HTTP."""

import pytest

from desktop_agent import Client, ServerError
from desktop_agent.core.context.history_stores import HistoryStore, MemoryHistory
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


async def test_a_second_client_continues_where_the_first_stopped(server, make_options):
    session = MemoryHistory()
    assert isinstance(session, HistoryStore)
    async with Client(make_options(), session=session) as first:
        await first.query("hello")
        [item async for item in first.receive_messages()]
    async with Client(make_options(), session=session) as second:
        assert second.history == session.messages
        await second.query("again")
        [item async for item in second.receive_messages()]
    assert [m["content"] for m in server.requests[1]["messages"]] == [
        "hello", "You said: hello", "again"]
    assert len(session.messages) == 4


async def test_a_failed_turn_keeps_the_prompt_and_a_later_client_answers_it(server,
                                                                           make_options):
    session = MemoryHistory()
    server.enqueue(script.error(500, "model crashed"), script.error(500, "model crashed"),
                   script.error(500, "model crashed"))
    async with Client(make_options(), session=session) as client:
        await client.query("are you there?")
        with pytest.raises(ServerError):
            [item async for item in client.receive_messages()]
    assert session.messages == [{"role": "user", "content": "are you there?"}]
    server.enqueue(script.text("Yes, back now."))
    async with Client(make_options(), session=session) as later:
        texts = [getattr(i, "text", "") async for i in later.receive_messages()]
    assert "".join(texts) == "Yes, back now."
    assert session.messages[-1] == {"role": "assistant", "content": "Yes, back now."}


async def test_an_interrupted_turn_is_saved_with_what_arrived(server, make_options):
    session = MemoryHistory()
    server.enqueue(script.text(" ".join(["word"] * 400), delay=0.01))
    async with Client(make_options(), session=session) as client:
        await client.query("talk")
        async for item in client.receive_messages():
            if getattr(item, "text", ""):
                await client.interrupt()
    assert session.messages[0] == {"role": "user", "content": "talk"}
    assert session.messages[1]["role"] == "assistant"
    assert session.messages[1]["content"].startswith("word")
