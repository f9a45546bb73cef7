"""One reply's tool calls over real HTTP: how many run at once."""

from __future__ import annotations

import threading
from typing import Any

from desktop_agent import Client
from desktop_agent.core.tooling.pool import MAX_PARALLEL_TOOL_CALLS, TOOL_WORKERS
from desktop_agent.core.tooling.tools import tool
from desktop_agent.core.types import ToolResultBlock
from desktop_agent.testing import script


async def test_one_replys_sync_tool_calls_run_together_up_to_the_limit(server,
                                                                       make_options) -> None:
    lock = threading.Lock()
    running = [0]
    peak = [0]
    full = threading.Event()
    calls = MAX_PARALLEL_TOOL_CALLS + 4

    @tool("slow", "Waits until the round is as wide as allowed.", {"n": int})
    def slow(args: dict[str, Any]) -> str:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            if running[0] == MAX_PARALLEL_TOOL_CALLS:
                full.set()
        full.wait(10)  # every call of the first wave is in flight at once
        with lock:
            running[0] -= 1
        return f"done {args['n']}"

    server.enqueue(script.tool_calls([("slow", {"n": i}) for i in range(calls)]),
                   script.text("all done"))
    async with Client(make_options(tools=[slow], auto_execute_tools=True)) as client:
        await client.query("go")
        results = [item async for item in client.receive_messages()
                   if isinstance(item, ToolResultBlock)]
    assert [r.content for r in results] == [f"done {i}" for i in range(calls)]
    assert full.is_set()
    assert peak[0] == MAX_PARALLEL_TOOL_CALLS  # never more
    assert 10 <= MAX_PARALLEL_TOOL_CALLS < TOOL_WORKERS  # ten I/O-bound calls in one wave


async def test_a_tool_error_reads_as_its_sentence_and_others_keep_their_type(
        server, make_options) -> None:
    from desktop_agent.core.tooling.builtin import builtin_tools
    from desktop_agent.core.types import ToolUseError

    @tool("lookup", "Looks a key up", {"key": str})
    def lookup(args: dict[str, Any]) -> str:
        return {"a": "1"}[args["key"]]

    import tempfile

    with tempfile.TemporaryDirectory() as work:
        list_dir = next(t for t in builtin_tools(work) if t.name == "list_dir")
        server.enqueue(script.tool_calls([("list_dir", {"path": "nope"}),
                                          ("lookup", {"key": "b"})]), script.text("ok"))
        async with Client(make_options(tools=[list_dir, lookup],
                                       auto_execute_tools=True)) as client:
            await client.query("go")
            errors = [item.error async for item in client.receive_messages()
                      if isinstance(item, ToolUseError)]
    # the project's own errors are sentences for people and models: no class name
    assert errors[0].startswith("list_dir failed: ") and "Error:" not in errors[0]
    assert "BuiltinToolError" not in errors[0]
    # anything else means little without its type
    assert errors[1] == "lookup failed: KeyError: 'b'"
