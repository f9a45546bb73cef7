"""The approval broker's decisions and their words, alone and inside a real session.

The broker is driven directly (a real ``config.json`` in a temp folder) for
each way a call can be settled, then through a :class:`ConversationSession`
against the scripted server, where what matters is what the person and the
model see: which calls ran, what the store records and what the model is told.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from turn_waits import finished

from desktop_agent.core.tooling.permissions import (
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)
from desktop_agent.session import events as ev
from desktop_agent.session.approvals.approval_broker import (
    ApprovalAnswer,
    ApprovalBroker,
    ApprovalChoice,
    Decision,
    QuestionWithdrawn,
    ToolCallQuestion,
)
from desktop_agent.session.tools.config import AppConfig
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script


class Broker:
    """A broker on one conversation's settings, with what it reported kept for asserts."""

    def __init__(self, config: AppConfig, answers: list[Any], *,
                 timeout: float | None = 30.0, **settings: Any) -> None:
        self.settings: dict[str, Any] = dict(settings)
        self.answers = answers
        self.questions: list[ToolCallQuestion] = []
        self.allowed_here: list[str] = []
        self.settled: list[tuple[str, dict[str, Any]]] = []
        self.problems: list[str] = []
        self.broker = ApprovalBroker(
            "conv-1", self._ask, settings=lambda: self.settings, timeout=timeout,
            config=config, allow_in_conversation=self.allowed_here.append,
            on_settled=lambda i, r: self.settled.append((i, r)),
            on_problem=self.problems.append)

    async def _ask(self, question: ToolCallQuestion) -> ApprovalAnswer:
        self.questions.append(question)
        answer = self.answers.pop(0)
        if callable(answer):
            return await answer()  # type: ignore[no-any-return]
        return answer  # type: ignore[no-any-return]

    async def call(self, tool: str = "get_weather", call_id: str = "call_1",
                   unsandboxed: bool = False, **tool_input: Any) -> Any:
        context = ToolPermissionContext(call_id, unsandboxed=unsandboxed)
        return await self.broker(tool, tool_input or {"city": "Oslo"}, context)


@pytest.fixture
def config(tmp_path: Path) -> AppConfig:
    return AppConfig(tmp_path / "config.json")


def _saved_rules(config: AppConfig) -> list[dict[str, Any]]:
    if not config.file.exists():
        return []
    return json.loads(config.file.read_text()).get("permissions", [])  # type: ignore[no-any-return]


# -- the broker's words -------------------------------------------------------------


async def test_the_decision_words_are_one_set_shared_by_store_events_and_transcript() -> None:
    # Front ends and the REST API read these strings back from the store: they are API.
    assert [d.value for d in Decision] == [
        "deny", "allow_once", "allow_conversation", "allow_always", "auto_execute",
        "allowed_for_conversation", "allowed_by_rule", "expired", "cancelled"]
    # Every answer a person can give is recorded under its own word.
    assert {c.value for c in ApprovalChoice} <= {d.value for d in Decision}


async def test_with_confirmation_off_a_call_runs_unasked_as_auto_execute(
        config: AppConfig) -> None:
    b = Broker(config, [], confirm_tools=False)
    assert isinstance(await b.call(), PermissionResultAllow)
    assert b.questions == []
    assert b.broker.decision_of("call_1") == {"decision": "auto_execute"}


async def test_a_deny_with_a_reason_tells_the_model_that_reason(config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.DENY, reason="not that city")])
    result = await b.call()
    assert isinstance(result, PermissionResultDeny)
    assert result.message == "The user denied this call to get_weather: not that city"
    assert b.broker.decision_of("call_1") == {"decision": "deny", "reason": "not that city"}
    assert [q.tool_input for q in b.questions] == [{"city": "Oslo"}]


async def test_a_deny_without_a_reason_says_none_was_given(config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.DENY,
                                       updated_input={"city": "Bergen"})])
    result = await b.call()
    assert isinstance(result, PermissionResultDeny)
    assert result.message.endswith(": no reason given")
    # Edited arguments of a denied call did not run, so they are not recorded as run.
    assert b.broker.decision_of("call_1") == {"decision": "deny"}


async def test_an_allow_with_unchanged_arguments_records_no_edit(config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.ALLOW_ONCE,
                                       updated_input={"city": "Oslo"})])
    result = await b.call()
    assert isinstance(result, PermissionResultAllow) and result.updated_input is None
    assert b.broker.decision_of("call_1") == {"decision": "allow_once"}


async def test_an_allow_with_edited_arguments_runs_and_records_them(config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.ALLOW_ONCE,
                                       updated_input={"city": "Lyon"})])
    result = await b.call()
    assert isinstance(result, PermissionResultAllow)
    assert result.updated_input == {"city": "Lyon"}
    assert b.broker.decision_of("call_1") == {"decision": "allow_once",
                                              "edited_input": {"city": "Lyon"}}


async def test_decisions_are_forgotten_when_a_new_turn_starts(config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.ALLOW_ONCE)])
    await b.call()
    b.broker.forget_decisions()
    assert b.broker.decision_of("call_1") is None


# -- remembered approvals -------------------------------------------------------------


async def test_allow_for_this_conversation_is_remembered_for_the_next_call(
        config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.ALLOW_CONVERSATION)])
    assert isinstance(await b.call(call_id="call_1"), PermissionResultAllow)
    assert b.allowed_here == ["get_weather"]
    assert b.broker.decision_of("call_1") == {"decision": "allow_conversation"}
    # The session stores the rule in the conversation's settings; the broker reads them.
    b.settings["permission_rules"] = [{"tool": "get_weather", "decision": "allow"}]
    assert isinstance(await b.call(call_id="call_2"), PermissionResultAllow)
    assert len(b.questions) == 1  # not asked again
    assert b.broker.decision_of("call_2") == {"decision": "allowed_for_conversation"}
    assert _saved_rules(config) == []  # nothing global was written


async def test_always_allow_writes_a_global_rule_that_settles_later_calls(
        config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.ALLOW_ALWAYS)])
    assert isinstance(await b.call(call_id="call_1"), PermissionResultAllow)
    assert b.broker.decision_of("call_1") == {"decision": "allow_always"}
    assert _saved_rules(config) == [{"tool": "get_weather", "decision": "allow"}]
    other = Broker(config, [])  # another conversation, same config.json
    assert isinstance(await other.call(call_id="call_2"), PermissionResultAllow)
    assert other.questions == []
    assert other.broker.decision_of("call_2") == {"decision": "allowed_by_rule"}
    assert b.problems == []


async def test_always_allow_that_cannot_be_saved_runs_once_and_says_why(
        config: AppConfig) -> None:
    config.file.write_text("{not json")  # a hand edit gone wrong
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.ALLOW_ALWAYS)])
    assert isinstance(await b.call(), PermissionResultAllow)
    record = b.broker.decision_of("call_1")
    assert record is not None and record["decision"] == "allow_always"
    assert record["not_saved"].startswith("The rule was not saved:")
    assert len(b.problems) == 1
    assert "could not be remembered" in b.problems[0]
    assert config.file.read_text() == "{not json"  # the person's file is left as it was


async def test_an_unsandboxed_call_is_always_asked_and_never_remembered(
        config: AppConfig) -> None:
    b = Broker(config, [ApprovalAnswer(ApprovalChoice.ALLOW_ALWAYS),
                        ApprovalAnswer(ApprovalChoice.ALLOW_CONVERSATION)],
               confirm_tools=False)
    assert isinstance(await b.call("bash", "call_1", unsandboxed=True, command="ls"),
                      PermissionResultAllow)
    assert isinstance(await b.call("bash", "call_2", unsandboxed=True, command="ls"),
                      PermissionResultAllow)
    assert len(b.questions) == 2  # asked despite confirmation off
    assert not b.questions[0].can_remember
    assert [b.broker.decision_of(i) for i in ("call_1", "call_2")] == [
        {"decision": "allow_once"}, {"decision": "allow_once"}]
    assert b.allowed_here == [] and _saved_rules(config) == []


# -- no answer ------------------------------------------------------------------------


async def test_no_answer_within_the_timeout_is_a_deny_recorded_as_expired(
        config: AppConfig) -> None:
    withdrawn = asyncio.Event()

    async def never() -> ApprovalAnswer:
        try:
            await asyncio.Event().wait()
        finally:
            withdrawn.set()  # the front end's question is taken back
        raise AssertionError

    b = Broker(config, [never], timeout=0.05)
    result = await b.call()
    assert isinstance(result, PermissionResultDeny)
    assert result.message == "No approval came within 0.05 s, so the call was not run."
    assert withdrawn.is_set()
    assert b.settled == [("call_1", {"decision": "expired"})]
    assert b.broker.decision_of("call_1") == {"decision": "expired"}


async def test_a_question_the_front_end_withdraws_is_a_deny_recorded_as_cancelled(
        config: AppConfig) -> None:
    async def withdraw() -> ApprovalAnswer:
        raise QuestionWithdrawn

    b = Broker(config, [withdraw])
    result = await b.call()
    assert isinstance(result, PermissionResultDeny)
    assert "stopped the conversation" in result.message
    assert b.settled == [("call_1", {"decision": "cancelled"})]


async def test_a_cancelled_turn_records_its_open_question_as_cancelled(
        config: AppConfig) -> None:
    asked = asyncio.Event()

    async def wait() -> ApprovalAnswer:
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError

    b = Broker(config, [wait], timeout=None)
    call = asyncio.ensure_future(b.call())
    await asked.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert b.settled == [("call_1", {"decision": "cancelled"})]


# -- inside a session -----------------------------------------------------------------



def _tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


async def test_an_unanswered_approval_denies_records_it_and_tells_the_model(
        make_session: Any, model_server: ScriptedServer, store: Store, weather: Any) -> None:
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("I could not check the weather."))

    async def never(_question: Any) -> ApprovalAnswer:
        await asyncio.Event().wait()
        raise AssertionError

    session = make_session(approval_timeout=0.2)
    session._ask = never  # a person who is away from the screen
    session.send("Weather in Oslo?")
    await finished(session)

    assert weather.calls == []
    states = [e.state for e in session.events if isinstance(e, ev.StateChanged)]
    assert states == ["running", "waiting_approval", "running", "idle"]
    told = _tool_messages(model_server.requests[1])
    assert len(told) == 1
    assert told[0]["content"] == "Error: No approval came within 0.2 s, so the call was not run."
    path = store.active_path(session.conversation_id)
    assert [r.role for r in path] == ["user", "assistant", "tool", "assistant"]
    assert path[2].metadata["approval"] == {"decision": "expired"}
    assert path[2].metadata["is_error"] is True
    assert path[3].message["content"] == "I could not check the weather."
    assert session.events[-1] == ev.StateChanged("idle", "complete")
    await session.close()


async def test_allow_for_this_conversation_is_kept_in_its_settings_and_not_asked_again(
        make_session: Any, model_server: ScriptedServer, store: Store, asker: Any,
        weather: Any) -> None:
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("Sunny."),
                         script.tool_calls([("get_weather", {"city": "Rome"})]),
                         script.text("Sunny too."))
    asker.answers.append(ApprovalAnswer(ApprovalChoice.ALLOW_CONVERSATION))
    session = make_session()
    session.send("Oslo?")
    await finished(session)
    session.send("Rome?")
    await finished(session)
    assert weather.calls == [{"city": "Oslo"}, {"city": "Rome"}]
    assert len(asker.questions) == 1
    stored = store.get_conversation(session.conversation_id)
    assert stored is not None
    assert stored.settings["permission_rules"] == [{"tool": "get_weather", "decision": "allow"}]
    tools = [r for r in store.active_path(session.conversation_id) if r.role == "tool"]
    assert tools[0].metadata["approval"] == {"decision": "allow_conversation"}
    # The next turn's core settles the call by the conversation's own rule before the
    # broker sees it, and records it in the core's words.
    assert tools[1].metadata["approval"] == {"decision": "rule", "by": "rule"}
    assert tools[1].message["content"] == "Sunny and 21 °C in Rome"
    await session.close()

    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("Asked."))
    asker.answers.append(ApprovalAnswer(ApprovalChoice.DENY))
    other = make_session()  # another conversation still asks
    other.send("Oslo?")
    await finished(other)
    assert len(asker.questions) == 2
    await other.close()


async def test_always_allow_is_kept_in_config_json_for_every_conversation(
        make_session: Any, model_server: ScriptedServer, data_dir: Path, asker: Any,
        weather: Any) -> None:
    model_server.enqueue(script.tool_calls([("get_weather", {"city": "Oslo"})]),
                         script.text("Sunny."),
                         script.tool_calls([("get_weather", {"city": "Rome"})]),
                         script.text("Sunny too."))
    asker.answers.append(ApprovalAnswer(ApprovalChoice.ALLOW_ALWAYS))
    first = make_session()
    first.send("Oslo?")
    await finished(first)
    await first.close()
    saved = json.loads((data_dir / "config.json").read_text())
    assert saved["permissions"] == [{"tool": "get_weather", "decision": "allow"}]

    second = make_session()  # a new conversation: the global rule lets the call run
    second.send("Rome?")
    await finished(second)
    assert weather.calls == [{"city": "Oslo"}, {"city": "Rome"}]
    assert len(asker.questions) == 1
    await second.close()
