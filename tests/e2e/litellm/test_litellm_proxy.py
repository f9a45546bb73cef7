"""The core against a real LiteLLM proxy: replies, failures mid-reply, unknown models, discovery."""

from __future__ import annotations

import pytest
from litellm_process import DEFAULT_PORT, LiteLLMProxy

from desktop_agent import AgentOptions, Client, RetryPolicy, TextBlock
from desktop_agent.core import errors
from desktop_agent.core.servers.discovery import KNOWN_SERVERS, discover_servers
from desktop_agent.testing import ScriptedServer
from desktop_agent.testing.script import ChunkFactory, Drop, Pause, Script

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

NO_RETRY = RetryPolicy(max_retries=0)


def options(proxy: LiteLLMProxy, model: str, **extra: object) -> AgentOptions:
    return AgentOptions(model=model, base_url=proxy.base_url, retry=NO_RETRY, timeout=120,
                        max_tokens=24, temperature=0, **extra)  # type: ignore[arg-type]


async def test_a_reply_streams_through_the_proxy(litellm_proxy: LiteLLMProxy) -> None:
    async with Client(options(litellm_proxy, "smollm2")) as client:
        await client.query("Say hello.")
        items = [item async for item in client.receive_messages()]
    text = "".join(i.text for i in items if isinstance(i, TextBlock))
    assert text.strip()
    assert client.history[-1] == {"role": "assistant", "content": text}
    assert client.turn_metadata["finish_reason"] in ("stop", "length")


async def test_an_upstream_failure_mid_reply_keeps_the_partial_text(
        litellm_proxy: LiteLLMProxy, flaky_upstream: ScriptedServer) -> None:
    f = ChunkFactory(model="flaky")
    # the pause lets the chunks reach the proxy before the connection is torn down
    # (a reset discards data still unread in the receiver's buffer)
    flaky_upstream.enqueue(Script([f.delta({"role": "assistant", "content": "The first "}),
                                   f.delta({"content": "half arrived"}), Pause(1.0), Drop()]))
    seen: list[str] = []
    async with Client(options(litellm_proxy, "flaky")) as client:
        await client.query("Tell me everything.")
        with pytest.raises(errors.APIError) as caught:
            async for item in client.receive_messages():
                if isinstance(item, TextBlock):
                    seen.append(item.text)
        # the person keeps what they saw
        assert "".join(seen) == "The first half arrived"
        assert client.history[-1] == {"role": "assistant", "content": "The first half arrived"}
    # LiteLLM 1.102.4 sends `data: {"error": {"message": "litellm.APIConnectionError: ...
    # Response payload is not completed ..."}}` and ends its stream
    assert isinstance(caught.value, errors.ServerError)
    assert "mid-reply" in str(caught.value)


async def test_an_unknown_model_is_model_not_found(litellm_proxy: LiteLLMProxy) -> None:
    async with Client(options(litellm_proxy, "no-such-model")) as client:
        await client.query("hi")
        with pytest.raises(errors.ModelNotFoundError, match="Invalid model name"):
            async for _ in client.receive_messages():
                pass
        assert client.history == [{"role": "user", "content": "hi"}]


async def test_discovery_finds_the_proxy_and_its_context_lengths(
        litellm_proxy: LiteLLMProxy) -> None:
    if litellm_proxy.port == DEFAULT_PORT:
        known = KNOWN_SERVERS  # the real default places, :4000 among them
    else:  # :4000 was taken on this machine; the same entry, moved
        known = tuple((kind, name, litellm_proxy.base_url if kind == "litellm" else url)
                      for kind, name, url in KNOWN_SERVERS)
    servers = await discover_servers(timeout=5.0, known=known)
    [proxy] = [s for s in servers if s.name == "LiteLLM"]
    assert proxy.up and proxy.error is None
    models = {m.id: m for m in proxy.chat_models}
    assert set(models) == {"smollm2", "flaky"}
    assert models["smollm2"].context_length == 2048  # model_info.max_input_tokens
