"""AgentOptions.before_tool_round: told each round's calls before any of them runs."""

from collections.abc import Sequence

import pytest

from desktop_agent import Client, PermissionResultAllow, tool
from desktop_agent.core.types import ToolUseBlock
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


async def test_each_round_is_announced_once_with_its_calls_before_they_run(
        server, make_options):
    log: list[str] = []

    @tool("write_note", "Write a note", {"text": str})
    async def write_note(args):
        log.append(f"ran {args['text']}")
        return "ok"

    async def before(calls: Sequence[ToolUseBlock]) -> None:
        log.append("round " + ",".join(c.input["text"] for c in calls))

    async def allow(_name, _input, _context):
        return PermissionResultAllow()

    server.enqueue(script.tool_calls([("write_note", {"text": "a"}),
                                      ("write_note", {"text": "b"})]),
                   script.tool_calls([("write_note", {"text": "c"})]),
                   script.text("Done."))
    options = make_options(tools=[write_note], auto_execute_tools=True, can_use_tool=allow,
                           before_tool_round=before)
    async with Client(options) as client:
        await client.query("write three notes")
        _ = [item async for item in client.receive_messages()]

    assert log[0] == "round a,b" and sorted(log[1:3]) == ["ran a", "ran b"]
    assert log[3:] == ["round c", "ran c"]
