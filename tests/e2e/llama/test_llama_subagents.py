"""Subagents on the real llama.cpp server: two delegations at once on a server with two slots.

The main agent's replies are scripted (SmolLM2 does not reliably pick a
subagent by itself); the subagents are the real model, each asked from its own
clean context, side by side in the server's two slots.
"""

from __future__ import annotations

from typing import Any

import pytest

from desktop_agent import AgentDefinition, AgentOptions, Client, SubagentBlock, ToolResultBlock
from desktop_agent.testing import script

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


async def test_two_subagents_answer_side_by_side_from_their_own_contexts(
        server: Any, start_llama_server: Any) -> None:
    llama = start_llama_server(parallel=2, context_size=4096)
    writers = {name: AgentDefinition(f"Writes about {topic}.", f"You write about {topic}.",
                                     model=llama.model, base_url=llama.base_url, max_turns=1)
               for name, topic in (("baker", "bread"), ("sailor", "the sea"))}
    server.enqueue(script.tool_calls([("delegate", {"agent": "baker", "prompt": "One line."}),
                                      ("delegate", {"agent": "sailor", "prompt": "One line."})]),
                   script.text("Both wrote."))
    options = AgentOptions(model="main", base_url=server.base_url, agents=writers,
                           auto_execute_tools=True, allowed_tools=["delegate"], max_tokens=24,
                           temperature=0, extra_body={"ignore_eos": True, "seed": 1})
    async with Client(options) as client:
        await client.query("Have both write.")
        items = [i async for i in client.receive_messages()]
    reports = [i for i in items if isinstance(i, SubagentBlock)]
    steps = [(r.agent, r.event) for r in reports if r.event != "block"]
    # both started before either finished: they ran at once
    assert {steps[0], steps[1]} == {("baker", "started"), ("sailor", "started")}
    finished = {r.agent: r for r in reports if r.event == "finished"}
    assert set(finished) == {"baker", "sailor"}
    for run in finished.values():
        assert run.error is None and run.model == llama.model and run.requests == 1
        assert run.result and run.tokens and run.tokens > 24
    results = [i for i in items if isinstance(i, ToolResultBlock) and i.name == "delegate"]
    assert len(results) == 2 and all(not r.is_error for r in results)
    for result in results:
        agent = "baker" if finished["baker"].result in result.content else "sailor"
        assert result.content.startswith(finished[agent].result)
        assert f"[subagent {agent} on {llama.model}: 1 request(s)" in result.content
    # the main agent's next request holds the two answers, not the subagents' contexts
    follow_up = server.requests[1]["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "tool", "tool"]
