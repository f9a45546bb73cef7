"""One reply with ten plain-function (sync) tools of 0.2 s each: how long the round takes.

The tools sleep (I/O-bound, like reading a share or calling an API), so the
ideal is one wave: about 0.2 s. Measured from the moment the reply's calls
are known to the last result, through ``Client`` against the scripted server.
A pool sized for CPU-bound work runs them in waves: each wave adds 0.2 s.

    python bench/sync_tools.py [--tools 10] [--seconds 0.2] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from desktop_agent import AgentOptions, Client, ToolResultBlock, ToolUseBlock, tool
from desktop_agent.testing import ScriptedServer, script


def make_tool(seconds: float) -> Any:
    @tool("wait_io", "Waits on slow I/O.", {"n": int})
    def wait_io(args: dict[str, Any]) -> str:
        time.sleep(seconds)
        return f"done {args['n']}"

    return wait_io


async def one_round(base_url: str, server: ScriptedServer, tools: int, seconds: float) -> float:
    server.enqueue(script.tool_calls([("wait_io", {"n": i}) for i in range(tools)]),
                   script.text("ok"))
    options = AgentOptions(model="test-model", base_url=base_url, tools=[make_tool(seconds)],
                           auto_execute_tools=True)
    calls_known = last_result = 0.0
    async with Client(options) as client:
        await client.query("go")
        async for item in client.receive_messages():
            if isinstance(item, ToolUseBlock):
                calls_known = time.perf_counter()
            elif isinstance(item, ToolResultBlock):
                last_result = time.perf_counter()
    return last_result - calls_known


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with ScriptedServer() as server:
        await one_round(server.base_url, server, args.tools, args.seconds)  # warm up
        times = [await one_round(server.base_url, server, args.tools, args.seconds)
                 for _ in range(args.runs)]
    median = statistics.median(times)
    print(f"{args.tools} sync tools of {args.seconds:g} s: median {median * 1000:.0f} ms "
          f"over {args.runs} runs (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}); "
          f"ideal {args.seconds * 1000:.0f} ms; before 432 ms, pydantic-ai 253 ms")


if __name__ == "__main__":
    asyncio.run(main())
