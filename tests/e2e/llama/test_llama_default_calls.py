"""The SDK's default on a real llama.cpp server: a tiny model calls tools without any option.

Measured with BFCL's cases (``bench/bfcl.py``): SmolLM2-135M sent ``tools=`` never wrote
a native call, so the SDK's default used to get none right. llama.cpp answers ``/props``,
the model is not known to call tools natively, so the default is constrained decoding:
the reply can only be an answer or calls of the offered tools.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_fixtures import llama_options
from llama_process import LlamaServer
from test_llama_constrained import UNITS, convert_tool

from desktop_agent import Client, ToolUseBlock
from desktop_agent.core.tooling import tool_call_mode

pytestmark = pytest.mark.e2e


async def test_a_tiny_model_calls_the_tool_with_default_options(
        llama_server: LlamaServer) -> None:
    tool_call_mode.forget(llama_server.base_url)
    calls: list[dict[str, Any]] = []
    options = llama_options(llama_server, tools=[convert_tool(calls)], max_tokens=96,
                            constrained_tool_calls="auto", auto_execute_tools=True,
                            max_tool_iterations=1, extra_body={"cache_prompt": False})
    async with Client(options) as client:
        await client.query("Use the convert tool: convert 300 degrees to kelvin.")
        items = [item async for item in client.receive_messages()]
    mode = tool_call_mode.decided(options)
    assert mode is not None and mode.constrained, mode
    assert "llama.cpp" in mode.reason
    uses = [i for i in items if isinstance(i, ToolUseBlock)]
    assert uses, "with default options the model called the tool"
    assert all(u.name == "convert" and u.input.get("unit") in UNITS for u in uses)
    assert calls[0] == {"value": 300, "unit": "kelvin"}
