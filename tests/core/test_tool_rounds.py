"""One reply's tool calls over real HTTP: how many run at once."""

from __future__ import annotations

import threading
import time
from typing import Any

from desktop_agent import Client
from desktop_agent.core.tool_pool import MAX_PARALLEL_TOOL_CALLS
from desktop_agent.core.tools import tool
from desktop_agent.core.types import ToolResultBlock
from desktop_agent.testing import script


async def test_one_replys_tool_calls_run_at_most_four_at_a_time(server, make_options) -> None:
    lock = threading.Lock()
    running = [0]
    peak = [0]

    @tool("slow", "Takes a moment.", {"n": int})
    def slow(args: dict[str, Any]) -> str:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
        return f"done {args['n']}"

    server.enqueue(script.tool_calls([("slow", {"n": i}) for i in range(10)]),
                   script.text("all done"))
    async with Client(make_options(tools=[slow], auto_execute_tools=True)) as client:
        await client.query("go")
        results = [item async for item in client.receive_messages()
                   if isinstance(item, ToolResultBlock)]
    assert [r.content for r in results] == [f"done {i}" for i in range(10)]
    assert peak[0] == MAX_PARALLEL_TOOL_CALLS == 4
