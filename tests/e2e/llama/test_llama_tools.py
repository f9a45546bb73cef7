"""Tool calls from a real model: auto-execution with approval, text then calls, parallel calls."""

from __future__ import annotations

from typing import Any

import pytest
from agent_fixtures import (
    WEATHER_REPORT,
    assert_history_valid,
    llama_options,
    make_weather_tool,
)
from llama_process import LlamaServer

from desktop_agent import (
    Client,
    PermissionResultAllow,
    TextBlock,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)

pytestmark = pytest.mark.e2e

# Measured facts (see conftest): at temperature 0 this message makes SmolLM2 call
# get_weather(city="Paris") twice and stop with finish_reason "tool_calls"...
PARALLEL_PROMPT = "<tool_call> get_weather Paris"
# ...and, greedy too, it copies a user message's opening line before calling the tool,
# which gives text then a call in one response. Several wordings are tried so a build
# whose greedy path differs on one of them still shows the behaviour under test.
TEXT_THEN_CALLS_PROMPTS = (
    "Checking Paris.\n<tool_call> get_weather Paris",
    "Looking up Paris.\n<tool_call> get_weather Paris",
    "One moment.\n<tool_call> get_weather Paris",
    "Paris, please.\n<tool_call> get_weather Paris",
)
# Greedy replies can flip on near-ties too, so the greedy tests also skip the cache: the
# result then does not depend on which test ran before on the shared server.
FULL_PROMPT_EVAL = {"cache_prompt": False}


async def _collect(client: Client) -> list[Any]:
    return [item async for item in client.receive_messages()]


async def test_parallel_calls_in_one_response(llama_server: LlamaServer) -> None:
    calls: list[dict[str, Any]] = []
    options = llama_options(llama_server, tools=[make_weather_tool(calls)], max_tokens=96,
                            extra_body=FULL_PROMPT_EVAL)
    async with Client(options) as client:
        await client.query(PARALLEL_PROMPT)
        items = await _collect(client)
        history = client.history
        finish_reason = client.turn_metadata["finish_reason"]

    uses = [i for i in items if isinstance(i, ToolUseBlock)]
    # How many calls the tiny model makes differs between llama.cpp builds (two on the
    # ones measured so far, sometimes cut off by max_tokens); each must be whole and
    # distinct, and the server's own ids kept.
    assert finish_reason in ("tool_calls", "length")
    assert uses and all(u.name == "get_weather" and u.input == {"city": "Paris"} for u in uses)
    assert len({u.id for u in uses}) == len(uses)
    assert not calls, "manual mode must not run tools"
    assert history[-1]["role"] == "assistant"
    assert [c["id"] for c in history[-1]["tool_calls"]] == [u.id for u in uses]


async def test_text_then_tool_calls_in_one_response(llama_server: LlamaServer) -> None:
    options = llama_options(llama_server, tools=[make_weather_tool([])], max_tokens=96,
                            extra_body=FULL_PROMPT_EVAL)
    replies = []
    for prompt in TEXT_THEN_CALLS_PROMPTS:
        async with Client(options) as client:
            await client.query(prompt)
            items = await _collect(client)
            reply = client.history[-1]
            positions = [i for i, item in enumerate(items) if isinstance(item, ToolUseBlock)]
            text_first = bool(positions) and any(
                isinstance(b, TextBlock) and b.text.strip() for b in items[:positions[0]])
            if not text_first:
                replies.append(reply)
                continue
            uses = [i for i in items if isinstance(i, ToolUseBlock)]
            # answer the calls ourselves (manual mode); the history must then be valid
            for use in uses:
                await client.add_tool_result(use.id, f"Paris: {WEATHER_REPORT}", name=use.name)
            history = client.history
            break
    else:
        pytest.fail(f"no prompt gave text and then a tool call; the model wrote {replies!r}")

    first_call = positions[0]
    text_before = "".join(b.text for b in items[:first_call] if isinstance(b, TextBlock))
    assert all(isinstance(i, TextBlock) for i in items[:first_call])
    assert all(u.name == "get_weather" and u.input["city"].strip() == "Paris" for u in uses)
    assert reply["content"] == text_before
    assert [c["id"] for c in reply["tool_calls"]] == [u.id for u in uses]
    # a call cut off by max_tokens is reported, not run and not kept in history
    cut_off = [i for i in items if isinstance(i, ToolUseError)]
    assert all(e.name == "get_weather" and e.raw_data is not None for e in cut_off)
    assert isinstance(items[-1], Usage)
    assert_history_valid(history)


async def test_auto_execution_round_trip_with_approval(llama_server: LlamaServer) -> None:
    ran: list[dict[str, Any]] = []
    asked: list[tuple[str, dict[str, Any], str]] = []

    async def approve(name: str, tool_input: dict[str, Any],
                      ctx: ToolPermissionContext) -> PermissionResultAllow:
        asked.append((name, tool_input, ctx.tool_use_id))
        return PermissionResultAllow()

    options = llama_options(
        llama_server, tools=[make_weather_tool(ran)], auto_execute_tools=True,
        can_use_tool=approve, max_tokens=96, max_tool_iterations=2, extra_body=FULL_PROMPT_EVAL)
    async with Client(options) as client:
        await client.query(PARALLEL_PROMPT)
        items = await _collect(client)
        history = client.history
        metadata = client.turn_metadata

    uses = [i for i in items if isinstance(i, ToolUseBlock)]
    results = [i for i in items if isinstance(i, ToolResultBlock)]
    assert uses and all(u.name == "get_weather" for u in uses)
    assert [a[2] for a in asked] == [u.id for u in uses], "every call went through approval"
    assert ran == [u.input for u in uses], "every approved call ran once"
    assert [r.tool_use_id for r in results] == [u.id for u in uses]
    assert all(not r.is_error and WEATHER_REPORT in r.content for r in results)
    assert all(r.decision == "approved" for r in results)
    # the model answered after seeing the results
    last_result = max(i for i, item in enumerate(items) if isinstance(item, ToolResultBlock))
    answer = "".join(b.text for b in items[last_result:] if isinstance(b, TextBlock))
    assert answer.strip()
    assert metadata["iterations"] == 1 and metadata["requests"] == 2
    assert history[-1] == {"role": "assistant", "content": answer}
    tool_messages = [m for m in history if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [r.content for r in results]
    assert_history_valid(history)
