"""Subagents: delegation through real turns against the scripted server, exact sequences.

The scripted server answers each request by who sent it (the main agent or a
subagent, told apart by their system prompts), so subagents running at once
get their own scripts whatever order their requests arrive in.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from desktop_agent import (
    AgentDefinition,
    Client,
    ConfigurationError,
    HookDecision,
    PermissionResultAllow,
    ServerConnectionError,
    SubagentBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    tool,
)
from desktop_agent.core.subagents import CHILD_NOTE
from desktop_agent.testing import script
from desktop_agent.testing.script import Gate, Script

pytestmark = pytest.mark.timeout(90)
SECRET = "tok-5ecret-value"


@tool("read_file", "Read a file", {"path": str}, read_only=True)
def read_file(args):
    return f"contents of {args['path']} (key {SECRET})"


@tool("write_file", "Write a file", {"path": str, "content": str}, edits_files=True)
def write_file(args):
    return "written"


@tool("bash", "Run a command", {"command": str})
def bash(args):
    return "ran"


REVIEWER = AgentDefinition("Reviews code for bugs.", "You are the reviewer.",
                           tools=("read_*",), model="small-model")
FIXER = AgentDefinition("Fixes a file.", "You are the fixer.", tools=("write_file", "bash"))


class Router:
    """Answers each request by who asks: ``scripts[who]`` in order; records the order."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Script | Callable[[], Script]]] = defaultdict(list)
        self.order: list[str] = []
        self.bodies: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._lock = threading.Lock()

    @staticmethod
    def who(body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" \
            else ""
        for name in ("reviewer", "fixer"):
            if f"You are the {name}." in system:
                return name
        return "main"

    def __call__(self, body: dict[str, Any]) -> Script:
        who = self.who(body)
        with self._lock:
            self.order.append(who)
            self.bodies[who].append(body)
            step = self.scripts[who].pop(0)
        return step() if callable(step) else step


@pytest.fixture
def router(server) -> Router:
    routed = Router()
    server.responder = routed
    return routed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def agent_options(make_options, **more):
    values = {"tools": [read_file, write_file, bash], "auto_execute_tools": True,
              "agents": {"reviewer": REVIEWER, "fixer": FIXER},
              "secret_values": (SECRET,)}
    values.update(more)
    return make_options(**values)


async def run(client: Client, prompt: str = "go") -> list[Any]:
    await client.query(prompt)
    return [i async for i in client.receive_messages()]


def delegation_result(items: list[Any]) -> ToolResultBlock:
    return next(i for i in items if isinstance(i, ToolResultBlock) and i.name == "delegate")


async def test_a_delegated_task_runs_in_its_own_context_and_answers(
        server, make_options, router: Router) -> None:
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "reviewer", "prompt": "Review a.py"})]),
        script.text("The reviewer found nothing.")]
    router.scripts["reviewer"] += [script.tool_calls([("read_file", {"path": "a.py"})]),
                                   script.text("a.py looks fine.")]
    async with Client(agent_options(make_options, system_prompt="Lead.")) as client:
        items = await run(client, "Please review a.py")
    result = delegation_result(items)
    assert result.content.startswith("a.py looks fine.")
    assert "[subagent reviewer on small-model: 2 request(s)" in result.content
    assert "changed no files" in result.content
    # the subagent's own request: its prompt, its tools only, its model, a clean context
    first = router.bodies["reviewer"][0]
    assert first["model"] == "small-model"
    assert first["messages"][0]["content"] == f"You are the reviewer.\n\n{CHILD_NOTE}"
    assert first["messages"][1:] == [{"role": "user", "content": "Review a.py"}]
    assert [t["function"]["name"] for t in first["tools"]] == ["read_file"]
    # what the subagent did streamed under the delegation call
    call_id = next(i.id for i in items if isinstance(i, ToolUseBlock) and i.name == "delegate")
    reports = [i for i in items if isinstance(i, SubagentBlock)]
    assert {r.tool_use_id for r in reports} == {call_id}
    assert reports[0].event == "started" and reports[-1].event == "finished"
    inner = [type(r.block).__name__ for r in reports if r.event == "block"]
    assert inner[:2] == ["ToolUseBlock", "ToolResultBlock"] and "TextBlock" in inner
    done = reports[-1]
    assert (done.agent, done.model, done.requests) == ("reviewer", "small-model", 2)
    assert done.result == "a.py looks fine." and done.error is None
    # secrets are blanked in what the subagent's tools returned, streamed or handed back
    child_result = next(r.block for r in reports if isinstance(r.block, ToolResultBlock))
    assert SECRET not in child_result.content
    assert SECRET not in str(router.bodies["main"][1])
    offered = [t["function"]["name"] for t in router.bodies["main"][0]["tools"]]
    assert offered == ["read_file", "write_file", "bash", "delegate"]


async def test_two_subagents_run_at_once(server, make_options, router: Router) -> None:
    reviewer_asked, fixer_asked = threading.Event(), threading.Event()

    def reviewer_first() -> Script:
        reviewer_asked.set()
        return Script([Gate(fixer_asked, 20), *script.text("Reviewed.").steps])

    def fixer_first() -> Script:
        fixer_asked.set()
        return Script([Gate(reviewer_asked, 20), *script.text("Fixed.").steps])

    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "reviewer", "prompt": "review"}),
                           ("delegate", {"agent": "fixer", "prompt": "fix"})]),
        script.text("Both done.")]
    router.scripts["reviewer"].append(reviewer_first)
    router.scripts["fixer"].append(fixer_first)
    async with Client(agent_options(make_options)) as client:
        items = await run(client)
    # each held its reply until the other had asked: they ran at the same time
    assert sorted(router.order[1:3]) == ["fixer", "reviewer"]
    contents = [r.content for r in items if isinstance(r, ToolResultBlock)]
    assert contents[0].startswith("Reviewed.") and contents[1].startswith("Fixed.")


async def test_the_concurrency_limit_queues_the_rest(server, make_options,
                                                     router: Router) -> None:
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "reviewer", "prompt": "one"}),
                           ("delegate", {"agent": "fixer", "prompt": "two"})]),
        script.text("ok")]
    router.scripts["reviewer"] += [script.tool_calls([("read_file", {"path": "x"})]),
                                   script.text("r")]
    router.scripts["fixer"] += [script.text("f")]
    async with Client(agent_options(make_options, max_concurrent_subagents=1)) as client:
        await run(client)
    # one at a time: the first subagent's two requests before the second's first
    assert router.order == ["main", "reviewer", "reviewer", "fixer", "main"]


async def test_the_same_approver_asks_and_is_told_which_subagent(
        server, make_options, router: Router) -> None:
    asked: list[tuple[str, str | None]] = []

    async def approve(name, tool_input, context):
        asked.append((name, context.agent))
        return PermissionResultAllow()

    rounds: list[list[str]] = []

    async def checkpoint(calls):
        rounds.append([c.name for c in calls])

    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "fixer", "prompt": "fix a.py"})]),
        script.text("done")]
    router.scripts["fixer"] += [
        script.tool_calls([("write_file", {"path": "a.py", "content": "x"}),
                           ("bash", {"command": "make test"})]),
        script.text("Fixed a.py.")]
    options = agent_options(make_options, can_use_tool=approve, allowed_tools=["delegate"],
                            before_tool_round=checkpoint)
    async with Client(options) as client:
        items = await run(client)
    assert asked == [("write_file", "fixer"), ("bash", "fixer")]
    assert rounds == [["delegate"], ["write_file", "bash"]]  # the child's round is checkpointed
    result = delegation_result(items)
    assert "changed a.py; 1 other call(s)" in result.content


async def test_plan_mode_holds_for_subagents(server, make_options, router: Router) -> None:
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "fixer", "prompt": "fix"})]),
        script.text("done")]
    router.scripts["fixer"] += [script.tool_calls([("write_file", {"path": "a", "content": ""})]),
                                script.text("Could not write.")]
    async with Client(agent_options(make_options, permission_mode="plan")) as client:
        items = await run(client)
    inner = [r.block for r in items if isinstance(r, SubagentBlock)
             and isinstance(r.block, ToolResultBlock)]
    assert inner[0].is_error and "Plan mode" in inner[0].content


async def test_a_looping_subagent_is_stopped_and_the_parent_is_told(
        server, make_options, router: Router) -> None:
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "reviewer", "prompt": "review"})]),
        script.text("The reviewer got stuck.")]
    router.scripts["reviewer"] += [script.tool_calls([("read_file", {"path": "a.py"})])
                                   for _ in range(6)]
    async with Client(agent_options(make_options)) as client:
        items = await run(client)
        assert client.final_text == "The reviewer got stuck."
    result = delegation_result(items)
    assert result.is_error
    assert "The subagent reviewer was stopped before it finished" in result.content
    assert "Stopped by the loop guard" in result.content
    finished = [i for i in items if isinstance(i, SubagentBlock) and i.event == "finished"]
    assert finished[0].error is not None


async def test_a_subagent_cannot_delegate_beyond_the_depth(server, make_options,
                                                           router: Router) -> None:
    loose = AgentDefinition("Anything.", "You are the fixer.")  # every tool, by default
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "fixer", "prompt": "go deeper"})]),
        script.text("ok")]
    router.scripts["fixer"] += [
        script.tool_calls([("delegate", {"agent": "fixer", "prompt": "again"})]),
        script.text("I could not delegate.")]
    async with Client(agent_options(make_options, agents={"fixer": loose})) as client:
        items = await run(client)
    offered = [t["function"]["name"] for t in router.bodies["fixer"][0]["tools"]]
    assert "delegate" not in offered
    refused = [r.block for r in items if isinstance(r, SubagentBlock)
               and isinstance(r.block, ToolResultBlock)]
    assert refused[0].is_error and "no tool named 'delegate'" in refused[0].content
    assert router.order.count("fixer") == 2  # no grandchild ever asked


def test_a_definition_naming_unknown_tools_is_refused_at_once(make_options) -> None:
    bad = AgentDefinition("Reviews.", "You review.", tools=("read_file", "web_search"))
    with pytest.raises(ConfigurationError, match="names the tool 'web_search'"):
        make_options(tools=[read_file], agents={"reviewer": bad})
    with pytest.raises(ConfigurationError, match="needs a prompt"):
        AgentDefinition("Reviews.", "  ")


async def test_a_subagent_server_that_is_down_fails_the_turn_before_it_starts(
        server, make_options, router: Router) -> None:
    away = AgentDefinition("Elsewhere.", "You are the reviewer.",
                           base_url=f"http://127.0.0.1:{free_port()}/v1")
    async with Client(agent_options(make_options, agents={"reviewer": away})) as client:
        await client.query("go")
        with pytest.raises(ServerConnectionError, match="subagent 'reviewer' uses the server"):
            [i async for i in client.receive_messages()]
    assert router.order == []  # nothing was sent


async def test_stop_stops_the_subagent(server, make_options, router: Router) -> None:
    hold = threading.Event()
    router.scripts["main"].append(
        script.tool_calls([("delegate", {"agent": "reviewer", "prompt": "slow"})]))
    router.scripts["reviewer"].append(
        Script([*script.text("Reading everything...").steps[:2], Gate(hold, 60),
                *script.text(" done").steps]))
    async with Client(agent_options(make_options)) as client:
        await client.query("go")
        seen = []
        stopping = []
        async for item in client.receive_messages():  # Stop pressed while the child writes
            seen.append(item)
            if isinstance(item, SubagentBlock) and isinstance(item.block, TextBlock) \
                    and not stopping:
                stopping.append(asyncio.ensure_future(client.interrupt()))
        await stopping[0]
        assert client.turn_metadata["interrupted"]
    hold.set()
    finished = [i for i in seen if isinstance(i, SubagentBlock) and i.event == "finished"]
    assert finished and finished[0].error is not None  # cancelled, said so
    assert router.order == ["main", "reviewer"]


async def test_subagent_stop_hooks_see_the_subagent(server, make_options,
                                                    router: Router) -> None:
    seen: list[Any] = []

    def on_subagent_stop(event):
        seen.append(event)
        if not event.stop_hook_active:
            return HookDecision(continue_=False, reason="Cite the line numbers.")
        return None

    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "reviewer", "prompt": "review"})]),
        script.text("done")]
    router.scripts["reviewer"] += [script.text("Fine."), script.text("Fine (line 3).")]
    options = agent_options(make_options, hooks={"SubagentStop": [on_subagent_stop],
                                                 "SessionStart": [seen.append]})
    async with Client(options) as client:
        items = await run(client)
    stops = [e for e in seen if type(e).__name__ == "SubagentStopEvent"]
    assert [(e.agent_name, e.last_message) for e in stops] == [
        ("reviewer", "Fine."), ("reviewer", "Fine (line 3).")]
    assert stops[0].agent_id.startswith("reviewer-")
    assert sum(type(e).__name__ == "SessionStartEvent" for e in seen) == 1  # the main only
    assert delegation_result(items).content.startswith("Fine (line 3).")


async def test_an_unknown_subagent_name_is_answered_in_words(server, make_options,
                                                             router: Router) -> None:
    router.scripts["main"] += [
        script.tool_calls([("delegate", {"agent": "ghost", "prompt": "x"})]),
        script.text("ok")]
    async with Client(agent_options(make_options)) as client:
        items = await run(client)
    result = delegation_result(items)
    assert result.is_error and "ghost" in result.content and "reviewer" in result.content
    assert router.order == ["main", "main"]
