"""The MCP client side beyond tools, against the real server-everything and our own test server.

What server-everything 2026.8.31 does (observed with the mcp SDK 2.3): it offers
``get-roots-list``, ``trigger-elicitation-request``, ``trigger-url-elicitation`` and
``trigger-sampling-request`` only to a client that declares roots, elicitation and
sampling, registering them after ``initialize`` (five ``tools/list_changed`` follow
the handshake); it asks ``roots/list`` 350 ms after start and again on
``roots/list_changed``; its prompts are ``simple-prompt``, ``args-prompt`` (city
required), ``completable-prompt`` (department completes to names) and
``resource-prompt``; it lists seven static documents and two templates
(``demo://resource/dynamic/{text,blob}/{resourceId}``); ``toggle-subscriber-updates``
sends ``notifications/resources/updated`` every 5 s for subscribed URIs and
``toggle-simulated-logging`` a random-level log message every 5 s. It has no tool that
adds a tool, so list changes mid-session are tested with our own server's ``add_tool``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from test_mcp_reference_servers import (
    NPM_FOLDER,
    _free_port,
    _start_http_everything,
    _stop,
    npm_bin,
)

from desktop_agent import AgentOptions, Client
from desktop_agent.core.tooling.config import McpServerConfig
from desktop_agent.core.tooling.mcp import (
    ElicitationAnswer,
    ElicitationRequest,
    McpServerPool,
    SamplingReply,
    SamplingRequest,
    ServerRequestRefused,
    check_answer,
)
from desktop_agent.core.types import ToolResultBlock
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(120)

TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")
NODE_SERVER = Path(__file__).with_name("mcp_node_server.mjs")


@pytest.fixture
def everything() -> McpServerConfig:
    return McpServerConfig("ev", command=npm_bin("mcp-server-everything"))


@pytest.fixture
def ours() -> McpServerConfig:
    return McpServerConfig("t", command=sys.executable, args=(str(TEST_SERVER),))


@pytest.fixture
def node_server() -> McpServerConfig:
    """Our misbehaving server of the handshake era (TypeScript SDK, as server-everything)."""
    npm_bin("mcp-server-everything")
    sdk = NPM_FOLDER / "node_modules" / "@modelcontextprotocol" / "sdk"
    return McpServerConfig("t", command="node", args=(str(NODE_SERVER),),
                           env={"MCP_SDK_DIR": str(sdk)})


async def until(check: Callable[[], Awaitable[bool] | bool], what: str,
                deadline: float = 60.0) -> None:
    """Wait for something the server does on its own clock (generous: a busy machine)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while loop.time() < end:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        await asyncio.sleep(0.2)
    pytest.fail(f"never happened: {what}")


async def turn(server: ScriptedServer, tools: list[Any], **options: Any) -> list[Any]:
    agent = AgentOptions(model="m", base_url=server.base_url, tools=tools,
                         auto_execute_tools=True, timeout=30, **options)
    async with Client(agent) as client:
        await client.query("go")
        return [item async for item in client.receive_messages()]


def result_of(items: list[Any], call_id: str = "c1") -> ToolResultBlock:
    return next(i for i in items if isinstance(i, ToolResultBlock) and i.tool_use_id == call_id)


async def test_prompts_list_get_and_complete(everything: McpServerConfig) -> None:
    async with McpServerPool([everything]) as pool:
        prompts = {p.name: p for p in await pool.list_prompts()}
        assert {"simple-prompt", "args-prompt", "completable-prompt",
                "resource-prompt"} <= set(prompts)
        args = prompts["args-prompt"]
        assert args.command == "ev:args-prompt"
        assert [(a.name, a.required) for a in args.arguments] == [("city", True),
                                                                   ("state", False)]
        got = await pool.get_prompt("ev", "args-prompt", {"city": "Paris"})
        assert got.text == "What's weather in Paris?" and not got.cut
        embedded = await pool.get_prompt("ev", "resource-prompt",
                                         {"resourceType": "Text", "resourceId": "3"})
        assert "Resource 3" in embedded.text  # the embedded resource is part of the text
        assert await pool.complete("ev", ("prompt", "completable-prompt"), "department",
                                   "E") == ["Engineering"]
        names = await pool.complete("ev", ("prompt", "completable-prompt"), "name", "",
                                    {"department": "Engineering"})
        assert names == ["Alice", "Bob", "Charlie"]


async def test_resources_and_templates_are_listed_and_read(everything: McpServerConfig) -> None:
    async with McpServerPool([everything]) as pool:
        resources = {r.name: r for r in await pool.list_resources()}
        assert "features.md" in resources
        assert resources["features.md"].mime_type == "text/markdown"
        [doc] = await pool.read_content("ev", resources["features.md"].uri)
        assert "Everything Server" in (doc.text or "")
        templates = {t.name: t for t in await pool.list_resource_templates()}
        text = templates["Dynamic Text Resource"]
        assert text.parameters == ("resourceId",)
        [item] = await pool.read_content("ev", text.expand({"resourceId": "4"}))
        assert item.uri == "demo://resource/dynamic/text/4" and "Resource 4" in (item.text or "")
        blob = templates["Dynamic Blob Resource"]
        [data] = await pool.read_content("ev", blob.expand({"resourceId": "2"}))
        assert data.size > 0  # text/plain blob: decoded, or named with its size


async def test_a_subscribed_resource_that_changes_is_reported(
        everything: McpServerConfig) -> None:
    uri = "demo://resource/dynamic/text/1"
    async with McpServerPool([everything]) as pool:
        assert await pool.subscribe("ev", uri)
        tools = {t.name: t for t in await pool.list_tools()}
        await tools["ev__toggle-subscriber-updates"].execute({})
        updated: list[tuple[str, str]] = []

        def arrived() -> bool:
            updated.extend(pool.take_updated())
            return bool(updated)

        await until(arrived, "a resources/updated notification")
        assert ("ev", uri) in updated
        assert await pool.unsubscribe("ev", uri)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_sampling_runs_on_the_agents_model_after_the_callback_allows(
        everything: McpServerConfig, transport: str) -> None:
    process = None
    config = everything
    if transport == "http":
        port = _free_port()
        process = _start_http_everything(port)
        config = McpServerConfig("ev", url=f"http://127.0.0.1:{port}/mcp")
    asked: list[SamplingRequest] = []
    try:
        with ScriptedServer() as server:
            server.enqueue(script.tool_calls(
                [("ev__trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 40})],
                ids=["c1"]), script.text("Hello from the model"), script.text("Done."))
            async with McpServerPool([config]) as pool:
                tools = await pool.list_tools()
                holder: dict[str, Client] = {}

                async def sampling(request: SamplingRequest) -> SamplingReply:
                    asked.append(request)
                    return await holder["client"].sample(request)

                agent = AgentOptions(model="m", base_url=server.base_url, tools=tools,
                                     auto_execute_tools=True, timeout=30,
                                     sampling_callback=sampling)
                async with Client(agent) as client:
                    holder["client"] = client
                    await client.query("go")
                    items = [item async for item in client.receive_messages()]
            sampled = server.requests[1]
    finally:
        if process is not None:
            _stop(process)
    [request] = asked
    assert request.server == "ev" and request.max_tokens == 40
    assert request.system_prompt == "You are a helpful test server."
    assert "Say hi" in request.messages[0].text
    assert sampled["max_tokens"] == 40 and "tools" not in sampled
    assert sampled["messages"][0] == {"role": "system",
                                      "content": "You are a helpful test server."}
    assert "Hello from the model" in result_of(items).content


async def test_a_denied_sampling_request_tells_the_server_why(
        everything: McpServerConfig) -> None:
    async def deny(_request: SamplingRequest) -> SamplingReply:
        raise ServerRequestRefused("The person denied it.")

    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("ev__trigger-sampling-request",
                                           {"prompt": "x"})], ids=["c1"]),
                       script.text("Done."))
        async with McpServerPool([everything]) as pool:
            items = await turn(server, await pool.list_tools(), sampling_callback=deny)
    assert "The person denied it." in result_of(items).content
    assert len(server.requests) == 2  # the model was never asked to sample


async def test_a_thousand_sampling_requests_are_held_to_the_limit(
        node_server: McpServerConfig) -> None:
    answered: list[str] = []

    async def sampling(request: SamplingRequest) -> SamplingReply:
        answered.append(request.messages[0].text)
        return SamplingReply("ok", "m")

    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("t__flood_sampling", {"count": 1000})], ids=["c1"]),
                       script.text("Done."))
        async with McpServerPool([node_server]) as pool:
            items = await turn(server, await pool.list_tools(), sampling_callback=sampling,
                               sampling_limit=3)
    assert len(answered) == 3
    assert "answered 3, refused 997" in result_of(items).content
    assert "Sampling limit reached" in result_of(items).content


async def test_elicitation_form_accept_decline_and_url(everything: McpServerConfig) -> None:
    seen: list[ElicitationRequest] = []

    async def fill(request: ElicitationRequest) -> ElicitationAnswer:
        seen.append(request)
        if request.mode == "url":
            return ElicitationAnswer("decline")
        return ElicitationAnswer("accept", check_answer(request.fields, {
            "name": "Ada", "check": True, "integer": 7, "untitledSingleSelectEnum": "Joey",
            "untitledMultipleSelectEnum": ["Piano", "Drums"]}))

    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("ev__trigger-elicitation-request", {})], ids=["c1"]),
                       script.tool_calls([("ev__trigger-url-elicitation",
                                           {"url": "https://example.org/login",
                                            "elicitationId": "e1"})], ids=["c2"]),
                       script.text("Done."))
        async with McpServerPool([everything]) as pool:
            items = await turn(server, await pool.list_tools(), elicitation_callback=fill)
    form, link = seen
    fields = {f.name: f for f in form.fields}
    assert fields["name"].required and fields["integer"].minimum == 1
    assert fields["integer"].maximum == 100 and fields["integer"].default == 42
    assert fields["titledSingleSelectEnum"].options[0] == ("hero-1", "Superman")
    assert fields["legacyTitledEnum"].options[1] == ("pet-2", "Dogs")
    assert fields["untitledMultipleSelectEnum"].max_items == 3
    assert fields["email"].format == "email"
    accepted = result_of(items).content
    assert '"name": "Ada"' in accepted and "Joey" in accepted
    assert link.mode == "url" and link.url == "https://example.org/login"
    assert "decline" in result_of(items, "c2").content.lower()


def test_answers_are_checked_against_the_forms_limits() -> None:
    from desktop_agent.core.tooling.mcp import form_fields

    fields = form_fields({"type": "object", "required": ["n"], "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 10},
        "mail": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 1}}})
    assert check_answer(fields, {"n": 3}) == {"n": 3}
    for bad, words in (({}, "required"), ({"n": 11}, "at most 10"), ({"n": 2.5}, "whole"),
                       ({"n": 1, "mail": "nope"}, "valid email"),
                       ({"n": 1, "tags": ["a", "b"]}, "at most 1"),
                       ({"n": 1, "other": 1}, "no field")):
        with pytest.raises(ValueError, match=words):
            check_answer(fields, bad)


async def test_an_unsupported_form_is_declined_with_the_reason(
        node_server: McpServerConfig) -> None:
    asked: list[ElicitationRequest] = []

    async def fill(request: ElicitationRequest) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer("cancel")

    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("t__odd_form", {})], ids=["c1"]),
                       script.text("Done."))
        async with McpServerPool([node_server]) as pool:
            items = await turn(server, await pool.list_tools(), elicitation_callback=fill)
            log = pool.server_log("t")
    assert asked == []
    text = result_of(items).content
    assert "refused" in text and "'address'" in text and "object" in text
    assert any("elicitation refused" in e.text for e in log)


async def test_roots_are_the_callers_folders_and_a_change_is_announced(
        everything: McpServerConfig, tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    async with McpServerPool([everything]) as pool:
        for folder, call in ((first, "c1"), (second, "c2")):
            async def shows(folder: Path = folder, call: str = call) -> bool:
                with ScriptedServer() as server:
                    server.enqueue(script.tool_calls([("ev__get-roots-list", {})], ids=[call]),
                                   script.text("Done."))
                    items = await turn(server, await pool.list_tools(), mcp_roots=[folder])
                return folder.as_uri() in result_of(items, call).content

            await until(shows, f"the server to know {folder} as its root")
        entries = pool.server_log("ev")
    assert any("Roots updated" in e.text for e in entries)


async def test_log_messages_are_kept_at_the_chosen_level_and_never_sent(
        everything: McpServerConfig) -> None:
    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("ev__toggle-simulated-logging", {})], ids=["c1"]),
                       script.text("Done."))
        async with McpServerPool([everything]) as pool:
            await pool.list_tools()
            assert await pool.set_log_level("ev", "error")
            await turn(server, await pool.list_tools())
            await until(lambda: any(e.text.endswith("message") or "level" in e.text
                                    for e in pool.server_log("ev", "error")),
                        "a simulated log message at error or above")
            kept = pool.server_log("ev")
            [status] = pool.status()
    simulated = [e for e in kept if "-level message" in e.text or "level-message" in e.text]
    assert simulated and all(e.level in ("error", "critical", "alert", "emergency")
                             for e in simulated)
    assert status.log_level == "error" and status.log_lines == len(kept)
    assert "level message" not in str(server.requests)


async def test_a_tool_added_mid_turn_is_offered_from_the_next_request(
        node_server: McpServerConfig) -> None:
    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("t__add_tool", {"name": "greet"})], ids=["c1"]),
                       script.tool_calls([("t__greet", {})], ids=["c2"]),
                       script.text("Done."))
        async with McpServerPool([node_server]) as pool:
            tools = await pool.list_tools()
            items = await turn(server, tools, refresh_tools=pool.tool_refresher())
            [status] = pool.status()
    first = {t["function"]["name"] for t in server.requests[0]["tools"]}
    second = {t["function"]["name"] for t in server.requests[1]["tools"]}
    assert "t__greet" not in first and "t__greet" in second
    assert result_of(items, "c2").content == "new tool greet"
    assert status.tool_list is not None and "added t__greet" in status.tool_list


async def test_a_huge_prompt_is_cut_and_says_so(ours: McpServerConfig) -> None:
    async with McpServerPool([ours]) as pool:
        [prompt] = [p for p in await pool.list_prompts() if p.name == "huge"]
        got = await pool.get_prompt("t", prompt.name, {"megabytes": "10"})
    assert got.cut and got.size == 10 * 1024 * 1024
    assert len(got.text) < 101_000
    assert "cut at 100,000 characters; it had 10,485,760" in got.text


async def test_a_template_parameter_cannot_walk_out_of_the_uri(ours: McpServerConfig) -> None:
    from desktop_agent.core.tooling.mcp import McpServerError

    async with McpServerPool([ours]) as pool:
        [template] = await pool.list_resource_templates()
        uri = template.expand({"path": "../../etc/passwd"})
        assert uri == "file:///..%2F..%2Fetc%2Fpasswd"  # one segment, slashes encoded
        with pytest.raises(McpServerError, match="Unknown resource") as refused:
            await pool.read_content("t", uri)
        assert "root:" not in str(refused.value)
        # a file:// URI is the server's to answer: nothing here opened the local file
        [answer] = await pool.read_content("t", template.expand({"path": "hostname"}))
    assert answer.text == "you asked for 'hostname'"
