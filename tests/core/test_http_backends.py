"""The SDK alone runs on openai's httpx2 backend, the app on aiohttp: both must behave alike.

``pip install desktop-agent`` leaves aiohttp out, so a script's requests go
through the SDK's httpx2 backend; the app's go through aiohttp. Each test here
runs on both: a streamed reply, the resend after a server hangs up without
answering, a server that always hangs up, a refused connection named in words,
a retried 5xx, discovery's model list, and how the core reads a reply's body
(straight from aiohttp on that backend, through the SDK's ``aiter_raw`` on httpx2).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from desktop_agent.core import Client, RetryPolicy, ServerConnectionError, TextBlock
from desktop_agent.core.servers.discovery import list_models
from desktop_agent.core.wire import http_backend
from desktop_agent.core.wire.connection_pool import ConnectionPool
from desktop_agent.core.wire.model_client import new_openai_client
from desktop_agent.core.wire.split_transport import split_transport_class
from desktop_agent.core.wire.transport import ModelHttp, open_stream
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import Hangup, Script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=["aiohttp", "httpx2"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(http_backend, "prefer_aiohttp", request.param == "aiohttp")
    yield request.param


async def _reply(client: Client, prompt: str) -> str:
    await client.query(prompt)
    items = [i async for i in client.receive_messages()]
    return "".join(i.text for i in items if isinstance(i, TextBlock))


async def test_new_clients_use_the_chosen_library(backend: str) -> None:
    client = new_openai_client("http://127.0.0.1:9/v1")
    try:
        transport = client._client._transport  # the SDK's http client's
        if backend == "aiohttp":  # streamed replies on aiohttp, made for the first one
            assert isinstance(transport, split_transport_class())
            assert transport.streamed is None
        else:
            assert "aiohttp" not in type(transport).__module__
    finally:
        await client.close()


async def test_on_aiohttp_only_streamed_replies_go_through_it(
        server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # A model list is read whole: httpx2 carries it, as cheaply as aiohttp would.
    # aiohttp (~10 MB resident) is made for the first streamed reply, under the same
    # AsyncOpenAI, and the reply is still read straight from aiohttp's response.
    monkeypatch.setattr(http_backend, "prefer_aiohttp", True)
    server.enqueue(script.text("A streamed reply."))
    pool = ConnectionPool()
    try:
        client = pool.client(server.base_url)
        transport = client._client._transport
        assert [m.id for m in await list_models(server.base_url, pool=pool)] == server.models
        assert transport.streamed is None
        http = ModelHttp(server.base_url, "", 10, client=client)
        assert await _stream_text(http, server.base_url) == ("A streamed reply.", True)
        assert type(transport.streamed).__name__ == "AiohttpTransport"
        assert pool.client(server.base_url) is client
    finally:
        await pool.aclose()
    assert server.connections_opened == 2  # one per library


def test_a_server_search_that_finds_a_server_leaves_aiohttp_unimported(
        server: ScriptedServer) -> None:
    # In a new interpreter, as the window runs it: the search lists the server's
    # models without importing aiohttp; the first chat imports it.
    server.enqueue(script.text("Hello."))
    code = textwrap.dedent(f"""
        import asyncio, sys
        from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
        defer_type_package_inits()
        from desktop_agent.core import AgentOptions, Client
        from desktop_agent.core.servers.discovery import discover_servers
        from desktop_agent.core.wire.connection_pool import ConnectionPool

        async def main():
            pool = ConnectionPool()
            found = await discover_servers(extra_urls=({server.base_url!r},), known=(),
                                           pool=pool)
            print([m.id for s in found for m in s.models], "aiohttp" in sys.modules)
            options = AgentOptions(base_url={server.base_url!r}, model="test-model",
                                   connection_pool=pool)
            async with Client(options) as client:
                await client.query("hi")
                text = "".join([getattr(i, "text", "") async for i in client.receive_messages()])
            print(text, "aiohttp" in sys.modules)
            await pool.aclose()

        asyncio.run(main())
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{server.models!r} False", "Hello. True"]


async def test_a_streamed_reply_arrives_whole(backend: str, server: ScriptedServer,
                                              make_options) -> None:
    server.enqueue(script.text("Hello from the server, in pieces."))
    async with Client(make_options()) as client:
        assert await _reply(client, "hi") == "Hello from the server, in pieces."


async def test_a_request_the_server_hung_up_on_is_sent_again_once(
        backend: str, server: ScriptedServer, make_options) -> None:
    server.enqueue(script.text("First."), Script([Hangup()]), script.text("Second."))
    async with Client(make_options(retry=RetryPolicy(max_retries=0))) as client:
        assert await _reply(client, "one") == "First."
        assert await _reply(client, "two") == "Second."
    assert len(server.requests) == 3


async def test_a_server_that_always_hangs_up_is_reported_in_words(
        backend: str, server: ScriptedServer, make_options) -> None:
    server.enqueue(Script([Hangup()]), Script([Hangup()]), script.text("never"))
    async with Client(make_options(retry=RetryPolicy(max_retries=0))) as client:
        with pytest.raises(ServerConnectionError, match=server.base_url):
            await _reply(client, "hi")
    assert len(server.requests) == 2


async def test_a_refused_connection_asks_whether_the_server_is_running(
        backend: str, make_options) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    async with Client(make_options(base_url=url, retry=RetryPolicy(max_retries=0))) as client:
        with pytest.raises(ServerConnectionError, match="is the server running"):
            await _reply(client, "hi")


async def test_a_5xx_before_any_content_is_retried(backend: str, server: ScriptedServer,
                                                   make_options) -> None:
    server.enqueue(script.error(503, "loading model"), script.text("Ready now."))
    retry = RetryPolicy(max_retries=2, initial_delay=0.01, jitter=False)
    async with Client(make_options(retry=retry)) as client:
        assert await _reply(client, "hi") == "Ready now."


async def test_discovery_lists_the_servers_models(backend: str, server: ScriptedServer) -> None:
    names = [m.id for m in await list_models(server.base_url)]
    assert names, "the scripted server lists at least one model"


async def _stream_text(http: ModelHttp, base_url: str) -> tuple[str, bool]:
    """One reply through the core's transport: its text and whether it was read directly."""
    request = {"model": "test-model", "stream": True,
               "messages": [{"role": "user", "content": "hi"}]}
    stream = await open_stream(http, request, base_url=base_url, api_key="",
                               retry=RetryPolicy(max_retries=0))
    try:
        pieces = [choice["delta"].get("content") or ""
                  async for chunk in stream.chunks() for choice in chunk.get("choices", ())]
    finally:
        await stream.close()
    return "".join(pieces), stream.direct


async def test_on_aiohttp_replies_are_read_straight_from_its_response(
        backend: str, server: ScriptedServer) -> None:
    # On aiohttp the body is read from the aiohttp response the SDK holds, not
    # through three wrapping generators (~3-4 µs less CPU per chunk at 50
    # streams, bench/http_chunk_cost.py). An SDK upgrade that wraps responses
    # differently must fail here rather than silently slow every stream.
    server.enqueue(script.text("First reply, in pieces."), script.text("Second reply."))
    http = ModelHttp(server.base_url, "", 10)
    try:
        first = await _stream_text(http, server.base_url)
        second = await _stream_text(http, server.base_url)
    finally:
        await http.close()
    direct = backend == "aiohttp"
    assert first == ("First reply, in pieces.", direct)
    assert second == ("Second reply.", direct)
    assert server.connections_opened == 1  # a reply read to its end frees the connection
    # the body is read raw, so a compressing proxy must not be invited to gzip it
    assert [h.get("accept-encoding") for h in server.request_headers] == ["identity"] * 2


async def test_a_reply_cut_off_mid_stream_is_reported_on_either_path(
        backend: str, server: ScriptedServer) -> None:
    server.enqueue(script.dropped("Half a reply and then"))
    http = ModelHttp(server.base_url, "", 10)
    try:
        with pytest.raises(ServerConnectionError, match="dropped mid-reply") as caught:
            await _stream_text(http, server.base_url)
    finally:
        await http.close()
    assert caught.value.mid_stream


async def test_a_reply_left_halfway_does_not_spill_into_the_next(
        backend: str, server: ScriptedServer) -> None:
    # Stop mid-reply: the response is closed with most of its body unread (on
    # aiohttp, the response the core read directly); the next request must get
    # its own reply whole, not the rest of the old one.
    server.enqueue(script.text("one two three four five six seven eight", delay=0.05),
                   script.text("The next reply."))
    http = ModelHttp(server.base_url, "", 10)
    request = {"model": "test-model", "stream": True, "messages": []}
    try:
        stream = await open_stream(http, request, base_url=server.base_url, api_key="",
                                   retry=RetryPolicy(max_retries=0))
        async for _ in stream.chunks():
            break  # the first chunk only
        await stream.close()
        assert await _stream_text(http, server.base_url) == ("The next reply.",
                                                             backend == "aiohttp")
    finally:
        await http.close()
    assert server.connections_opened == 2  # the cut-off connection was not reused
