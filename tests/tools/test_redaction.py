"""Secrets are blanked out of every tool result and error, and only secrets are.

Through a real Client and the scripted server over HTTP: a file holding a
token read by ``read_file``, found by ``grep``, a failing tool whose message
echoes it, a server whose mid-stream error chunk echoes the API key, and MCP
servers whose plain env values must stay readable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desktop_agent import AgentOptions, Client
from desktop_agent.core import errors
from desktop_agent.core.tooling.builtin import builtin_tools
from desktop_agent.core.tooling.config import SecretRef
from desktop_agent.core.tooling.mcp import McpServerPool
from desktop_agent.core.tooling.tools import tool
from desktop_agent.core.types import ToolResultBlock
from desktop_agent.testing import ScriptedServer, script

TOKEN = "ghp_ConversationToken_8c1f2e9d"
API_KEY = "sk-server-key-0123456789abcdef"


def _options(server: ScriptedServer, workdir: Path, **extra: Any) -> AgentOptions:
    @tool("leaky", "Fails loudly.", {})
    def leaky(_args: dict[str, Any]) -> str:
        raise RuntimeError(f"could not authenticate with {TOKEN}")

    tools = [*builtin_tools(workdir, include=("read_file", "grep")), leaky]
    return AgentOptions(model="test-model", base_url=server.base_url, tools=tools,
                        auto_execute_tools=True, max_turns=None, secret_values=(TOKEN,),
                        **extra)


async def test_file_contents_grep_hits_and_tool_errors_lose_the_secret(
        server: ScriptedServer, tmp_path: Path) -> None:
    (tmp_path / "env.txt").write_text(f"GITHUB_TOKEN={TOKEN}\nOTHER=plain-value\n")
    server.enqueue(script.tool_calls([("read_file", {"path": "env.txt"}),
                                      ("grep", {"pattern": "TOKEN"}),
                                      ("leaky", {})]),
                   script.text("done"))
    async with Client(_options(server, tmp_path)) as client:
        await client.query("look")
        items = [item async for item in client.receive_messages()]
        history = json.dumps(client.history)
    results = [i for i in items if isinstance(i, ToolResultBlock)]
    assert "GITHUB_TOKEN=[redacted]" in results[0].content
    assert "OTHER=plain-value" in results[0].content  # only the secret goes
    assert "env.txt:1: GITHUB_TOKEN=[redacted]" in results[1].content
    assert "could not authenticate with [redacted]" in results[2].content
    assert TOKEN not in repr(items) and TOKEN not in history
    assert TOKEN not in json.dumps(server.requests[-1])  # nor sent back to the model


async def test_a_mid_stream_error_that_echoes_the_api_key_is_redacted(
        server: ScriptedServer, tmp_path: Path) -> None:
    server.api_key = API_KEY
    server.enqueue(script.from_chunks([
        {"error": {"message": f"invalid api key {API_KEY} for this model", "code": 401}}]))
    async with Client(_options(server, tmp_path, api_key=API_KEY)) as client:
        await client.query("hi")
        with pytest.raises(errors.ServerError) as caught:
            async for _ in client.receive_messages():
                pass
    assert API_KEY not in str(caught.value) and API_KEY not in caught.value.body
    assert "invalid api key [redacted]" in str(caught.value)


async def test_mcp_plain_env_values_stay_and_secret_ones_go(stdio_server: Any) -> None:
    secret = "tok-mcp-0123456789-secret"
    config = stdio_server("test", env={"GREETING_STYLE": "hello",
                                       "API_TOKEN": SecretRef("test-token")})
    async with McpServerPool([config], secret_lookup={"test-token": secret}.get) as pool:
        tools = {t.name: t for t in await pool.list_tools()}
        plain = await tools["test__echo"].execute({"text": "hello world"})
        hidden = await tools["test__echo"].execute({"text": f"key {secret}"})
    assert plain == "echo: hello world"
    assert secret not in hidden and "[redacted]" in hidden
