"""ConversationSession against a real store file and the scripted model server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from desktop_agent.session import events as ev
from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ApprovalChoice
from desktop_agent.session.errors import NotConfiguredError, NothingToAnswerError
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



async def test_each_reply_is_announced_once_before_its_reasoning_and_answer_pieces(
        make_session: Any, model_server: ScriptedServer, store: Store) -> None:
    model_server.enqueue(script.thinking("Look it up first.", "Checking."),
                         script.text("Sunny in Paris, as asked."))
    session = make_session(tools=[])
    session.send("Weather?")
    await finished(session)
    session.send("And now?")
    await finished(session)
    pieces = [e for e in session.events
              if isinstance(e, ev.ReplyStarted | ev.ThinkingDelta | ev.TextDelta)]
    started = [i for i, e in enumerate(pieces) if isinstance(e, ev.ReplyStarted)]
    assert started[0] == 0 and len(started) == 2
    first, second = pieces[1:started[1]], pieces[started[1] + 1:]
    assert "".join(e.text for e in first if isinstance(e, ev.ThinkingDelta)) \
        == "Look it up first."
    assert "".join(e.text for e in first if isinstance(e, ev.TextDelta)) == "Checking."
    assert "".join(e.text for e in second if isinstance(e, ev.TextDelta)) \
        == "Sunny in Paris, as asked."
    replies = [r for r in store.active_path(session.conversation_id) if r.role == "assistant"]
    assert [r.id for r in replies] == [p.message_id for p in pieces
                                       if isinstance(p, ev.ReplyStarted)]
    assert replies[0].message["content"] == "Checking."
    assert replies[0].metadata["thinking"] == "Look it up first."
    assert replies[1].message["content"] == "Sunny in Paris, as asked."
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


async def test_pictures_a_tool_returned_are_kept_and_sent_again_after_reopening(
        store: Store, data_dir: Any, asker: Any, model_server: ScriptedServer) -> None:
    # A screenshot tool (an MCP server's picture, say) on a model that can see: the
    # pictures are stored with the result, and a session opened later sends the model
    # the same messages the live one did.
    from desktop_agent.core.context.content_parts import image_part
    from desktop_agent.core.tooling.output import IMAGES_INTRO, ToolOutput
    from desktop_agent.core.tooling.tools import tool
    from desktop_agent.session.conversation import ConversationSession
    from desktop_agent.session.tools.config import AppConfig
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.session.turn.options import SessionEnvironment
    from desktop_agent.testing.images import png_bytes

    picture = image_part(png_bytes(rgb=(0, 0, 255)))

    @tool("screenshot", "A picture of the screen.", {})
    async def screenshot(args: dict[str, Any]) -> ToolOutput:
        return ToolOutput("Took a screenshot.", images=[picture])

    def open_session(conversation_id: str) -> ConversationSession:
        config = AppConfig(data_dir / "config.json")
        env = SessionEnvironment(tools=ToolCatalog([screenshot], include_builtin=False,
                                                   config=config), config=config)
        return ConversationSession(store, conversation_id, env, asker, owner="test")

    record = store.create_conversation(title="Pictures", settings={
        "base_url": model_server.base_url, "model": "test-model", "vision": True,
        "confirm_tools": False})
    model_server.enqueue(script.tool_calls([("screenshot", {})]), script.text("A blue screen."),
                         script.text("Still blue."), script.text("Still blue."))
    live = open_session(record.id)
    live.send("What is on screen?")
    await finished(live)
    live.send("And now?")
    await finished(live)
    await live.close()
    stored = next(r for r in store.active_path(record.id) if r.role == "tool")
    assert stored.metadata["images"] == [picture]

    reopened = open_session(record.id)
    reopened.send("And now?")  # the same question again, from a fresh session
    await finished(reopened)
    await reopened.close()
    live_second, reopened_request = model_server.requests[2], model_server.requests[3]
    pictures = [m for m in reopened_request["messages"]
                if isinstance(m.get("content"), list)
                and m["content"][0].get("text") == IMAGES_INTRO]
    assert pictures and pictures[0]["content"][1] == picture
    assert reopened_request["messages"][:len(live_second["messages"])] == \
        live_second["messages"]


async def test_a_compacted_view_is_stored_and_reused_after_reopening(
        store: Store, data_dir: Any, asker: Any, model_server: ScriptedServer) -> None:
    # A small context fills up and the oldest turns are summarised. A session opened
    # later (the window restarted) continues from the stored summary: no second summary
    # request, the same view, and the reply says where the view was compacted.
    from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS
    from desktop_agent.session.conversation import ConversationSession
    from desktop_agent.session.tools.config import AppConfig
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.session.turn.options import SessionEnvironment

    long_answer = " ".join(f"word{i}" for i in range(180))

    def respond(body: dict[str, Any]) -> Any:
        if body["messages"][0].get("content") == SUMMARY_INSTRUCTIONS:
            return script.text("The person asked about words.")
        return script.text(long_answer)

    model_server.responder = respond
    model_server.max_prompt_tokens = 700

    def open_session(conversation_id: str) -> ConversationSession:
        config = AppConfig(data_dir / "config.json")
        env = SessionEnvironment(tools=ToolCatalog([], include_builtin=False, config=config),
                                 config=config)
        return ConversationSession(store, conversation_id, env, asker, owner="test")

    def summaries() -> int:
        return sum(r["messages"][0].get("content") == SUMMARY_INSTRUCTIONS
                   for r in model_server.requests)

    record = store.create_conversation(title="Words", settings={
        "base_url": model_server.base_url, "model": "test-model", "tools": [],
        "context_length": 700, "max_tokens": 100})
    live = open_session(record.id)
    for n in range(5):
        live.send(f"Question {n}: more words")
        await finished(live)
    await live.close()
    assert summaries() >= 1
    compacted = [r for r in store.active_path(record.id) if "compaction" in r.metadata]
    assert compacted and compacted[-1].metadata["compaction"]["summary"] == \
        "The person asked about words."
    last_view = model_server.requests[-1]["messages"]

    before = summaries()
    reopened = open_session(record.id)
    reopened.send("Question 5: more words")
    await finished(reopened)
    await reopened.close()
    assert summaries() == before, "the stored summary is used, not written again"
    sent = model_server.requests[-1]["messages"]
    assert "The person asked about words." in sent[0]["content"]
    assert sent[:len(last_view) - 1] == last_view[:-1]  # the same view, grown at its end


async def test_a_refused_picture_does_not_poison_the_next_prompt(
        make_session: Any, model_server: ScriptedServer, store: Store) -> None:
    # LM Studio with a text-only model refuses the picture; vision is unknown (None),
    # as the window keeps it for LiteLLM. The error's advice is to send it again
    # without the picture, which must then reach the model alone.
    from desktop_agent.core.context.content_parts import image_part, text_part
    from desktop_agent.core.errors import VisionNotSupportedError
    from desktop_agent.testing.images import png_bytes

    refusal = {"error": {"message": "Model does not support images. "
                         "Please use a model that does."}}
    model_server.enqueue(script.Script([script.Status(400, refusal)]),
                         script.text("It is a red square, I am told."))
    session = make_session(tools=[])
    session.send([text_part("What is this?"), image_part(png_bytes())])
    await finished(session)
    failures = [e for e in session.events if isinstance(e, ev.TurnFailed)]
    assert len(failures) == 1 and isinstance(failures[0].error, VisionNotSupportedError)
    session.send("It is a red square; what colour is it?")
    await finished(session)
    sent = model_server.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [
        ("user", "It is a red square; what colour is it?")]
    assert session.events[-1] == ev.StateChanged("idle", "complete")
    # The transcript still shows what the person wrote, marked as refused.
    path = store.active_path(session.conversation_id)
    assert path[0].message["content"][1]["type"] == "image_url"
    assert path[0].metadata.get("refused_picture") is True
    await session.close()
