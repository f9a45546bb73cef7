"""The MCP adapter against the protocol's reference servers, as people run them.

``@modelcontextprotocol/server-everything`` and ``server-filesystem`` come from npm
into ``.mcp-servers/`` (``.ci/install_mcp_servers.sh``); ``mcp-server-git`` and
``mcp-server-time`` from PyPI (the test extra). Facts observed against
server-everything / server-filesystem 2026.8.31, mcp-server-git / mcp-server-time
2026.10.19, with the mcp SDK 2.3:

- server-everything lists ``simulate-research-query`` with ``execution.taskSupport:
  "required"`` (every plain call answers -32601); all its other tools say "forbidden".
- ``get-tiny-image`` returns text and a real PNG; ``get-annotated-message`` with
  ``messageType: "success"`` returns text for ``audience: ["user"]`` only.
- ``get-resource-reference`` with ``resourceType: "Blob"`` embeds a ``text/plain`` blob;
  ``get-resource-links`` returns ``resource_link`` blocks to ``demo://resource/...``.
- ``trigger-long-running-operation`` sends ``notifications/progress`` (1..steps of
  steps) only when the call carries a ``progressToken``.
- Its streamable HTTP transport (``node dist/index.js streamableHttp``, ``PORT``) answers
  a request with a session id it does not know with 400 ``No valid session ID
  provided`` (the spec says 404), which the SDK reports as "Server returned an error
  response".
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tier_policy import part_missing, require_module

from desktop_agent import AgentOptions, Client
from desktop_agent.core.tooling.config import McpServerConfig
from desktop_agent.core.tooling.mcp import McpServerPool, McpToolError
from desktop_agent.core.tooling.output import IMAGES_INTRO, ToolOutput
from desktop_agent.core.types import ToolProgressBlock, ToolResultBlock
from desktop_agent.image_data import decode_data_uri
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
NPM_FOLDER = Path(os.environ.get("MCP_SERVERS_DIR") or REPO / ".mcp-servers")
INSTALL_HINT = "run `bash .ci/install_mcp_servers.sh` (npm packages into .mcp-servers/)"


def npm_bin(name: str) -> str:
    path = NPM_FOLDER / "node_modules" / ".bin" / name
    if shutil.which("node") is None:
        part_missing(f"node is not installed; {INSTALL_HINT}")
    if not path.exists():
        part_missing(f"{path} not found; {INSTALL_HINT}")
    return str(path)


def python_server(module: str) -> McpServerConfig:
    require_module(module)
    return McpServerConfig(module.removeprefix("mcp_server_"), command=sys.executable,
                           args=("-m", module))


@pytest.fixture
def everything() -> McpServerConfig:
    return McpServerConfig("ev", command=npm_bin("mcp-server-everything"))


def by_name(tools: list[Any]) -> dict[str, Any]:
    return {t.name: t for t in tools}


async def test_task_only_tools_are_not_offered_and_resources_can_be_read(
        everything: McpServerConfig) -> None:
    async with McpServerPool([everything]) as pool:
        tools = by_name(await pool.list_tools())
        assert "ev__echo" in tools
        assert "ev__simulate-research-query" not in tools  # would fail with -32601
        reader = tools["ev__read_resource"]
        assert reader.read_only is False and reader.source == "ev"  # approved like any tool
        links = await tools["ev__get-resource-links"].execute({"count": 2})
        assert "demo://resource/dynamic/text/2" in links
        text = await reader.execute({"uri": "demo://resource/dynamic/text/2"})
        assert "Resource 2" in text
        # a blob resource of type text/plain is decoded, not described
        blob = await reader.execute({"uri": "demo://resource/dynamic/blob/1"})
        assert "Resource 1" in blob and "bytes" not in blob


async def test_an_embedded_text_blob_is_decoded(everything: McpServerConfig) -> None:
    async with McpServerPool([everything]) as pool:
        tools = by_name(await pool.list_tools())
        text = await tools["ev__get-resource-reference"].execute(
            {"resourceType": "Blob", "resourceId": 2})
        assert "This is a base64 blob" in text


async def test_audience_user_content_goes_to_the_person_only(everything: McpServerConfig) -> None:
    async with McpServerPool([everything]) as pool:
        tools = by_name(await pool.list_tools())
        output = await tools["ev__get-annotated-message"].execute({"messageType": "success"})
        assert isinstance(output, ToolOutput)
        assert output.text == ""
        assert output.user_text == "Operation completed successfully"
        debug = await tools["ev__get-annotated-message"].execute({"messageType": "debug"})
        assert "Cache hit ratio" in debug  # audience ["assistant"]: for the model


def _model_server_script(server: ScriptedServer, call: str, arguments: dict[str, Any]) -> None:
    server.enqueue(script.tool_calls([(call, arguments)], ids=["call_1"]),
                   script.text("Done."))


async def _run_turn(server: ScriptedServer, pool: McpServerPool, **options: Any) -> list[Any]:
    tools = await pool.list_tools()
    agent = AgentOptions(model="m", base_url=server.base_url, tools=tools,
                         auto_execute_tools=True, max_turns=None, timeout=30, **options)
    async with Client(agent) as client:
        await client.query("go")
        return [item async for item in client.receive_messages()]


@pytest.mark.parametrize("vision", [True, False])
async def test_pictures_reach_a_model_that_can_see(everything: McpServerConfig,
                                                   vision: bool) -> None:
    with ScriptedServer() as server:
        _model_server_script(server, "ev__get-tiny-image", {})
        async with McpServerPool([everything]) as pool:
            items = await _run_turn(server, pool, vision=vision)
        [result] = [i for i in items if isinstance(i, ToolResultBlock)]
        assert len(result.images) == 1
        mime, data = decode_data_uri(result.images[0]["image_url"]["url"])
        assert mime == "image/png" and data.startswith(b"\x89PNG")
        follow_up = server.requests[1]["messages"]
        tool_message = next(m for m in follow_up if m["role"] == "tool")
        if vision:
            assert "attached in the next message" in tool_message["content"]
            pictures = follow_up[-1]
            assert pictures["role"] == "user"
            assert pictures["content"][0] == {"type": "text", "text": IMAGES_INTRO}
            assert pictures["content"][1] == result.images[0]
        else:
            assert "cannot see images" in tool_message["content"]
            assert all(m["role"] != "user" or isinstance(m["content"], str)
                       for m in follow_up)


async def test_progress_is_streamed_and_user_content_is_kept_from_the_model(
        everything: McpServerConfig) -> None:
    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([
            ("ev__trigger-long-running-operation", {"duration": 1, "steps": 3}),
            ("ev__get-annotated-message", {"messageType": "success"})], ids=["c1", "c2"]),
            script.text("Done."))
        async with McpServerPool([everything]) as pool:
            items = await _run_turn(server, pool)
    progress = [i for i in items if isinstance(i, ToolProgressBlock)]
    assert [(p.tool_use_id, p.progress, p.total) for p in progress] == [
        ("c1", 1.0, 3.0), ("c1", 2.0, 3.0), ("c1", 3.0, 3.0)]
    results = {i.tool_use_id: i for i in items if isinstance(i, ToolResultBlock)}
    assert results["c2"].user_content == "Operation completed successfully"
    sent = server.requests[1]["messages"]
    assert "Operation completed successfully" not in str(sent)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_http_everything(port: int, mode: str = "streamableHttp") -> subprocess.Popen[bytes]:
    npm_bin("mcp-server-everything")
    entry = (NPM_FOLDER / "node_modules" / "@modelcontextprotocol" / "server-everything" /
             "dist" / "index.js")
    process = subprocess.Popen(["node", str(entry), mode],
                               env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    pytest.fail("server-everything did not listen on HTTP")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@pytest.fixture
def http_everything() -> Iterator[dict[str, Any]]:
    port = _free_port()
    state = {"port": port, "process": _start_http_everything(port)}
    try:
        yield state
    finally:
        _stop(state["process"])


async def test_an_http_server_restarted_while_idle_is_reconnected(
        http_everything: dict[str, Any]) -> None:
    url = f"http://127.0.0.1:{http_everything['port']}/mcp"
    async with McpServerPool([McpServerConfig("web", url=url)]) as pool:
        tools = by_name(await pool.list_tools())
        assert await tools["web__echo"].execute({"message": "before"}) == "Echo: before"
        _stop(http_everything["process"])  # the server restarts; its sessions are gone
        http_everything["process"] = _start_http_everything(http_everything["port"])
        assert await tools["web__echo"].execute({"message": "after"}) == "Echo: after"
        [status] = pool.status()
        assert (status.state, status.error, status.restarts) == ("running", None, 0)


async def test_filesystem_server_reads_only_inside_its_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello from fs")
    config = McpServerConfig("fs", command=npm_bin("mcp-server-filesystem"),
                             args=(str(tmp_path),))
    async with McpServerPool([config]) as pool:
        tools = by_name(await pool.list_tools())
        text = await tools["fs__read_text_file"].execute({"path": str(tmp_path / "notes.txt")})
        assert text == "hello from fs"
        with pytest.raises(McpToolError, match="outside allowed directories"):
            await tools["fs__read_text_file"].execute({"path": "/etc/hostname"})


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A repository with one commit and one untracked file."""
    if shutil.which("git") is None:
        part_missing("git is not installed (apt-get install git)")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    for command in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first commit"]):
        subprocess.run(["git", *command], cwd=repo, env=env, check=True)
    (repo / "new.txt").write_text("x")
    return repo


async def test_git_server_reads_a_repository(git_repo: Path) -> None:
    repo = git_repo
    config = python_server("mcp_server_git")
    config = McpServerConfig(config.name, command=config.command,
                             args=(*config.args, "--repository", str(repo)))
    async with McpServerPool([config]) as pool:
        tools = by_name(await pool.list_tools())
        status = await tools["git__git_status"].execute({"repo_path": str(repo)})
        assert "new.txt" in status
        log = await tools["git__git_log"].execute({"repo_path": str(repo)})
        assert "first commit" in log


async def test_time_server_converts_between_zones() -> None:
    async with McpServerPool([python_server("mcp_server_time")]) as pool:
        tools = by_name(await pool.list_tools())
        answer = await tools["time__convert_time"].execute(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
        assert "21:00" in answer


@pytest.fixture
def sse_everything() -> Iterator[str]:
    """server-everything speaking only the older HTTP+SSE transport (GET /sse, POST /message)."""
    port = _free_port()
    process = _start_http_everything(port, "sse")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(process)


async def test_an_sse_server_is_reached_by_type_or_by_falling_back(sse_everything: str) -> None:
    named = McpServerConfig("old", url=f"{sse_everything}/sse", kind="sse")
    guessed = McpServerConfig("guess", url=f"{sse_everything}/sse")  # no "type": tried in turn
    async with McpServerPool([named, guessed]) as pool:
        tools = by_name(await pool.list_tools())
        assert await tools["old__echo"].execute({"message": "hi"}) == "Echo: hi"
        assert await tools["guess__echo"].execute({"message": "ho"}) == "Echo: ho"
        text = await tools["old__read_resource"].execute({"uri": "demo://resource/dynamic/text/1"})
        assert "Resource 1" in text
        assert {s.name: s.transport for s in pool.status()} == {"old": "sse", "guess": "sse"}


async def test_a_url_that_answers_neither_way_names_both_transports(sse_everything: str) -> None:
    config = McpServerConfig("nowhere", url=f"{sse_everything}/no-such-endpoint")
    async with McpServerPool([config]) as pool:
        await pool.list_tools()
        [status] = pool.status()
    assert status.state == "failed"
    assert "tried streamable HTTP (" in (status.error or "")
    assert "and HTTP+SSE (" in (status.error or "")


async def test_read_resource_is_offered_only_when_there_is_something_to_read() -> None:
    # mcp-server-time declares the resources capability but lists no resource or template.
    async with McpServerPool([python_server("mcp_server_time")]) as pool:
        names = set(by_name(await pool.list_tools()))
    assert "time__convert_time" in names and "time__read_resource" not in names
