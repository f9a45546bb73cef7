"""Fixtures for the session tier: a real store file and the scripted model server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ToolCallQuestion
from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.events import SessionEvent
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer


class Asker:
    """A scripted person: answers each question with the next queued answer."""

    def __init__(self) -> None:
        self.answers: list[ApprovalAnswer] = []
        self.questions: list[ToolCallQuestion] = []

    async def __call__(self, question: ToolCallQuestion) -> ApprovalAnswer:
        self.questions.append(question)
        return self.answers.pop(0)


@pytest.fixture
def asker() -> Asker:
    return Asker()


@pytest.fixture
async def make_session(store: Store, data_dir: Path, weather: Any, asker: Asker,
                       model_server: ScriptedServer) -> AsyncIterator[Callable[..., Any]]:
    """A session on a new conversation pointed at the scripted server; events collected."""
    sessions: list[ConversationSession] = []

    def make(approval_timeout: float | None = 30.0, **settings: Any) -> Any:
        env = SessionEnvironment(
            tools=ToolCatalog([weather.build()], include_builtin=False,
                              config=AppConfig(data_dir / "config.json")),
            config=AppConfig(data_dir / "config.json"), approval_timeout=approval_timeout)
        record = store.create_conversation(title="Session test", settings={
            "base_url": model_server.base_url, "model": "test-model", **settings})
        session = ConversationSession(store, record.id, env, asker, owner="test")
        events: list[SessionEvent] = []
        session.subscribe(events.append)
        session.events = events  # type: ignore[attr-defined]
        sessions.append(session)
        return session

    yield make
    # Closed even when a test failed before closing them: a client left open would
    # leak its connections into a later test as an unclosed-transport warning.
    for session in sessions:
        await session.close()
