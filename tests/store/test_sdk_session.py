"""SDK sessions in the app's store: a script and the window share one conversation."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_agent import AgentOptions, Client
from desktop_agent.store import NotFoundError, Store
from desktop_agent.store.store_history import StoreHistory
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(90)
HERE = Path(__file__).parent


def options(server: ScriptedServer) -> AgentOptions:
    return AgentOptions(model="test-model", base_url=server.base_url, system_prompt="Be brief.")


async def drain(client: Client) -> None:
    async for _ in client.receive_messages():
        pass


async def test_a_script_continues_a_conversation_the_window_started(store, server, tmp_path):
    # what the window writes when a person chats
    conversation = store.create_conversation("Trip planning", {"model": "test-model"})
    store.add_message(conversation.id, {"role": "user", "content": "Plan a trip to Lyon"})
    store.add_message(conversation.id, {"role": "assistant", "content": "Day 1: old town."},
                      metadata={"thinking": "short trip"})

    session = StoreHistory(store, conversation.id)
    async with Client(options(server), session=session) as client:
        assert [m["content"] for m in client.history] == ["Plan a trip to Lyon",
                                                          "Day 1: old town."]
        await client.query("Add a day 2")
        await drain(client)
    sent = server.requests[0]["messages"]
    assert [m["content"] for m in sent] == ["Be brief.", "Plan a trip to Lyon",
                                            "Day 1: old town.", "Add a day 2"]
    # a second connection to the same file, as the window has, sees the new turn
    with Store.open(store.path) as window_view:
        path = window_view.active_path(conversation.id)
    assert [r.message["content"] for r in path] == ["Plan a trip to Lyon", "Day 1: old town.",
                                                    "Add a day 2", "You said: Add a day 2"]
    assert path[-1].metadata == {"source": "sdk"}
    assert path[1].metadata["thinking"] == "short trip"  # the window's own data untouched


async def test_a_new_conversation_from_a_script_is_continued_by_another_process(server,
                                                                               tmp_path):
    db = tmp_path / "conversations.sqlite3"
    session = StoreHistory.open(None, db, title="From a script")
    try:
        async with Client(options(server), session=session) as client:
            await client.query("Remember the number 7")
            await drain(client)
    finally:
        session.close()
    assert session.conversation_id is not None
    server.enqueue(script.text("The number was 7."))
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(HERE / "sdk_session_process.py"), str(db),
         session.conversation_id, server.base_url, "Which number?"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(HERE.parents[1])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["loaded 2 messages", "The number was 7."]
    # the script in the other process sends no system prompt
    assert [m["content"] for m in server.requests[-1]["messages"]] == [
        "Remember the number 7", "You said: Remember the number 7", "Which number?"]
    with Store.open(db) as window_view:
        titles = [c.title for c in window_view.list_conversations()]
        assert titles == ["From a script"]
        assert window_view.count_messages(session.conversation_id) == 4


async def test_trimming_what_is_sent_keeps_the_stored_conversation_whole(store, server):
    conversation = store.create_conversation("Long")
    session = StoreHistory(store, conversation.id)
    async with Client(options(server), session=session) as client:
        for word in ("one", "two", "three"):
            await client.query(word)
            await drain(client)
        client.message_history = client.message_history[-2:]
        await client.query("four")
        await drain(client)
        assert len(client.history) == 4
    assert store.count_messages(conversation.id) == 8


async def test_an_unknown_conversation_is_a_typed_error(store, server):
    with pytest.raises(NotFoundError):
        async with Client(options(server), session=StoreHistory(store, "no-such-id")):
            pass


async def test_a_script_waits_its_turn_while_the_window_answers(store, server):
    from desktop_agent.store import ConversationBusyError

    conversation = store.create_conversation("Busy")
    async with Client(options(server), session=StoreHistory(store, conversation.id)) as client:
        await client.query("hello")
        with store.turn_lease(conversation.id, "window"):  # the window is mid-reply
            with pytest.raises(ConversationBusyError, match="window"):
                await drain(client)
            assert server.requests == []
        await drain(client)  # the window finished: the prompt is answered now
        assert client.history[-1]["content"] == "You said: hello"
    assert store.turn_lease_holder(conversation.id) is None  # given back after the turn


async def test_a_conversation_that_moved_on_elsewhere_is_not_forked(store, server, tmp_path):
    from desktop_agent.store import StaleParentError

    conversation = store.create_conversation("Shared")
    store.add_message(conversation.id, {"role": "user", "content": "first"})
    async with Client(options(server), session=StoreHistory(store, conversation.id)) as client:
        with Store.open(store.path) as window:
            window.add_message(conversation.id, {"role": "assistant", "content": "from window"})
        with pytest.raises(StaleParentError):
            await client.query("from the script")
    assert [r.message["content"] for r in store.active_path(conversation.id)] == [
        "first", "from window"]
