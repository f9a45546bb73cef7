"""Model-server discovery recognises the real `desktop-agent serve` and leaves it out."""

from __future__ import annotations

from server_harness import RunningApi

from desktop_agent.core.servers.discovery import discover_servers, probe_server


async def test_discovery_leaves_our_own_rest_server_out(api: RunningApi):
    url = f"{api.base_url}/v1"
    info = await probe_server(url, kind="vllm", name="vLLM", timeout=2.0)
    assert info.own and not info.up
    assert "desktop-agent serve" in (info.error or "")
    assert await discover_servers(timeout=2.0, known=[("vllm", "vLLM", url)]) == []
