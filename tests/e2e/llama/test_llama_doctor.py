"""The model doctor on the real llama.cpp: the template without tools, the probe, the prefix cache.

SmolLM2's own GGUF template has no place for tools: llama.cpp drops them
without an error (``/apply-template`` renders the same prompt with and without
them). With the project's Hermes template it renders them.
"""

from __future__ import annotations

import pytest
from llama_process import LlamaServer

from desktop_agent import AgentOptions, Client
from desktop_agent.core.servers.template_tools import template_tools
from desktop_agent.core.servers.tool_call_support import tool_call_support
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.tooling.builtin import builtin_tools
from desktop_agent.core.tooling.tool_call_probe import probe_tool_calls
from desktop_agent.core.types import Usage

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _fresh_modes():
    tool_call_mode.forget()
    yield
    tool_call_mode.forget()


async def test_the_gguf_template_drops_tools_and_it_is_said(llama_server_own_template) -> None:
    found = await template_tools(llama_server_own_template.base_url)
    assert found.ignored is True and found.how == "rendered"
    assert "has no place for tools" in (found.sentence or "")
    server = llama_server_own_template
    support = await tool_call_support(server.base_url, server.model)
    assert support.template_ignores_tools is True
    mode = await tool_call_mode.resolve(AgentOptions(
        model=llama_server_own_template.model, base_url=llama_server_own_template.base_url,
        tools=builtin_tools("/tmp")))
    assert mode.constrained and mode.template_ignores_tools
    assert "chat template has no place for tools" in mode.reason


async def test_the_hermes_template_renders_tools(llama_server: LlamaServer) -> None:
    found = await template_tools(llama_server.base_url)
    assert found.ignored is False and found.sentence is None


async def test_the_probe_measures_the_real_model(llama_server_own_template) -> None:
    server = llama_server_own_template
    result = await probe_tool_calls(server.base_url, server.model)
    assert result.error is None and result.cases == 4
    assert result.template_ignores_tools is True
    # the model never sees the tools natively: only the no-tool question can be right
    assert result.native <= 1
    assert result.constrained is not None
    assert result.summary.startswith(f"native calls: {result.native} of 4")


async def test_turn_two_reuses_the_prefix_of_turn_one(llama_server: LlamaServer,
                                                      tmp_path) -> None:
    options = AgentOptions(model=llama_server.model, base_url=llama_server.base_url,
                           tools=builtin_tools(str(tmp_path)), max_tokens=24, temperature=0,
                           constrained_tool_calls=False, auto_execute_tools=False,
                           system_prompt="You are a helpful assistant.")
    usages: list[Usage] = []
    async with Client(options) as client:
        for prompt in ("Say hi.", "Say bye."):
            await client.query(prompt)
            usages += [i async for i in client.receive_messages() if isinstance(i, Usage)]
    first, second = usages
    assert first.prompt_tokens and second.prompt_tokens and second.prompt_tokens_evaluated
    new_tokens = second.prompt_tokens - first.prompt_tokens
    assert second.cached_prompt_tokens and second.cached_prompt_tokens >= first.prompt_tokens
    assert second.prompt_tokens_evaluated <= new_tokens * 1.05, (first, second)
