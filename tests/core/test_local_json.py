"""A model server on this machine is listed without the openai SDK; any other through it.

The window's server search asks a local server for its models with the light
client (``core/servers/local_json.py``), so an idle window never loads the SDK
stack (tests/gui/test_idle_imports.py pins that); these pin that what the person
sees of a server is the same either way.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from desktop_agent.core.servers.discovery import probe_client, probe_server
from desktop_agent.core.servers.local_json import LocalJsonClient
from desktop_agent.testing import ScriptedServer

REPO = Path(__file__).resolve().parents[2]


async def test_a_local_server_is_listed_with_the_light_client() -> None:
    with ScriptedServer() as server:
        server.models = ["qwen2.5-7b", "text-embedding-nomic"]
        async with probe_client(server.base_url, None, None) as http:
            assert isinstance(http, LocalJsonClient)
        info = await probe_server(server.base_url, name="Local")
    assert info.up and info.error is None
    assert [m.id for m in info.chat_models] == ["qwen2.5-7b"]


async def test_a_key_is_sent_and_a_missing_one_is_named() -> None:
    with ScriptedServer() as server:
        server.api_key = "sk-local"
        refused = await probe_server(server.base_url)
        listed = await probe_server(server.base_url, api_key="sk-local")
    assert refused.up and refused.error == "needs an API key"
    assert listed.up and [m.id for m in listed.models] == ["test-model"]


async def test_an_error_status_is_said_with_its_number() -> None:
    with ScriptedServer() as server:
        server.routes[("GET", "/v1/models")] = (500, {"error": {"message": "down"}})
        info = await probe_server(server.base_url)
    assert info.up and info.error == "answered 500 to /v1/models"


@pytest.fixture
async def not_http() -> AsyncIterator[str]:
    """A local port that answers a request with something that is not HTTP."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.write(b"220 mail.example ESMTP ready\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/v1"


async def test_a_port_that_does_not_speak_http_is_no_answer(not_http: str) -> None:
    info = await probe_server(not_http, timeout=5)
    assert not info.up
    assert info.error == "no answer (RemoteProtocolError)"


async def test_behind_a_proxy_the_sdk_lists_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy named in the environment may stand in front of any address: the SDK asks."""
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # never used: NO_PROXY below
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with ScriptedServer() as server:
        server.models = ["proxied-model"]
        async with probe_client(server.base_url, None, None) as http:
            assert not isinstance(http, LocalJsonClient)
        info = await probe_server(server.base_url)
    assert info.up and [m.id for m in info.models] == ["proxied-model"]


def test_listing_a_local_server_loads_no_sdk() -> None:
    code = textwrap.dedent("""
        import asyncio, os, sys
        from desktop_agent.core.servers.discovery import probe_server
        info = asyncio.run(probe_server(os.environ["URL"]))
        print([m.id for m in info.models],
              sorted(m for m in ("openai", "httpx2", "pydantic") if m in sys.modules))
    """)
    with ScriptedServer() as server:
        server.models = ["fresh-model"]
        result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                                text=True, timeout=120, check=True,
                                env={**os.environ, "URL": server.base_url,
                                     "PYTHONPATH": str(REPO)})
    assert result.stdout.strip() == "['fresh-model'] []"


async def test_an_error_names_the_address_without_its_query_or_user() -> None:
    from desktop_agent.core.servers.local_json import LocalStatusError

    with ScriptedServer() as server:
        server.api_key = "sk-right"
        url = server.base_url.replace("http://", "http://me:sk-pass@") + "/models?key=sk-query"
        with pytest.raises(LocalStatusError) as refused:
            await LocalJsonClient("sk-wrong").get_json(url, timeout=5)
    assert refused.value.status_code == 401
    assert "sk-" not in str(refused.value) and "me:" not in str(refused.value)
    assert f"{server.base_url}/models" in str(refused.value)
