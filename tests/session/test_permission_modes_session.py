"""A conversation's permission mode: the setting, plan approval, and bypass's sandbox rule."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.session import (
    ConversationSession,
    PermissionModeError,
    SessionEnvironment,
    ToolCatalog,
    check_usable_settings,
)
from desktop_agent.session import events as ev
from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ApprovalChoice
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(60)


async def finished(session: Any) -> None:
    for _ in range(2000):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn did not end")


def results(session: Any) -> dict[str, ev.ToolResultArrived]:
    return {e.name: e for e in session.events if isinstance(e, ev.ToolResultArrived)}


async def test_plan_mode_refuses_changes_and_an_approved_plan_switches_the_mode(
        make_session: Any, model_server: ScriptedServer, asker: Any, weather: Any,
        store: Store) -> None:
    model_server.enqueue(
        script.tool_calls([("get_weather", {"city": "Paris"})]),
        script.tool_calls([("exit_plan_mode", {"plan": "1. Ask for the weather."})]),
        script.tool_calls([("get_weather", {"city": "Lyon"})]),
        script.text("Sunny."))
    asker.answers += [ApprovalAnswer(ApprovalChoice.ALLOW_CONVERSATION),
                      ApprovalAnswer(ApprovalChoice.ALLOW_ONCE)]
    session = make_session(permission_mode="plan")
    session.send("Plan the weather check.")
    await finished(session)
    assert "plan mode" in model_server.requests[0]["messages"][0]["content"]
    # the first call was refused without asking; the plan was asked, then the call after it
    assert [q.tool_name for q in asker.questions] == ["exit_plan_mode", "get_weather"]
    assert weather.calls == [{"city": "Lyon"}]
    assert session.settings["permission_mode"] == "acceptEdits"
    assert store.get_conversation(session.conversation_id).settings["permission_mode"] \
        == "acceptEdits"
    path = store.active_path(session.conversation_id)
    plan_result = next(r for r in path if r.role == "tool"
                       and "approved the plan" in str(r.message["content"]))
    assert plan_result.metadata["approval"]["permission_mode"] == "acceptEdits"


async def test_a_plan_is_asked_even_with_confirmation_off(
        make_session: Any, model_server: ScriptedServer, asker: Any) -> None:
    model_server.enqueue(script.tool_calls([("exit_plan_mode", {"plan": "Do it."})]),
                         script.text("Waiting."))
    asker.answers.append(ApprovalAnswer(ApprovalChoice.DENY, reason="Too vague."))
    session = make_session(permission_mode="plan", confirm_tools=False)
    session.send("Plan.")
    await finished(session)
    assert [q.tool_name for q in asker.questions] == ["exit_plan_mode"]
    assert "Too vague." in results(session)["exit_plan_mode"].content
    assert session.settings["permission_mode"] == "plan"


async def test_bypass_is_refused_without_a_sandbox_and_kept_with_one(
        make_session: Any, bubblewrap: None) -> None:
    session = make_session(sandbox="off")
    with pytest.raises(PermissionModeError, match="needs the command sandbox"):
        session.update_settings(permission_mode="bypassPermissions")
    assert "permission_mode" not in session.settings
    session.update_settings(sandbox="workdir")
    session.update_settings(permission_mode="bypassPermissions")
    assert session.settings["permission_mode"] == "bypassPermissions"
    with pytest.raises(PermissionModeError):  # the sandbox cannot go while bypassing
        session.update_settings(sandbox="off")
    assert session.settings["sandbox"] == "workdir"


def test_the_rest_check_names_the_reason(bubblewrap: None) -> None:
    catalog = ToolCatalog([], include_builtin=False)
    with pytest.raises(PermissionModeError, match="full rights"):
        check_usable_settings({"permission_mode": "bypassPermissions", "sandbox": "off"},
                              catalog, None, ["permission_mode"])
    check_usable_settings({"permission_mode": "bypassPermissions"}, catalog, None,
                          ["permission_mode"])


async def test_bypass_runs_calls_unasked(make_session: Any, model_server: ScriptedServer,
                                         asker: Any, weather: Any, bubblewrap: None) -> None:
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("Cold."))
    session = make_session(permission_mode="bypassPermissions")
    session.send("Weather?")
    await finished(session)
    assert asker.questions == [] and weather.calls == [{"city": "Oslo"}]


async def test_accept_edits_writes_files_unasked_and_asks_for_commands(
        store: Store, data_dir: Path, model_server: ScriptedServer, asker: Any,
        tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    env = SessionEnvironment(tools=ToolCatalog([], config=AppConfig(data_dir / "config.json")),
                             config=AppConfig(data_dir / "config.json"))
    record = store.create_conversation(title="edits", settings={
        "base_url": model_server.base_url, "model": "test-model", "workdir": str(folder),
        "tools": ["write_file", "bash"], "permission_mode": "acceptEdits"})
    session = ConversationSession(store, record.id, env, asker, owner="test")
    session.events = []  # type: ignore[attr-defined]
    session.subscribe(session.events.append)  # type: ignore[attr-defined]
    model_server.enqueue(script.tool_calls([("write_file", {"path": "a.txt", "content": "hi"}),
                                            ("bash", {"command": "cat a.txt"})]),
                         script.text("Done."))
    asker.answers.append(ApprovalAnswer(ApprovalChoice.DENY, reason="Not now."))
    try:
        session.send("Write a.txt")
        await finished(session)
    finally:
        await session.close()
    assert (folder / "a.txt").read_text() == "hi"
    assert [q.tool_name for q in asker.questions] == ["bash"]
