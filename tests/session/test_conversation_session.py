"""ConversationSession against a real store file and the scripted model server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from desktop_agent.session import events as ev
from desktop_agent.session.approvals import ApprovalAnswer, ApprovalChoice
from desktop_agent.session.conversation import NotConfiguredError, NothingToAnswerError
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script


async def finished(session: Any) -> None:
    for _ in range(1000):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn did not end")


async def test_a_turn_reports_events_in_order_and_stores_the_reply(
        make_session: Any, model_server: ScriptedServer, store: Store) -> None:
    model_server.enqueue(script.text("Hello there."))
    session = make_session(tools=[])
    session.send("Hi")
    await finished(session)
    kinds = [type(e).__name__ for e in session.events]
    assert kinds[:2] == ["UserMessageAdded", "StateChanged"]
    assert kinds[-3:] == ["MessageStored", "ReplyEnded", "StateChanged"]
    assert "".join(e.text for e in session.events if isinstance(e, ev.TextDelta)) \
        == "Hello there."
    assert session.events[-1] == ev.StateChanged("idle", "complete")
    path = store.active_path(session.conversation_id)
    assert [(r.role, r.status) for r in path] == [("user", "complete"),
                                                  ("assistant", "complete")]
    assert path[1].message["content"] == "Hello there."
    await session.close()


async def test_an_edited_input_is_what_is_stored_shown_and_sent_next(
        make_session: Any, model_server: ScriptedServer, store: Store, asker: Any,
        weather: Any) -> None:
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})]),
                         script.text("Sunny in Lyon."))
    asker.answers.append(ApprovalAnswer(ApprovalChoice.ALLOW_ONCE,
                                        updated_input={"city": "Lyon"}))
    session = make_session()
    session.send("Weather?")
    await finished(session)
    assert weather.calls == [{"city": "Lyon"}]
    replaced = [e for e in session.events if isinstance(e, ev.ToolInputReplaced)]
    assert [(e.input) for e in replaced] == [{"city": "Lyon"}]
    sent = next(m for m in model_server.requests[1]["messages"] if m.get("tool_calls"))
    assert json.loads(sent["tool_calls"][0]["function"]["arguments"]) == {"city": "Lyon"}
    path = store.active_path(session.conversation_id)
    call = path[1]
    call_id = call.message["tool_calls"][0]["id"]
    assert json.loads(call.message["tool_calls"][0]["function"]["arguments"]) == {"city": "Lyon"}
    assert json.loads(call.metadata["model_arguments"][call_id]) == {"city": "Paris"}
    assert path[2].metadata["approval"] == {"decision": "allow_once",
                                            "edited_input": {"city": "Lyon"}}
    await session.close()


async def test_no_answer_within_the_timeout_denies(
        make_session: Any, model_server: ScriptedServer, store: Store, weather: Any) -> None:
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("Ok."))

    async def never(_question: Any) -> ApprovalAnswer:
        await asyncio.sleep(3600)
        raise AssertionError

    session = make_session(approval_timeout=0.2)
    session._ask = never  # a person who never answers
    session.send("Oslo?")
    await finished(session)
    assert weather.calls == []
    settled = [e for e in session.events if isinstance(e, ev.ApprovalSettled)]
    assert [e.record for e in settled] == [{"decision": "expired"}]
    tool = next(r for r in store.active_path(session.conversation_id) if r.role == "tool")
    assert "No approval came" in tool.message["content"]
    await session.close()


async def test_regenerate_keeps_the_old_answer_as_a_sibling(
        make_session: Any, model_server: ScriptedServer, store: Store) -> None:
    model_server.enqueue(script.text("First."), script.text("Second."))
    session = make_session(tools=[])
    session.send("Say something")
    await finished(session)
    session.regenerate()
    await finished(session)
    path = store.active_path(session.conversation_id)
    assert [r.message.get("content") for r in path] == ["Say something", "Second."]
    assert len(store.siblings(path[1].id)) == 2
    await session.close()


async def test_refusals_are_typed(make_session: Any, store: Store) -> None:
    session = make_session()
    with pytest.raises(NothingToAnswerError):
        session.run()
    session.update_settings(model=None)
    with pytest.raises(NotConfiguredError):
        session.send("Hi")
    assert store.active_path(session.conversation_id) == []
    await session.close()


async def test_a_session_sees_another_writers_messages_and_settings(
        make_session: Any, model_server: ScriptedServer, store: Store, data_dir: Any) -> None:
    model_server.enqueue(script.text("Reply two."))
    session = make_session(tools=[])
    other = Store.open(data_dir / "conversations.sqlite3")  # another process's connection
    try:
        other.add_message(session.conversation_id, {"role": "user", "content": "one"})
        other.add_message(session.conversation_id, {"role": "assistant", "content": "uno"})
        other.patch_settings(session.conversation_id, {"system_prompt": "Be brief."})
    finally:
        other.close()
    session.send("two")
    await finished(session)
    request = model_server.requests[0]["messages"]
    assert [m["content"] for m in request] == ["Be brief.", "one", "uno", "two"]
    path = store.active_path(session.conversation_id)
    assert [r.message["content"] for r in path] == ["one", "uno", "two", "Reply two."]
    assert store.count_messages(session.conversation_id) == 4
    await session.close()
