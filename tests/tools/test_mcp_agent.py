"""End to end: a model (the scripted local server) calls MCP and built-in tools via the Client.

Every call passes the permission rules and the approval callback; results
reach the model in the next request.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_agent import (
    AgentOptions,
    Client,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionRule,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseError,
)
from desktop_agent.core.tooling.builtin import builtin_tools
from desktop_agent.core.tooling.config import McpServerConfig
from desktop_agent.core.tooling.mcp import McpServerPool
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(90)


class Approver:
    """The approval callback, recording what it was asked."""

    def __init__(self, answer: Callable[[str], PermissionResultAllow | PermissionResultDeny]):
        self.asked: list[tuple[str, dict[str, Any], ToolPermissionContext]] = []
        self._answer = answer

    async def __call__(
        self, name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        self.asked.append((name, tool_input, context))
        return self._answer(name)


def _tool_messages(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


async def test_model_calls_an_mcp_tool_after_approval_and_gets_the_result(
    model_server: ScriptedServer, stdio_server: Callable[..., McpServerConfig], tmp_path: Path
) -> None:
    target = tmp_path / "from-mcp.txt"
    model_server.enqueue(
        script.tool_calls([("test__write_file", {"path": str(target), "text": "hello"})],
                          ids=["call-1"]),
        script.text("The file is written."),
    )
    approver = Approver(lambda name: PermissionResultAllow())
    async with McpServerPool([stdio_server("test")]) as pool:
        options = AgentOptions(model="test-model", base_url=model_server.base_url,
                               tools=await pool.list_tools(), can_use_tool=approver,
                               auto_execute_tools=True, timeout=20.0)
        async with Client(options) as client:
            await client.query("Write hello to the file")
            items = [item async for item in client.receive_messages()]
    (name, tool_input, context), = approver.asked
    assert name == "test__write_file"
    assert tool_input == {"path": str(target), "text": "hello"}
    assert (context.source, context.read_only, context.tool_use_id) == ("test", False, "call-1")
    result = next(i for i in items if isinstance(i, ToolResultBlock))
    assert (result.content, result.is_error) == ("wrote 5 characters", False)
    assert target.read_text() == "hello"
    assert _tool_messages(model_server.requests[-1]) == {"call-1": "wrote 5 characters"}


async def test_denied_mcp_call_never_runs_and_the_model_is_told(
    model_server: ScriptedServer, stdio_server: Callable[..., McpServerConfig], tmp_path: Path
) -> None:
    target = tmp_path / "never.txt"
    model_server.enqueue(
        script.tool_calls([("test__write_file", {"path": str(target), "text": "x"})],
                          ids=["call-1"]),
        script.text("Understood."),
    )
    approver = Approver(lambda name: PermissionResultDeny(message="Not today."))
    async with McpServerPool([stdio_server("test")]) as pool:
        options = AgentOptions(model="test-model", base_url=model_server.base_url,
                               tools=await pool.list_tools(), can_use_tool=approver,
                               auto_execute_tools=True, timeout=20.0)
        async with Client(options) as client:
            await client.query("Write the file")
            items = [item async for item in client.receive_messages()]
    assert any(isinstance(i, ToolUseError) for i in items)
    assert not target.exists()
    assert "Not today." in _tool_messages(model_server.requests[-1])["call-1"]


async def test_rules_auto_allow_read_only_tools_and_mcp_errors_reach_the_model(
    model_server: ScriptedServer, stdio_server: Callable[..., McpServerConfig], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    model_server.enqueue(
        script.tool_calls([("read_file", {"path": "notes.txt"}),
                           ("time__get_current_time", {"timezone": "UTC"}),
                           ("test__fail", {"message": "quota exceeded"})],
                          ids=["read", "time", "fail"]),
        script.text("Done."),
    )
    approver = Approver(lambda name: PermissionResultAllow())
    time_server = McpServerConfig("time", command=sys.executable,
                                  args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
                                  trusted=True)
    async with McpServerPool([stdio_server("test"), time_server]) as pool:
        tools = [*builtin_tools(tmp_path), *await pool.list_tools()]
        options = AgentOptions(
            model="test-model", base_url=model_server.base_url, tools=tools,
            can_use_tool=approver, auto_execute_tools=True, timeout=20.0,
            permission_rules=[PermissionRule("*", "allow", read_only=True)],
        )
        async with Client(options) as client:
            await client.query("Read my notes, tell the time, and try the failing tool")
            items = [item async for item in client.receive_messages()]
    # Read-only tools (built-in and MCP) ran by rule; only the other one was asked about.
    assert [name for name, _, _ in approver.asked] == ["test__fail"]
    results = {i.tool_use_id: i for i in items if isinstance(i, ToolResultBlock)}
    assert results["read"].content == "remember the milk\n"
    assert '"timezone": "UTC"' in results["time"].content
    sent = _tool_messages(model_server.requests[-1])
    assert sent["read"] == "remember the milk\n"
    assert sent["fail"].startswith("Error:") and "quota exceeded" in sent["fail"]


async def test_an_untrusted_servers_read_only_hint_does_not_satisfy_a_read_only_rule(
    model_server: ScriptedServer, stdio_server: Callable[..., McpServerConfig]
) -> None:
    """The MCP spec calls readOnlyHint untrusted: only a server the person marked
    ``"trusted": true`` may have its hinted tools run by a ``read_only`` allow rule."""
    rules = [PermissionRule("*", "allow", read_only=True)]
    asked_per_trust = {}
    for trusted in (False, True):
        model_server.enqueue(script.tool_calls([("test__echo", {"text": "hi"})], ids=["e"]),
                             script.text("Done."))
        approver = Approver(lambda name: PermissionResultAllow())
        async with McpServerPool([stdio_server("test", trusted=trusted)]) as pool:
            options = AgentOptions(
                model="test-model", base_url=model_server.base_url,
                tools=await pool.list_tools(), can_use_tool=approver, auto_execute_tools=True,
                timeout=20.0, permission_rules=rules)
            async with Client(options) as client:
                await client.query("echo")
                items = [item async for item in client.receive_messages()]
        assert any(isinstance(i, ToolResultBlock) and "echo: hi" in i.content for i in items)
        asked_per_trust[trusted] = [name for name, _, _ in approver.asked]
    assert asked_per_trust == {False: ["test__echo"], True: []}
