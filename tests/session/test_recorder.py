"""What the store holds while a reply streams and after: the recorder inside a real session.

A reply is held mid-stream by the scripted server (a ``Gate``) or mid-turn by
an approval nobody has answered yet, and the store file is read then, as a
crash or another process would find it; then again once the turn ends. The
edited-input case reopens the conversation with a fresh session to check that
the history sent to the model is the one that ran.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_agent.core.context.history_invariants import NOT_EXECUTED_INTERRUPT
from desktop_agent.session import events as ev
from desktop_agent.session.approvals.approval_broker import (
    ApprovalAnswer,
    ApprovalChoice,
    ToolCallQuestion,
)
from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.store import MessageRecord, Store
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import ChunkFactory, Gate, Script

#: Bound on waiting for something that happens at once on a quiet machine.
PATIENCE_STEPS = 3000


async def until(condition: Callable[[], Any], what: str) -> Any:
    """Poll ``condition`` on the loop until it is truthy (a slow machine only waits longer)."""
    for _ in range(PATIENCE_STEPS):
        value = condition()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def finished(session: Any) -> None:
    await until(lambda: not session.busy, "the turn ended")


def on_disk(data_dir: Path, conversation_id: str) -> list[MessageRecord]:
    """The branch as another process would read it from the file now."""
    other = Store.open(data_dir / "conversations.sqlite3")
    try:
        return other.active_path(conversation_id)
    finally:
        other.close()


def held_reply(gate: threading.Event, before: str, after: str) -> Script:
    """Text streamed up to ``before``, held until ``gate`` is set, then ``after``."""
    f = ChunkFactory()
    return Script([f.delta({"role": "assistant", "content": ""}),
                   *(f.delta({"content": word}) for word in script.split_text(before)),
                   Gate(gate, timeout=60),
                   *(f.delta({"content": word}) for word in script.split_text(after)),
                   f.finish("stop"), f.usage(12, 7), script.DONE])


class HeldAsker:
    """A person who looks at the question and answers only when the test says so."""

    def __init__(self) -> None:
        self.questions: list[ToolCallQuestion] = []
        self.answers: list[asyncio.Future[ApprovalAnswer]] = []

    async def __call__(self, question: ToolCallQuestion) -> ApprovalAnswer:
        self.questions.append(question)
        self.answers.append(asyncio.get_running_loop().create_future())
        return await self.answers[-1]

    def answer(self, index: int, answer: ApprovalAnswer) -> None:
        self.answers[index].set_result(answer)


async def test_a_streaming_reply_is_on_disk_as_it_grows_and_complete_after(
        make_session: Any, model_server: ScriptedServer, data_dir: Path) -> None:
    gate = threading.Event()
    model_server.enqueue(held_reply(gate, "The first half,", " and the second half."))
    session = make_session(tools=[])
    session.send("Tell me")
    try:
        # Held mid-stream: the partial reply reaches the file by the checkpoint timer.
        partial = await until(
            lambda: [r for r in on_disk(data_dir, session.conversation_id)
                     if r.role == "assistant" and r.message.get("content")],
            "the partial reply was checkpointed")
        assert partial[0].status == "streaming"
        assert partial[0].message["content"] == "The first half,"
    finally:
        gate.set()
    await finished(session)
    path = on_disk(data_dir, session.conversation_id)
    assert [(r.role, r.status) for r in path] == [("user", "complete"),
                                                  ("assistant", "complete")]
    reply = path[1]
    assert reply.id == partial[0].id  # the same message grew; no second copy
    assert reply.message == {"role": "assistant",
                             "content": "The first half, and the second half."}
    assert reply.metadata["model"] == "test-model"
    assert reply.metadata["usage"]["prompt_tokens"] == 12
    assert reply.metadata["usage"]["completion_tokens"] == 7
    stored = [e.record.id for e in session.events if isinstance(e, ev.MessageStored)]
    assert stored[-1] == reply.id
    await session.close()


async def test_tool_calls_are_on_disk_while_waiting_and_answered_after(
        store: Store, data_dir: Path, weather: Any, model_server: ScriptedServer) -> None:
    asker = HeldAsker()
    config = AppConfig(data_dir / "config.json")
    env = SessionEnvironment(tools=ToolCatalog([weather.build()], include_builtin=False,
                                               config=config), config=config)
    record = store.create_conversation(title="Calls", settings={
        "base_url": model_server.base_url, "model": "test-model"})
    model_server.enqueue(
        script.tool_calls([("get_weather", {"city": "Oslo"}),
                           ("get_weather", {"city": "Rome"})],
                          text_before="Checking both."),
        script.text("Sunny in both."))
    session = ConversationSession(store, record.id, env, asker, owner="test")
    session.send("Oslo and Rome?")
    await until(lambda: asker.questions, "a call was asked about")

    # Waiting for a person: the words before the calls are already on disk (flushed
    # before the wait), the reply still streaming and no tool has answered.
    path = on_disk(data_dir, record.id)
    assert [(r.role, r.status) for r in path] == [("user", "complete"),
                                                  ("assistant", "streaming")]
    assert path[1].message["content"] == "Checking both."

    await until(lambda: len(asker.questions) == 2, "the second call was asked about")
    # Both questions are open at once; the person answers them in any order.
    cities = [q.tool_input["city"] for q in asker.questions]
    assert sorted(cities) == ["Oslo", "Rome"]
    asker.answer(cities.index("Rome"), ApprovalAnswer(ApprovalChoice.DENY,
                                                      reason="one is enough"))
    asker.answer(cities.index("Oslo"), ApprovalAnswer(ApprovalChoice.ALLOW_ONCE))
    await finished(session)

    path = on_disk(data_dir, record.id)
    calls = path[1].message["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"city": "Oslo"}, {"city": "Rome"}]
    assert [(r.role, r.status) for r in path] == [
        ("user", "complete"), ("assistant", "complete"), ("tool", "complete"),
        ("tool", "complete"), ("assistant", "complete")]
    ids = [c["id"] for c in calls]
    assert path[1].metadata["tool_calls"] == {i: {"name": "get_weather"} for i in ids}
    results = {r.message["tool_call_id"]: r for r in path[2:4]}
    oslo, rome = results[ids[0]], results[ids[1]]
    assert oslo.message["content"] == "Sunny and 21 °C in Oslo"
    assert oslo.metadata["approval"] == {"decision": "allow_once"}
    assert oslo.metadata["is_error"] is False
    assert rome.message["tool_call_id"] == ids[1]
    assert "one is enough" in rome.message["content"]
    assert rome.metadata["approval"] == {"decision": "deny", "reason": "one is enough"}
    assert rome.metadata["is_error"] is True
    assert path[4].message["content"] == "Sunny in both."
    assert weather.calls == [{"city": "Oslo"}]
    # The store holds what the model was sent: the next request replays it exactly.
    sent = model_server.requests[1]["messages"]
    assert sent == [r.message for r in path[:4]]
    await session.close()


async def test_an_interrupted_reply_keeps_what_streamed_and_is_marked_so(
        make_session: Any, model_server: ScriptedServer, data_dir: Path) -> None:
    gate = threading.Event()
    model_server.enqueue(held_reply(gate, "Once upon a time", " there was an ending."),
                         script.text("Continued."))
    session = make_session(tools=[])
    session.send("A story")
    try:
        await until(lambda: any(isinstance(e, ev.TextDelta) and "time" in e.text
                                for e in session.events), "the first words arrived")
        assert await session.interrupt() is True
    finally:
        gate.set()
    await finished(session)
    path = on_disk(data_dir, session.conversation_id)
    assert [(r.role, r.status) for r in path] == [("user", "complete"),
                                                  ("assistant", "interrupted")]
    assert path[1].message["content"] == "Once upon a time"
    assert ev.ReplyEnded(True) in session.events
    assert session.events[-1] == ev.StateChanged("idle", "interrupted")
    # The kept words are part of the conversation: the next turn sends them.
    session.send("Go on")
    await finished(session)
    assert model_server.requests[1]["messages"][-2] == {"role": "assistant",
                                                         "content": "Once upon a time"}
    await session.close()


async def test_stopping_while_an_approval_waits_answers_the_call_as_not_run(
        store: Store, data_dir: Path, weather: Any, model_server: ScriptedServer) -> None:
    asker = HeldAsker()
    config = AppConfig(data_dir / "config.json")
    env = SessionEnvironment(tools=ToolCatalog([weather.build()], include_builtin=False,
                                               config=config), config=config)
    record = store.create_conversation(title="Stop", settings={
        "base_url": model_server.base_url, "model": "test-model"})
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]))
    session = ConversationSession(store, record.id, env, asker, owner="test")
    events: list[ev.SessionEvent] = []
    session.subscribe(events.append)
    session.send("Oslo?")
    await until(lambda: asker.questions, "the call was asked about")
    assert await session.interrupt() is True
    await finished(session)
    assert weather.calls == []
    path = on_disk(data_dir, record.id)
    assert [r.role for r in path] == ["user", "assistant", "tool"]
    assert path[1].status in ("complete", "interrupted")
    call_id = path[1].message["tool_calls"][0]["id"]
    assert path[2].message == {"role": "tool", "tool_call_id": call_id,
                               "name": "get_weather", "content": NOT_EXECUTED_INTERRUPT}
    assert path[2].metadata["is_error"] is True
    assert path[2].metadata["approval"]["decision"] == "cancelled"
    assert events[-1] == ev.StateChanged("idle", "interrupted")
    await session.close()


async def test_an_edited_input_is_what_a_reopened_conversation_sends(
        store: Store, data_dir: Path, weather: Any, model_server: ScriptedServer) -> None:
    async def asker(question: ToolCallQuestion) -> ApprovalAnswer:
        # The person moves the Paris call to Lyon and lets the other run as asked.
        if question.tool_input == {"city": "Paris"}:
            return ApprovalAnswer(ApprovalChoice.ALLOW_ONCE, updated_input={"city": "Lyon"})
        return ApprovalAnswer(ApprovalChoice.ALLOW_ONCE)

    def open_session(conversation_id: str) -> ConversationSession:
        config = AppConfig(data_dir / "config.json")
        env = SessionEnvironment(tools=ToolCatalog([weather.build()], include_builtin=False,
                                                   config=config), config=config)
        return ConversationSession(store, conversation_id, env, asker, owner="test")

    record = store.create_conversation(title="Edited", settings={
        "base_url": model_server.base_url, "model": "test-model"})
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"}),
                                            ("get_weather", {"city": "Oslo"})]),
                         script.text("Lyon and Oslo are sunny."), script.text("Yes."))
    live = open_session(record.id)
    live.send("Weather?")
    await finished(live)
    await live.close()
    assert sorted(c["city"] for c in weather.calls) == ["Lyon", "Oslo"]

    path = on_disk(data_dir, record.id)
    reply = path[1]
    first, second = reply.message["tool_calls"]
    assert json.loads(first["function"]["arguments"]) == {"city": "Lyon"}
    assert json.loads(second["function"]["arguments"]) == {"city": "Oslo"}  # not edited
    # Only the edited call keeps the model's own arguments, in metadata.
    assert {k: json.loads(v) for k, v in reply.metadata["model_arguments"].items()} == {
        first["id"]: {"city": "Paris"}}
    results = {r.message["tool_call_id"]: r for r in path[2:4]}
    assert results[first["id"]].metadata["approval"] == {"decision": "allow_once",
                                                         "edited_input": {"city": "Lyon"}}
    assert results[second["id"]].metadata["approval"] == {"decision": "allow_once"}

    reopened = open_session(record.id)  # the window restarted
    reopened.send("Sure?")
    await finished(reopened)
    await reopened.close()
    sent_calls = next(m for m in model_server.requests[2]["messages"]
                      if m.get("tool_calls"))["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in sent_calls] == [
        {"city": "Lyon"}, {"city": "Oslo"}]
    assert "Paris" not in json.dumps(model_server.requests[2]["messages"])
