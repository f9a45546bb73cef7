"""Model requests honour the environment's proxy settings (HTTP_PROXY, NO_PROXY)."""

from __future__ import annotations

import pytest

from desktop_agent.core import Client, TextBlock
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no proxy in the environment (a client reads it when made)."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY",
                 "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


async def _reply(client: Client, prompt: str) -> str:
    await client.query(prompt)
    items = [i async for i in client.receive_messages()]
    return "".join(i.text for i in items if isinstance(i, TextBlock))


async def test_a_model_server_behind_the_proxy_is_reached_through_it(
        server: ScriptedServer, make_options, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone whose network only lets a proxy out still reaches a remote model server."""
    proxy = server.base_url.removesuffix("/v1")  # the scripted server plays the proxy
    monkeypatch.setenv("HTTP_PROXY", proxy)
    server.enqueue(script.text("through the proxy"), script.text("again"))
    remote = "http://model-server.invalid:8000/v1"  # resolves nowhere: only the proxy knows it
    client = Client(make_options(base_url=remote))
    try:
        assert await _reply(client, "hi") == "through the proxy"
        assert await _reply(client, "and again") == "again"
    finally:
        await client.close()
    assert server.request_targets == [f"{remote}/chat/completions"] * 2


async def test_hosts_named_in_no_proxy_are_reached_directly(
        server: ScriptedServer, make_options, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server.enqueue(script.text("direct"))
    client = Client(make_options())
    try:
        assert await _reply(client, "hi") == "direct"
    finally:
        await client.close()
    assert server.request_targets == ["/v1/chat/completions"]
