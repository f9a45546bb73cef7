"""The seed's documented API, name by name, after the rename ``open_agent`` -> ``desktop_agent``.

The seed texts themselves are not in this repository; the names below are
those its README, API reference and examples document (query, Client,
AgentOptions, blocks, @tool, hooks, config, context, utils).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

TOP_LEVEL = [
    "query", "Client", "AgentOptions", "AssistantMessage", "TextBlock", "ToolUseBlock",
    "ToolUseError", "ToolResultBlock", "ThinkingBlock", "Usage", "tool", "Tool",
    "HookDecision", "PreToolUseEvent", "PostToolUseEvent", "UserPromptSubmitEvent",
    "HOOK_PRE_TOOL_USE", "HOOK_POST_TOOL_USE", "HOOK_USER_PROMPT_SUBMIT",
    "estimate_tokens", "truncate_messages", "AgentError", "APIError", "ServerConnectionError",
    "ConfigurationError", "MaxTurnsExceededError", "ToolInputError",
]
MODULES = {
    "desktop_agent.config": ["get_base_url", "get_model", "PROVIDER_DEFAULTS"],
    "desktop_agent.context": ["estimate_tokens", "truncate_messages"],
    "desktop_agent.utils": ["format_messages", "format_tools", "ToolCallAggregator"],
    "desktop_agent.hooks": ["HookDecision", "PreToolUseEvent", "PostToolUseEvent",
                            "UserPromptSubmitEvent", "HOOK_PRE_TOOL_USE", "HOOK_POST_TOOL_USE",
                            "HOOK_USER_PROMPT_SUBMIT"],
    "desktop_agent.tools": ["tool", "Tool"],
    "desktop_agent.types": ["AgentOptions", "AssistantMessage", "TextBlock", "ToolUseBlock",
                            "ToolUseError"],
}
OPTION_FIELDS = ["system_prompt", "model", "base_url", "max_turns", "max_tokens", "temperature",
                 "api_key", "timeout", "tools", "auto_execute_tools", "max_tool_iterations",
                 "hooks"]
CLIENT_MEMBERS = ["query", "receive_messages", "add_tool_result", "interrupt", "close",
                  "history", "message_history", "turn_count", "turn_metadata"]


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_top_level_name(name: str) -> None:
    import desktop_agent

    assert getattr(desktop_agent, name) is not None
    assert name in dir(desktop_agent)


@pytest.mark.parametrize("module, name", [(m, n) for m, names in MODULES.items() for n in names])
def test_module_name(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


def test_agent_options_fields_and_seed_defaults() -> None:
    from desktop_agent import AgentOptions

    fields = {f.name for f in dataclasses.fields(AgentOptions)}
    assert set(OPTION_FIELDS) <= fields
    options = AgentOptions(system_prompt="s", model="m", base_url="http://localhost:1234/v1")
    assert (options.max_tokens, options.temperature, options.api_key) == (4096, 0.7, "not-needed")


@pytest.mark.parametrize("member", CLIENT_MEMBERS)
def test_client_member(member: str) -> None:
    from desktop_agent import AgentOptions, Client

    assert hasattr(Client(AgentOptions(model="m", base_url="http://localhost:1234/v1")), member)


def test_client_shapes() -> None:
    from desktop_agent import AgentOptions, Client

    client = Client(AgentOptions(model="m", base_url="http://localhost:1234/v1", max_turns=5))
    assert client.turn_count == 0
    assert client.turn_metadata == {"turn_count": 0, "max_turns": 5}
    client.message_history = [{"role": "user", "content": "hi"}]
    assert client.message_history == [{"role": "user", "content": "hi"}]
    assert client.message_history is not client.message_history  # a copy each time
    assert inspect.isasyncgenfunction(Client.receive_messages)


def test_config_helpers_follow_the_seed_order(monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_agent.config import PROVIDER_DEFAULTS, get_base_url, get_model

    for var in ("OPEN_AGENT_MODEL", "OPEN_AGENT_BASE_URL", "DESKTOP_AGENT_MODEL",
                "DESKTOP_AGENT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert get_model() is None and get_model("fallback") == "fallback"
    assert get_base_url() == PROVIDER_DEFAULTS["lmstudio"] == "http://localhost:1234/v1"
    assert get_base_url(provider="ollama") == "http://localhost:11434/v1"
    assert get_base_url("http://box:9000/v1", provider="ollama") == "http://box:9000/v1"
    monkeypatch.setenv("OPEN_AGENT_MODEL", "env-model")
    monkeypatch.setenv("OPEN_AGENT_BASE_URL", "http://env:1/v1")
    assert get_model("fallback") == "env-model"
    assert get_model("pinned", prefer_env=False) == "pinned"
    assert get_base_url(provider="vllm") == "http://env:1/v1"
    assert get_base_url(provider="vllm", prefer_env=False) == "http://localhost:8000/v1"
    monkeypatch.setenv("DESKTOP_AGENT_MODEL", "renamed")  # the new name wins
    assert get_model() == "renamed"
    from desktop_agent import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown provider"):
        get_base_url(provider="nonesuch", prefer_env=False)


def test_utils_format_helpers() -> None:
    from desktop_agent import tool
    from desktop_agent.utils import format_messages, format_tools

    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert format_messages("sys", "c", history) == [
        {"role": "system", "content": "sys"}, *history, {"role": "user", "content": "c"}]

    @tool("echo", "Say it back", {"text": str})
    async def echo(args):
        return args["text"]

    (schema,) = format_tools([echo])
    assert schema["type"] == "function" and schema["function"]["name"] == "echo"
    assert schema["function"]["parameters"]["properties"]["text"] == {"type": "string"}


def test_tool_call_aggregator_on_streamed_chunks() -> None:
    from desktop_agent import TextBlock, ToolUseBlock, ToolUseError
    from desktop_agent.testing import script
    from desktop_agent.testing.script import Chunk
    from desktop_agent.utils import ToolCallAggregator

    aggregator = ToolCallAggregator()
    replies = script.tool_calls([("lookup", {"q": "rivers"}), ("lookup", '{"q": ')],
                                text_before="Let me look.")
    texts = [aggregator.process_chunk(step.data) for step in replies if isinstance(step, Chunk)]
    assert "".join(t.text for t in texts if isinstance(t, TextBlock)) == "Let me look."
    calls = aggregator.finalize_tools()
    assert isinstance(calls[0], ToolUseBlock) and calls[0].input == {"q": "rivers"}
    assert isinstance(calls[1], ToolUseError)  # arguments that never became JSON
    assert aggregator.finish_reason == "tool_calls"


def test_tool_call_aggregator_takes_openai_chunk_objects() -> None:
    from openai.types.chat import ChatCompletionChunk

    from desktop_agent.testing import script
    from desktop_agent.testing.script import Chunk
    from desktop_agent.utils import ToolCallAggregator

    aggregator = ToolCallAggregator()
    steps = script.tool_calls([("lookup", {"q": "seas"})], text_before="One moment.")
    pieces = []
    for step in steps:
        if isinstance(step, Chunk) and step.data.get("choices"):
            block = aggregator.process_chunk(ChatCompletionChunk.model_validate(step.data))
            if block is not None:
                pieces.append(block.text)
    assert "".join(pieces) == "One moment."
    (call,) = aggregator.finalize_tools()
    assert (call.name, call.input) == ("lookup", {"q": "seas"})
