"""update_plan: the model's checklist is reported, kept with the conversation, and costs tokens."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from desktop_agent.session import events as ev
from desktop_agent.session.conversation import ConversationSession
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.session.tools.plan import PLAN_TOOL_NAME, Plan, PlanStep
from desktop_agent.session.tools.tool_catalog import ToolCatalog
from desktop_agent.session.turn.options import SessionEnvironment
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script

STEPS = [{"step": "Read the failing test", "status": "completed"},
         {"step": "Fix the parser", "status": "in_progress"},
         {"step": "Run the suite", "status": "pending"}]


async def finished(session: Any) -> None:
    for _ in range(1000):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn did not end")


def open_session(store: Store, data_dir: Path, conversation_id: str,
                 asker: Any) -> ConversationSession:
    env = SessionEnvironment(tools=ToolCatalog(config=AppConfig(data_dir / "config.json"),
                                               include_mcp=False,
                                               workdirs_root=data_dir / "work"),
                             config=AppConfig(data_dir / "config.json"))
    return ConversationSession(store, conversation_id, env, asker, owner="test")


async def test_a_plan_is_reported_runs_unasked_and_survives_a_restart(
        store: Store, data_dir: Path, model_server: ScriptedServer, asker: Any) -> None:
    record = store.create_conversation(title="Plan", settings={
        "base_url": model_server.base_url, "model": "m"})
    session = open_session(store, data_dir, record.id, asker)
    events: list[Any] = []
    session.subscribe(events.append)
    model_server.enqueue(
        script.tool_calls([(PLAN_TOOL_NAME, {"explanation": "Three steps.", "plan": STEPS})]),
        script.text("Working on it."))
    session.send("Fix the parser")
    await finished(session)

    assert asker.questions == []  # never asked, though confirmation mode is on
    [updated] = [e for e in events if isinstance(e, ev.PlanUpdated)]
    expected = Plan((PlanStep("Read the failing test", "completed"),
                     PlanStep("Fix the parser", "in_progress"),
                     PlanStep("Run the suite", "pending")), "Three steps.")
    assert updated.plan == expected
    offered = {t["function"]["name"] for t in model_server.requests[0]["tools"]}
    assert PLAN_TOOL_NAME in offered
    assert model_server.requests[1]["messages"][-1]["content"] == "Plan updated"
    await session.close()

    reopened = open_session(store, data_dir, record.id, asker)  # as after a restart
    assert reopened.plan() == expected
    assert reopened.plan().as_dict() == {"explanation": "Three steps.", "plan": STEPS}
    await reopened.close()


async def test_a_bad_plan_is_refused_in_words_and_keeps_the_old_one(
        store: Store, data_dir: Path, model_server: ScriptedServer, asker: Any) -> None:
    record = store.create_conversation(title="Plan", settings={
        "base_url": model_server.base_url, "model": "m"})
    session = open_session(store, data_dir, record.id, asker)
    two_running = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
    model_server.enqueue(script.tool_calls([(PLAN_TOOL_NAME, {"plan": STEPS})]),
                         script.tool_calls([(PLAN_TOOL_NAME, {"plan": two_running})]),
                         script.text("Ok."))
    session.send("Go")
    await finished(session)
    refusal = model_server.requests[2]["messages"][-1]["content"]
    assert "at most one step can be in_progress" in refusal
    plan = session.plan()
    assert plan is not None and [s.step for s in plan.steps] == [s["step"] for s in STEPS]
    await session.close()


def test_offered_only_where_tools_are_on_and_its_schema_is_counted() -> None:
    catalog = ToolCatalog(include_mcp=False)
    assert PLAN_TOOL_NAME in catalog.tool_names()
    costs = {c.name: c for c in catalog.schema_costs()}
    assert costs[PLAN_TOOL_NAME].tokens > 20 and costs[PLAN_TOOL_NAME].group == "built-in"
    none = asyncio.run(catalog.tools_for("c", {"tools": []}, workdir=Path("/")))
    assert none == []
    picked = asyncio.run(catalog.tools_for("c", {"tools": ["update_plan"]}, workdir=Path("/")))
    assert [t.name for t in picked] == [PLAN_TOOL_NAME]


async def test_the_plan_tool_is_declared_once_and_still_checks_each_call() -> None:
    from desktop_agent.core.errors import ToolInputError
    from desktop_agent.session.tools.plan import plan_tool

    first, second = plan_tool(), plan_tool()
    assert first is not second and first.input_schema is second.input_schema
    assert await second.execute({"plan": [{"step": "Read", "status": "pending"}]}) \
        == "Plan updated"
    try:
        second.validate({"plan": "not a list"})
    except ToolInputError as exc:
        assert "plan" in str(exc)
    else:  # pragma: no cover - the schema must refuse it
        raise AssertionError("a plan that is not a list was accepted")
