"""Prompt tokens the app adds, and what compaction costs.

Prints, counted with the app's own estimate on the JSON a real request
carried to a local ScriptedServer:

* the tokens a first "hello" costs, without tools and with the seven built-in
  tools, and each built-in schema's share (and ``update_plan``'s, which the
  session offers with them);
* compaction on a 40-turn conversation with 300-token tool results under a
  2,048-token context: how often it ran, milliseconds per compaction (the
  summary request to the scripted server included, so this is the app's own
  cost, not a model's), and prompt tokens before/after;
* the per-request cost of checking the prompt when nothing needs compacting.

Timings are medians on a shared, busy machine: read them as orders of magnitude.

    python bench/prompt_overhead.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

from test_compaction import agent_responder, read_chunk_tool, run_turns

from desktop_agent import AgentOptions, Client
from desktop_agent.core.context.compaction import ContextKeeper
from desktop_agent.core.context.tokens import count_text_tokens, estimate_tokens
from desktop_agent.core.tooling.builtin import builtin_tools
from desktop_agent.core.tooling.schema_cost import schema_costs
from desktop_agent.core.types import CompactionBlock
from desktop_agent.testing import ScriptedServer


def _options(server: ScriptedServer, **overrides: Any) -> AgentOptions:
    values: dict[str, Any] = {"model": "test-model", "base_url": server.base_url,
                              "max_turns": None, "timeout": 30.0}
    values.update(overrides)
    return AgentOptions(**values)


async def hello_cost(server: ScriptedServer) -> None:
    hello = count_text_tokens("hello")
    with tempfile.TemporaryDirectory() as folder:
        tools = builtin_tools(folder)
        for label, chosen in (("no tools", []), ("7 built-in tools", tools)):
            async with Client(_options(server, tools=chosen)) as client:
                await client.query("hello")
                async for _ in client.receive_messages():
                    pass
            sent = server.requests[-1]
            total = estimate_tokens(sent["messages"], tools=sent.get("tools"))
            print(f"  'hello' with {label:17s}: {total:4d} prompt tokens "
                  f"({total - hello} beyond the word itself: message framing"
                  f"{' and tool schemas' if chosen else ''}; no system prompt, nothing else)")
        print("  built-in schemas, tokens each (compact JSON as sent):")
        for cost in schema_costs(tools):
            print(f"    {cost.name:11s} {cost.tokens:4d}")
        print(f"    {'total':11s} {sum(c.tokens for c in schema_costs(tools)):4d} "
              "(target <= 400)")
        from desktop_agent.session.tools.plan import plan_tool  # offered with the built-ins

        [plan] = schema_costs([plan_tool()])
        print(f"  update_plan (the session offers it with them): {plan.tokens} tokens more")


async def compaction_cost(server: ScriptedServer, mode: str) -> None:
    server.requests.clear()
    server.prompt_tokens.clear()
    server.max_prompt_tokens = 2048
    server.responder = agent_responder()
    options = _options(server, tools=[read_chunk_tool()], auto_execute_tools=True,
                       context_length=2048, max_tokens=256, compaction=mode)
    timings: list[float] = []
    async with Client(options) as client:
        keeper = client.context_keeper
        original = keeper._compact

        async def timed(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args)
            finally:
                timings.append((time.perf_counter() - started) * 1000)

        keeper._compact = timed  # type: ignore[method-assign]
        items = await run_turns(client, 40)
    blocks = [i for i in items if isinstance(i, CompactionBlock)]
    before = statistics.median(b.tokens_before for b in blocks)
    after = statistics.median(b.tokens_after for b in blocks)
    refused = sum(1 for n in server.prompt_tokens if n > 2048)
    print(f"  {mode:11s}: {len(blocks)} compactions in 40 turns, "
          f"{statistics.median(timings):.1f} ms median (max {max(timings):.1f}), "
          f"prompt {before:.0f} -> {after:.0f} tokens (median), "
          f"largest prompt sent {max(server.prompt_tokens)}, refused {refused}")


async def check_cost() -> None:
    history: list[dict[str, Any]] = []
    for n in range(100):
        history += [{"role": "user", "content": f"question {n} " * 20},
                    {"role": "assistant", "content": f"answer {n} " * 60}]
    options = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1",
                           context_length=1_000_000)
    keeper = ContextKeeper()
    samples = []
    for _ in range(30):
        request: dict[str, Any] = {"messages": list(history)}
        started = time.perf_counter()
        async for _block in keeper.fit(request, options, None):
            pass
        samples.append((time.perf_counter() - started) * 1000)
    print(f"  checking a 200-message prompt before a request: {statistics.median(samples):.2f} ms "
          f"median (first, uncached: {samples[0]:.1f} ms)")


async def main() -> None:
    with ScriptedServer() as server:
        print("Prompt overhead (app's cl100k estimate of the request as sent):")
        await hello_cost(server)
        print("Compaction, 40 turns x 300-token tool results, context_length=2048:")
        for mode in ("summarise", "drop_oldest"):
            await compaction_cost(server, mode)
    print("Per-request check when nothing is compacted:")
    await check_cost()


if __name__ == "__main__":
    asyncio.run(main())
