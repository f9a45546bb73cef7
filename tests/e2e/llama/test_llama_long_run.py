"""A long tool-using conversation on a 2,048-token llama.cpp context finishes.

SmolLM2-135M under ``-c 2048`` (the session server): each of 15 turns calls a
tool whose report is a few hundred tokens, so the conversation outgrows the
window after a few turns. The Client compacts the request (a summary by the
same model, or dropped messages when that fails) and every turn completes with
no context error; the history keeps every message.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_fixtures import assert_history_valid, llama_options
from llama_process import LlamaServer

from desktop_agent import Client, Tool, tool
from desktop_agent.core.types import CompactionBlock, ToolResultBlock

# 15 turns of two requests each, and a few summaries: a minute or two on two idle cores,
# several on a busy machine
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

CITIES = ("Paris", "Lyon", "Nice", "Lille", "Nantes", "Rennes", "Brest", "Dijon", "Metz",
          "Reims", "Tours", "Caen", "Rouen", "Nancy", "Pau")
TURNS = 15


def long_weather_tool(calls: list[dict[str, Any]]) -> Tool:
    """``get_weather(city)`` with an hourly report of about 150 tokens."""

    @tool("get_weather", "Get the current weather for a city.", {"city": str})
    def get_weather(args: dict[str, Any]) -> str:
        calls.append(dict(args))
        hours = [f"{h:02d}:00 sunny, {15 + h % 9} C, wind {5 + h % 4} km/h" for h in range(8, 20)]
        return f"{args.get('city')}: " + "; ".join(hours)

    return get_weather


async def test_fifteen_tool_turns_fit_a_2048_context(llama_server: LlamaServer) -> None:
    calls: list[dict[str, Any]] = []
    options = llama_options(
        llama_server, tools=[long_weather_tool(calls)], auto_execute_tools=True,
        max_tool_iterations=1, context_length=2048, max_tokens=32,
        timeout=300.0)
    items: list[Any] = []
    async with Client(options) as client:
        for city in CITIES[:TURNS]:
            await client.query(f"<tool_call> get_weather {city}")
            items += [item async for item in client.receive_messages()]
        history = client.history
        covered = client.context_keeper.covered

    assert sum(m["role"] == "user" for m in history) == TURNS
    assert_history_valid(history)
    assert calls, "the model called the tool"
    assert any(isinstance(i, ToolResultBlock) for i in items)
    # the conversation outgrew the window, so the requests were compacted
    compactions = [i for i in items if isinstance(i, CompactionBlock)]
    assert compactions and covered > 0
    assert len(compactions) < TURNS  # in steps, not on every request
