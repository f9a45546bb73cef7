"""What users see when the real server refuses or dies: typed errors, nothing lost."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from agent_fixtures import llama_options
from llama_process import LlamaServer

from desktop_agent import Client, TextBlock, Usage
from desktop_agent.core.errors import (
    AuthenticationError,
    ContextTooLongError,
    ServerConnectionError,
)

pytestmark = pytest.mark.e2e

SERVER_KEY = "e2e-server-key-5f2c9a"
WRONG_KEY = "e2e-wrong-key-81d3b7"


async def test_prompt_over_the_context_size_is_context_too_long(
        llama_server: LlamaServer) -> None:
    long_prompt = "word " * 3000  # about 3000 tokens against -c 2048
    async with Client(llama_options(llama_server)) as client:
        await client.query(long_prompt)
        with pytest.raises(ContextTooLongError) as caught:
            async for _item in client.receive_messages():
                pass
        history = client.history

    assert caught.value.status == 400
    assert "context" in str(caught.value).lower()
    assert "Traceback" not in str(caught.value)
    assert history == [{"role": "user", "content": long_prompt}], "the prompt is kept"


async def test_wrong_api_key_is_an_authentication_error(
        start_llama_server: Callable[..., LlamaServer]) -> None:
    server = start_llama_server(api_key=SERVER_KEY)

    async with Client(llama_options(server, api_key=WRONG_KEY)) as client:
        await client.query("Hello")
        with pytest.raises(AuthenticationError) as caught:
            async for _item in client.receive_messages():
                pass
    assert caught.value.status == 401
    for text in (str(caught.value), caught.value.body):
        assert WRONG_KEY not in text and SERVER_KEY not in text

    # the same server answers with the right key
    async with Client(llama_options(server, api_key=SERVER_KEY, max_tokens=8)) as client:
        await client.query("Hello")
        items = [item async for item in client.receive_messages()]
    assert any(isinstance(i, TextBlock) for i in items) and isinstance(items[-1], Usage)


async def test_server_killed_mid_stream_keeps_the_partial_reply(
        start_llama_server: Callable[..., LlamaServer]) -> None:
    server = start_llama_server()
    received: list[str] = []

    options = llama_options(server, max_tokens=400)
    async with Client(options) as client:
        await client.query("Write a long story about a dragon who learns to bake bread.")
        with pytest.raises(ServerConnectionError) as caught:
            async for item in client.receive_messages():
                if isinstance(item, TextBlock):
                    received.append(item.text)
                    if len(received) == 5:
                        server.kill()
        history = client.history

    assert len(received) >= 5
    assert server.base_url in str(caught.value) and "Traceback" not in str(caught.value)
    assert history[0]["role"] == "user"
    assert history[1] == {"role": "assistant", "content": "".join(received)}
    assert len(history) == 2
