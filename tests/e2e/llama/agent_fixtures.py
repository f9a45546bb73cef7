"""Shared pieces of the llama e2e tests: the weather tool, options, history checks."""

from __future__ import annotations

from typing import Any

from llama_process import LlamaServer

from desktop_agent import AgentOptions, Tool, tool
from desktop_agent.core.wire.retry import RetryPolicy

WEATHER_REPORT = "Sunny, 22 C"


def make_weather_tool(calls: list[dict[str, Any]]) -> Tool:
    """A ``get_weather(city)`` tool that records each call in ``calls``.

    Its schema is the one the facts in the conftest were measured with; the
    model's choices at a given seed depend on this exact prompt text.
    """

    @tool("get_weather", "Get the current weather for a city.", {"city": str})
    def get_weather(args: dict[str, Any]) -> str:
        calls.append(dict(args))
        return f"{args['city']}: {WEATHER_REPORT}"

    return get_weather


def llama_options(server: LlamaServer, **overrides: Any) -> AgentOptions:
    """Options for the real server: greedy, short replies, no retries, bounded waits."""
    settings: dict[str, Any] = {
        "model": server.model,
        "base_url": server.base_url,
        "temperature": 0.0,
        "max_tokens": 48,
        "timeout": server.scaled_timeout(30.0),  # idle wait; stretched on a busy machine
        "max_turns": None,
        "retry": RetryPolicy(max_retries=0),
        # The tier's facts about native calls (conftest) were measured with native
        # requests; the SDK's default on llama.cpp is constrained (test_llama_default_calls).
        "constrained_tool_calls": False,
    }
    settings.update(overrides)
    return AgentOptions(**settings)


def assert_history_valid(history: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered right after it, and roles are OpenAI roles."""
    open_ids: list[str] = []
    for message in history:
        role = message["role"]
        assert role in ("user", "assistant", "tool"), message
        if role == "tool":
            assert message["tool_call_id"] in open_ids, f"result for an unknown call: {message}"
            open_ids.remove(message["tool_call_id"])
            assert isinstance(message["content"], str)
            continue
        assert not open_ids, f"calls {open_ids} unanswered before a {role} message"
        if role == "user":
            assert isinstance(message["content"], str) and message["content"].strip()
        else:
            calls = message.get("tool_calls") or []
            assert message.get("content") or calls, f"empty assistant message: {message}"
            for call in calls:
                assert call["type"] == "function" and call["function"]["name"]
                assert isinstance(call["function"]["arguments"], str)
                open_ids.append(call["id"])
    assert not open_ids, f"calls {open_ids} never answered"
