"""Server discovery finds the real llama.cpp server and its model."""

from __future__ import annotations

import pytest
from llama_process import LlamaServer

from desktop_agent.core.servers.discovery import discover_servers, list_models, probe_server

pytestmark = pytest.mark.e2e


async def test_discovery_finds_the_server_on_its_port(llama_server: LlamaServer) -> None:
    servers = await discover_servers(timeout=2.0, extra_urls=(llama_server.base_url,))

    found = [s for s in servers if s.base_url == llama_server.base_url]
    assert len(found) == 1
    server = found[0]
    assert server.up and server.error is None
    assert [m.id for m in server.chat_models] == ["smollm2"]
    # llama.cpp's /props gives the context size the server runs with (-c 2048)
    assert server.models[0].context_length == 2048


async def test_probe_and_list_models_on_a_custom_url(llama_server: LlamaServer) -> None:
    info = await probe_server(llama_server.base_url, kind="llamacpp", timeout=2.0)
    assert info.up and info.error is None
    assert [m.id for m in info.models] == ["smollm2"]

    models = await list_models(llama_server.base_url)
    assert [(m.id, m.kind, m.context_length, m.owned_by) for m in models] == [
        ("smollm2", "chat", 2048, "llamacpp")]
