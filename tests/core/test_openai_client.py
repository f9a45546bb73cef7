"""Every request to a model server goes through that server's one ``AsyncOpenAI``.

Discovery (of a server it does not reach directly on this machine, see
``core/servers/local_json.py``), the server's detail endpoints and the chats all
use the client a ``ConnectionPool`` holds for the server; the SDK's retry rules
(``x-should-retry``, ``retry-after-ms``), request ids and Azure's auth reach
the person as the core's typed errors and working chats.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from typing import Any

import openai
import pytest

from desktop_agent.core import Client, ConnectionPool, RetryPolicy, ServerError, TextBlock
from desktop_agent.core.servers.discovery import discover_servers, list_models, probe_server
from desktop_agent.core.wire.model_client import new_openai_client
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(60)


async def _reply(client: Client, prompt: str) -> str:
    await client.query(prompt)
    items = [i async for i in client.receive_messages()]
    return "".join(i.text for i in items if isinstance(i, TextBlock))


def _record_requests(client: openai.AsyncOpenAI, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs of the requests sent through this very client object, in order."""
    sent: list[str] = []
    original = client.request

    async def request(cast_to: Any, options: Any, **kwargs: Any) -> Any:
        sent.append(str(options.url))
        return await original(cast_to, options, **kwargs)

    monkeypatch.setattr(client, "request", request)
    return sent


async def test_discovery_details_and_chat_share_the_servers_one_client(
        server: ScriptedServer, make_options, monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy named in the environment (bypassed for this address) leaves discovery to
    # the SDK: a local server reached directly is listed without it (test_local_json.py).
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server.models = ["gemma-3-4b"]
    server.routes[("GET", "/props")] = (200, {
        "default_generation_settings": {"n_ctx": 8192}, "modalities": {"vision": True}})
    pool = ConnectionPool()
    try:
        shared = pool.client(server.base_url)
        sent = _record_requests(shared, monkeypatch)

        [found] = await discover_servers(timeout=2.0, pool=pool,
                                         known=[("llamacpp", "llama.cpp", server.base_url)])
        assert found.up and [(m.id, m.context_length, m.vision) for m in found.models] == [
            ("gemma-3-4b", 8192, True)]
        models = await list_models(server.base_url, kind="llamacpp", pool=pool)
        assert [m.id for m in models] == ["gemma-3-4b"]

        server.enqueue(script.text("hello from the shared client"))
        client = Client(make_options(connection_pool=pool))
        assert await _reply(client, "hi") == "hello from the shared client"
        await client.close()

        assert len(pool) == 1 and pool.client(server.base_url) is shared
        assert not shared.is_closed()  # the Client's close leaves the server's client open
    finally:
        await pool.aclose()
    root = server.base_url.removesuffix("/v1")
    assert sent == [f"{server.base_url}/models", f"{root}/props"] * 2 + ["/chat/completions"]
    assert shared.is_closed()
    # the SDK sent them all (its own headers are on the chat request)
    assert server.request_headers[0]["x-stainless-retry-count"] == "0"


async def test_a_probe_without_a_pool_closes_the_client_it_made(
        server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_agent.core.wire import model_client

    made: list[openai.AsyncOpenAI] = []
    original = model_client.new_openai_client

    def spy(*args: Any, **kwargs: Any) -> openai.AsyncOpenAI:
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr("desktop_agent.core.servers.discovery.new_openai_client", spy)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # the SDK asks (bypassed below)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server.models = ["m"]
    info = await probe_server(server.base_url, timeout=2.0)
    assert info.up and [m.id for m in info.models] == ["m"]
    assert len(made) == 1 and made[0].is_closed()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_search_where_nothing_listens_does_not_load_the_sdk() -> None:
    # A window opened with no model server running searches six local ports; a
    # refused connection says "not running" without the SDK stack (~25 MB of an
    # idle window). A local port that answers is listed without it too
    # (core/servers/local_json.py): the first turn loads it.
    code = textwrap.dedent(f"""
        import asyncio, sys
        from desktop_agent.core.servers.discovery import discover_servers
        from desktop_agent.testing import ScriptedServer

        closed = [("llamacpp", "llama.cpp", "http://127.0.0.1:{_closed_port()}/v1"),
                  ("vllm", "vLLM", "http://localhost:{_closed_port()}/v1")]
        found = asyncio.run(discover_servers(timeout=2.0, known=closed))
        print([(s.name, s.up, s.error) for s in found])
        print("openai loaded:", "openai" in sys.modules, "aiohttp" in sys.modules)
        with ScriptedServer() as server:
            server.models = ["qwen3-4b"]
            [up] = asyncio.run(discover_servers(
                timeout=2.0, known=[("llamacpp", "llama.cpp", server.base_url)]))
        print(up.up, [m.id for m in up.models], "openai loaded:", "openai" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[('llama.cpp', False, 'not running'), ('vLLM', False, 'not running')]",
        "openai loaded: False False",
        "True ['qwen3-4b'] openai loaded: False",
    ]


async def test_with_a_proxy_named_a_local_port_is_still_asked_through_the_sdk(
        server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK's client sends through the environment's proxy, which may answer
    # for an address this process cannot reach: no shortcut then.
    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY",
                 "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.base_url.removesuffix("/v1"))
    server.models = ["behind-the-proxy"]
    closed = f"http://127.0.0.1:{_closed_port()}/v1"
    info = await probe_server(closed, timeout=2.0)
    assert info.up and [m.id for m in info.models] == ["behind-the-proxy"]
    assert f"{closed}/models" in server.request_targets  # sent to the proxy, for that port


async def test_a_server_that_says_do_not_retry_is_not_asked_again(
        server: ScriptedServer, make_options) -> None:
    server.enqueue(script.error(503, "draining", headers={"x-should-retry": "false"}),
                   script.text("never sent"))
    async with Client(make_options()) as client:
        with pytest.raises(ServerError) as info:
            await _reply(client, "hi")
    assert info.value.status == 503 and "draining" in str(info.value)
    assert len(server.requests) == 1


async def test_a_server_that_says_retry_is_asked_again_even_on_a_4xx(
        server: ScriptedServer, make_options) -> None:
    server.enqueue(script.error(400, "try later", headers={"x-should-retry": "true"}),
                   script.text("second time lucky"))
    async with Client(make_options()) as client:
        assert await _reply(client, "hi") == "second time lucky"
    assert len(server.requests) == 2


async def test_retry_after_ms_sets_the_wait(server: ScriptedServer, make_options) -> None:
    server.enqueue(script.error(429, "busy", headers={"retry-after-ms": "400"}),
                   script.text("after the wait"))
    policy = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=5.0, jitter=False)
    async with Client(make_options(retry=policy)) as client:
        started = time.monotonic()
        assert await _reply(client, "hi") == "after the wait"
        waited = time.monotonic() - started
    assert waited >= 0.4  # the server's 400 ms, not the policy's 10 ms
    assert len(server.requests) == 2


async def test_the_servers_request_id_travels_with_the_error(
        server: ScriptedServer, make_options) -> None:
    server.enqueue(script.error(400, "bad field", headers={"x-request-id": "req_42"}))
    async with Client(make_options()) as client:
        with pytest.raises(ServerError) as info:
            await _reply(client, "hi")
    assert info.value.request_id == "req_42"


async def test_an_azure_deployment_gets_its_api_key_header_and_version(
        server: ScriptedServer, make_options, monkeypatch: pytest.MonkeyPatch) -> None:
    """Azure OpenAI authenticates with ``api-key`` and needs ``api-version`` on every request."""
    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY",
                 "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    # the scripted server plays the proxy; the Azure name resolves nowhere else
    monkeypatch.setenv("HTTP_PROXY", server.base_url.removesuffix("/v1"))
    azure = "http://my-resource.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-06-01"
    server.enqueue(script.text("hello from Azure"))
    async with Client(make_options(base_url=azure, api_key="azure-secret-key")) as client:
        assert await _reply(client, "hi") == "hello from Azure"
    [target] = server.request_targets
    assert target == ("http://my-resource.openai.azure.com/openai/deployments/gpt-4o/"
                      "chat/completions?api-version=2024-06-01")
    [headers] = server.request_headers
    assert headers["api-key"] == "azure-secret-key"
    assert "authorization" not in headers


async def test_a_client_moved_to_another_base_url_sends_there() -> None:
    # each request path is merged with the base URL once and kept; a client
    # whose base URL is changed must not keep sending to the old one
    client = new_openai_client("http://127.0.0.1:9/v1")
    try:
        assert str(client._prepare_url("/chat/completions")) == \
            "http://127.0.0.1:9/v1/chat/completions"
        client.base_url = "http://127.0.0.1:10/v2"
        assert str(client._prepare_url("/chat/completions")) == \
            "http://127.0.0.1:10/v2/chat/completions"
    finally:
        await client.close()
