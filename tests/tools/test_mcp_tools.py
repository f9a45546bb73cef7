"""MCP servers as tools, against real servers started as subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import mcp_types
import pytest
from process_checks import wait_until_dead
from tier_policy import part_missing

from desktop_agent.core.tooling.config import McpServerConfig, SecretRef, ToolConfigError
from desktop_agent.core.tooling.mcp import (
    McpServerError,
    McpServerPool,
    McpToolError,
    core_tool_name,
    render_result,
)
from desktop_agent.core.tooling.tools import Tool

StdioServer = Callable[..., McpServerConfig]


def _by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}




async def test_stdio_server_tools_become_core_tools(stdio_server: StdioServer) -> None:
    async with McpServerPool([stdio_server("test", trusted=True)]) as pool:
        assert pool.status()[0].state == "idle"  # nothing starts before it is needed
        tools = _by_name(await pool.list_tools())
        assert pool.status()[0].state == "running"
    echo = tools["test__echo"]
    assert echo.source == "test"
    assert echo.read_only is True
    assert tools["test__write_file"].read_only is False
    assert echo.description == "Repeat the text back."
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo.input_schema["required"] == ["text"]
    assert echo.to_openai_format()["function"]["name"] == "test__echo"


async def test_calls_return_text_structured_content_and_errors(stdio_server: StdioServer) -> None:
    async with McpServerPool([stdio_server("test")]) as pool:
        tools = _by_name(await pool.list_tools())
        assert await tools["test__echo"].execute({"text": "hi"}) == "echo: hi"
        assert json.loads(await tools["test__add"].execute({"a": 2, "b": 3})) == {"total": 5}
        with pytest.raises(McpToolError, match="disk is full"):
            await tools["test__fail"].execute({"message": "disk is full"})
        # The server keeps working after a tool error.
        assert await tools["test__echo"].execute({"text": "still here"}) == "echo: still here"


async def test_streamable_http_server(http_server_url: str) -> None:
    config = McpServerConfig("web", url=http_server_url, headers={"X-Client": "tests"})
    async with McpServerPool([config]) as pool:
        tools = _by_name(await pool.list_tools())
        assert tools["web__echo"].source == "web"
        assert await tools["web__echo"].execute({"text": "over http"}) == "echo: over http"
        assert json.loads(await tools["web__add"].execute({"a": 1, "b": 1})) == {"total": 2}
        status = pool.status()[0]
        assert (status.transport, status.state) == ("http", "running")


async def test_published_time_server_from_pypi() -> None:
    config = McpServerConfig("time", command=sys.executable,
                             args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
                             trusted=True)
    async with McpServerPool([config]) as pool:
        tools = _by_name(await pool.list_tools())
        assert set(tools) >= {"time__get_current_time", "time__convert_time"}
        assert tools["time__get_current_time"].read_only is True
        answer = json.loads(await tools["time__get_current_time"].execute(
            {"timezone": "Europe/Paris"}))
        assert answer["timezone"] == "Europe/Paris"
        assert answer["datetime"].endswith(("+01:00", "+02:00"))


async def test_a_crashed_server_is_restarted_once(stdio_server: StdioServer) -> None:
    async with McpServerPool([stdio_server("test", "--stderr", "booting")]) as pool:
        tools = _by_name(await pool.list_tools())
        first_pid = int(await tools["test__pid"].execute({}))
        with pytest.raises(McpServerError, match="stopped while running crash"):
            await tools["test__crash"].execute({})
        assert pool.status()[0].state == "crashed"
        second_pid = int(await tools["test__pid"].execute({}))
        assert second_pid != first_pid
        status = pool.status()[0]
        assert (status.state, status.restarts) == ("running", 1)
        with pytest.raises(McpServerError):
            await tools["test__crash"].execute({})
        with pytest.raises(McpServerError, match="not restarted automatically") as failure:
            await tools["test__pid"].execute({})
        assert "crashing on purpose" in str(failure.value)
        status = pool.status()[0]
        assert status.state == "failed"
        assert status.stderr[-2:] == ["booting", "crashing on purpose"]
        # The window's retry button starts it again.
        await pool.restart("test")
        assert int(await tools["test__pid"].execute({})) not in (first_pid, second_pid)


async def test_a_server_that_died_while_idle_is_restarted_before_the_call(
    stdio_server: StdioServer,
) -> None:
    async with McpServerPool([stdio_server("test")]) as pool:
        tools = _by_name(await pool.list_tools())
        pid = int(await tools["test__pid"].execute({}))
        os.kill(pid, 9)
        assert await wait_until_dead(pid)
        # The dead server is noticed (its stderr closed) and restarted; the call goes through.
        for _ in range(100):
            if pool.status()[0].state == "crashed":
                break
            await asyncio.sleep(0.05)
        assert pool.status()[0].state == "crashed"
        assert int(await tools["test__pid"].execute({})) != pid
        assert pool.status()[0].restarts == 1


async def test_missing_command_fails_clearly_and_others_still_work(
    stdio_server: StdioServer,
) -> None:
    servers = [McpServerConfig("broken", command="no-such-mcp-server-command"),
               stdio_server("test")]
    async with McpServerPool(servers) as pool:
        tools = _by_name(await pool.list_tools())
        assert "test__echo" in tools
        assert not any(name.startswith("broken__") for name in tools)
        broken = next(s for s in pool.status() if s.name == "broken")
        assert broken.state == "failed"
        assert broken.error == "could not start: command not found: no-such-mcp-server-command"
        with pytest.raises(McpServerError, match="command not found"):
            await pool.server_tools("broken")
        assert await tools["test__echo"].execute({"text": "ok"}) == "echo: ok"


async def test_unreachable_http_server_fails_clearly() -> None:
    async with McpServerPool([McpServerConfig("down", url="http://127.0.0.1:9/mcp")],
                             startup_timeout=10) as pool:
        assert await pool.list_tools() == []
        status = pool.status()[0]
        assert status.state == "failed"
        assert status.error is not None and status.error.startswith("could not start")


async def test_a_server_that_never_answers_times_out_and_does_not_block_others(
    stdio_server: StdioServer,
) -> None:
    silent = McpServerConfig("silent", command=sys.executable,
                             args=("-c", "import time; print('not mcp', flush=True); "
                                         "time.sleep(120)"),
                             startup_timeout=1.5)
    async with McpServerPool([silent, stdio_server("test")]) as pool:
        tools = _by_name(await pool.list_tools())
        assert "test__echo" in tools
        status = {s.name: s for s in pool.status()}
        assert status["silent"].state == "failed"
        assert status["silent"].error == "did not start within 1.5 s"


async def test_a_slow_call_times_out_cleanly_and_the_server_keeps_working(
    stdio_server: StdioServer,
) -> None:
    async with McpServerPool([stdio_server("test", timeout=1.0)]) as pool:
        tools = _by_name(await pool.list_tools())
        with pytest.raises(McpServerError, match="gave no answer to sleep within 1 s"):
            await tools["test__sleep"].execute({"seconds": 30})
        assert await tools["test__echo"].execute({"text": "after"}) == "echo: after"


async def test_cancelling_a_call_leaves_the_server_usable(stdio_server: StdioServer) -> None:
    async with McpServerPool([stdio_server("test")]) as pool:
        tools = _by_name(await pool.list_tools())
        call = asyncio.create_task(tools["test__sleep"].execute({"seconds": 60}))
        await asyncio.sleep(0.3)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await tools["test__echo"].execute({"text": "after"}) == "echo: after"


async def test_aclose_stops_every_server_process(stdio_server: StdioServer) -> None:
    pool = McpServerPool([stdio_server("one"), stdio_server("two")])
    tools = _by_name(await pool.list_tools())
    pids = [int(await tools[f"{n}__pid"].execute({})) for n in ("one", "two")]
    await pool.aclose()
    for pid in pids:
        assert await wait_until_dead(pid)
    assert {s.state for s in pool.status()} == {"stopped"}
    with pytest.raises(McpServerError, match="shut down"):
        await tools["one__echo"].execute({"text": "x"})
    await pool.aclose()  # twice is fine


async def test_secrets_reach_the_server_and_never_its_stderr_tail(
    stdio_server: StdioServer,
) -> None:
    secret = "tok-0123456789-very-secret"
    config = stdio_server("test", "--print-env", "API_TOKEN",
                          env={"API_TOKEN": SecretRef("test-token")})
    async with McpServerPool([config], secret_lookup={"test-token": secret}.get) as pool:
        await pool.list_tools()
        for _ in range(100):
            if pool.status()[0].stderr:
                break
            await asyncio.sleep(0.05)
        lines = pool.status()[0].stderr
    assert lines == ["API_TOKEN=[redacted]"]


async def test_a_missing_secret_is_named_in_the_error(stdio_server: StdioServer) -> None:
    config = stdio_server("test", env={"API_TOKEN": SecretRef("nowhere")})
    async with McpServerPool([config], secret_lookup=lambda name: None) as pool:
        with pytest.raises(McpServerError,
                           match="the secret 'nowhere' for API_TOKEN is not stored"):
            await pool.server_tools("test")


def test_tool_names_are_safe_for_the_model() -> None:
    safe = core_tool_name("my server.v2", "read/file")
    assert re.fullmatch(r"my_server_v2__read_file_[0-9a-f]{8}", safe)
    assert core_tool_name("plain", "tool") == "plain__tool"
    long = core_tool_name("s" * 40, "t" * 40)
    assert len(long) <= 64
    assert long != core_tool_name("s" * 40, "t" * 41)


def test_tool_names_depend_only_on_the_config_never_start_order() -> None:
    # ev.a and ev_a used to swap names depending on which started first,
    # so an "Always allow" rule could apply to the other server's tool
    first = core_tool_name("ev.a", "echo", taken=())
    second = core_tool_name("ev_a", "echo", taken={first})
    assert core_tool_name("ev_a", "echo", taken=()) == second == "ev_a__echo"
    assert core_tool_name("ev.a", "echo", taken={second}) == first != second


def test_results_describe_images_resources_and_structured_content() -> None:
    result = mcp_types.CallToolResult(content=[
        mcp_types.TextContent(type="text", text="here"),
        mcp_types.ImageContent(type="image", data="AAAA", mime_type="image/png"),
        mcp_types.EmbeddedResource(type="resource", resource=mcp_types.TextResourceContents(
            uri="file:///a.txt", text="inside")),
        mcp_types.ResourceLink(type="resource_link", name="doc", uri="https://example.org/d"),
    ])
    # "AAAA" is not a PNG: it is described, never sent as a picture
    assert render_result(result).text == (
        "here\n[image image/png, about 3 bytes, in a format that cannot be sent]\n"
        "[resource file:///a.txt]\ninside\n"
        "[resource link doc: https://example.org/d]")
    only_structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1})
    assert render_result(only_structured).text == '{"n": 1}'


def test_duplicate_server_names_are_refused(stdio_server: StdioServer) -> None:
    with pytest.raises(ValueError, match="two MCP servers"):
        McpServerPool([stdio_server("x"), stdio_server("x")])


def test_a_server_needs_a_command_or_a_url() -> None:
    with pytest.raises(ToolConfigError):
        McpServerConfig("nothing")


async def test_secret_references_are_read_from_the_app_secret_store(
    stdio_server: StdioServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from desktop_agent.appdata import secrets

    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path))
    name = f"tests:mcp-token-{uuid.uuid4().hex}"
    value = f"value-{uuid.uuid4().hex}"
    secrets.set_secret(name, value)
    try:
        config = stdio_server("test", "--print-env", "API_TOKEN",
                              env={"API_TOKEN": SecretRef(name)})
        async with McpServerPool([config], secret_lookup=secrets.get_secret) as pool:
            await pool.list_tools()
            for _ in range(100):
                if pool.status()[0].stderr:
                    break
                await asyncio.sleep(0.05)
            assert pool.status()[0].stderr == ["API_TOKEN=[redacted]"]
    finally:
        secrets.delete_secret(name)


def _npm_filesystem_server() -> str:
    """The published filesystem server's command; skipped locally, a failure in CI, if absent."""
    local = (Path(__file__).resolve().parents[2] / ".mcp-servers" / "node_modules" / ".bin"
             / "mcp-server-filesystem")
    found = (os.environ.get("MCP_FILESYSTEM_SERVER") or shutil.which("mcp-server-filesystem")
             or (str(local) if local.exists() else None))
    if found is None:
        part_missing("npm package @modelcontextprotocol/server-filesystem is not installed "
                     "(bash .ci/install_mcp_servers.sh)")
    return found


async def test_published_npm_filesystem_server_with_the_older_handshake(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello from fs")
    command = _npm_filesystem_server()
    config = McpServerConfig("fs", command=command, args=(str(tmp_path),), trusted=True)
    async with McpServerPool([config]) as pool:
        tools = _by_name(await pool.list_tools())
        assert tools["fs__read_text_file"].read_only is True
        assert tools["fs__write_file"].read_only is False
        text = await tools["fs__read_text_file"].execute({"path": str(tmp_path / "a.txt")})
        assert text == "hello from fs"
        with pytest.raises(McpToolError, match="outside allowed directories"):
            await tools["fs__read_text_file"].execute({"path": "/etc/hostname"})
        assert any("running on stdio" in line for line in pool.status()[0].stderr)


async def test_a_disabled_server_is_never_started(stdio_server: StdioServer) -> None:
    async with McpServerPool([stdio_server("off", enabled=False), stdio_server("on")]) as pool:
        tools = await pool.list_tools()
        assert {t.source for t in tools} == {"on"}
        assert {s.name: s.state for s in pool.status()} == {"off": "disabled", "on": "running"}
        with pytest.raises(McpServerError, match="'off' is disabled"):
            await pool.server_tools("off")
