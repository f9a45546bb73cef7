"""The registry with real sessions: one per conversation, closed when idle, never mid-turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.session.approvals.approval_broker import (
    ApprovalAnswer,
    ApprovalChoice,
    ToolCallQuestion,
)
from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.errors import SessionError
from desktop_agent.session.lifecycle.registry import SessionRegistry
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script


async def until(condition: Any, what: str) -> None:
    for _ in range(3000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


class Sessions:
    """A registry whose factory opens real sessions on one store, as ``serve`` does."""

    def __init__(self, store: Store, data_dir: Path, weather: Any, server: ScriptedServer,
                 max_idle: int = 32) -> None:
        self.store = store
        self.server = server
        self.opened: list[ConversationSession] = []
        self.questions: list[ToolCallQuestion] = []
        self.answers: list[asyncio.Future[ApprovalAnswer]] = []
        config = AppConfig(data_dir / "config.json")
        self.env = SessionEnvironment(
            tools=ToolCatalog([weather.build()], include_builtin=False, config=config),
            config=config)
        self.registry: SessionRegistry[ConversationSession] = SessionRegistry(
            self._open, max_idle=max_idle)

    def _open(self, conversation_id: str) -> ConversationSession:
        session = ConversationSession(self.store, conversation_id, self.env, self._ask,
                                      owner="test")
        self.opened.append(session)
        return session

    async def _ask(self, question: ToolCallQuestion) -> ApprovalAnswer:
        self.questions.append(question)
        self.answers.append(asyncio.get_running_loop().create_future())
        return await self.answers[-1]

    def conversation(self, **settings: Any) -> str:
        return self.store.create_conversation(title="Registry test", settings={
            "base_url": self.server.base_url, "model": "test-model", **settings}).id


@pytest.fixture
async def sessions(store: Store, data_dir: Path, weather: Any,
                   model_server: ScriptedServer) -> Any:
    made = Sessions(store, data_dir, weather, model_server)
    yield made
    await made.registry.close()


async def test_one_session_per_conversation(sessions: Sessions) -> None:
    a, b = sessions.conversation(), sessions.conversation()
    first = sessions.registry.get(a)
    assert sessions.registry.get(a) is first
    assert sessions.registry.get(b) is not first
    assert sessions.registry.peek(a) is first
    assert len(sessions.registry) == 2
    assert len(sessions.opened) == 2


async def test_an_idle_session_is_closed_and_the_next_use_continues_from_the_store(
        sessions: Sessions, model_server: ScriptedServer) -> None:
    model_server.enqueue(script.text("First answer."), script.text("Second answer."))
    cid = sessions.conversation(tools=[])
    session = sessions.registry.get(cid)
    session.send("One")
    await until(lambda: not session.busy, "the turn ended")
    assert session.client is not None

    assert await sessions.registry.evict_idle(0) == 1
    assert sessions.registry.peek(cid) is None
    assert session.client is None  # its connections were released
    with pytest.raises(SessionError, match="closed"):
        session.send("Too late")

    fresh = sessions.registry.get(cid)
    assert fresh is not session
    fresh.send("Two")
    await until(lambda: not fresh.busy, "the second turn ended")
    contents = [m["content"] for m in model_server.requests[1]["messages"]]
    assert contents == ["One", "First answer.", "Two"]


async def test_a_session_used_recently_is_kept(sessions: Sessions) -> None:
    cid = sessions.conversation()
    sessions.registry.get(cid)
    assert await sessions.registry.evict_idle(3600) == 0
    assert sessions.registry.peek(cid) is not None


async def test_a_session_waiting_for_an_approval_is_never_evicted(
        store: Store, data_dir: Path, weather: Any, model_server: ScriptedServer) -> None:
    sessions = Sessions(store, data_dir, weather, model_server, max_idle=0)
    try:
        model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                             script.text("Sunny."))
        waiting_id = sessions.conversation()
        waiting = sessions.registry.get(waiting_id)
        waiting.send("Oslo?")
        await until(lambda: sessions.questions, "the call was asked about")
        assert waiting.state == "waiting_approval"

        idle_id = sessions.conversation()
        idle = sessions.registry.get(idle_id)
        newest_id = sessions.conversation()
        sessions.registry.get(newest_id)  # past max_idle: the idle one closes
        await until(lambda: idle.client is None and sessions.registry.peek(idle_id) is None,
                    "the idle one closed")
        assert await sessions.registry.evict_idle(0) == 1  # the newest; not the waiting one
        assert sessions.registry.peek(newest_id) is None
        assert sessions.registry.peek(waiting_id) is waiting

        sessions.answers[0].set_result(ApprovalAnswer(ApprovalChoice.ALLOW_ONCE))
        await until(lambda: not waiting.busy, "the turn ended")
        assert weather.calls == [{"city": "Oslo"}]
        assert store.active_path(waiting_id)[-1].message["content"] == "Sunny."
        assert await sessions.registry.evict_idle(0) == 1
        assert sessions.registry.peek(waiting_id) is None
    finally:
        await sessions.registry.close()


async def test_closing_the_registry_closes_every_session(sessions: Sessions) -> None:
    held = [sessions.registry.get(sessions.conversation()) for _ in range(3)]
    await sessions.registry.close()
    assert len(sessions.registry) == 0
    for session in held:
        with pytest.raises(SessionError, match="closed"):
            session.send("Hello?")


class _Holder:
    """A holder that counts how often the registry asks whether it may be closed."""

    asked = 0

    def __init__(self) -> None:
        self.busy = False
        self.last_used = 0.0
        self.closed = False

    def can_evict(self) -> bool:
        _Holder.asked += 1
        return True

    async def close(self) -> None:
        self.closed = True


async def test_holders_are_not_looked_over_while_fewer_than_the_idle_limit() -> None:
    _Holder.asked = 0
    registry: SessionRegistry[_Holder] = SessionRegistry(lambda cid: _Holder(), max_idle=3)
    held = [registry.get(f"c{i}") for i in range(4)]  # at most 3 others idle each time
    assert _Holder.asked == 0  # a turn's start on a new conversation skipped the scan
    registry.get("c4")  # 4 others idle now: one too many
    await asyncio.sleep(0)
    assert _Holder.asked == 4 and held[0].closed and registry.peek("c0") is None
