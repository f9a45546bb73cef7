"""The window the real llama.cpp applies: read from /props, and a refusal said in a sentence."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from agent_fixtures import llama_options
from llama_process import LlamaServer

from desktop_agent import Client
from desktop_agent.core.errors import ContextTooLongError
from desktop_agent.core.servers import applied_context
from desktop_agent.core.types import CompactionBlock, PromptCutBlock, Usage

# real inference on a shared CPU: a hang guard, not a speed bound
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


async def test_the_window_is_the_per_slot_n_ctx_beside_the_trained_length(
        llama_server: LlamaServer) -> None:
    window = await applied_context.applied_context(llama_server.base_url, llama_server.model)
    assert (window.applied, window.trained, window.server) == (2048, 8192, "llama.cpp")
    assert window.source == "llama.cpp /props n_ctx"


async def test_an_over_long_prompt_comes_back_as_a_sentence_with_the_window_and_the_fix(
        llama_server: LlamaServer) -> None:
    long_prompt = "word " * 3000  # about 3000 tokens against -c 2048
    options = llama_options(llama_server, compaction="off")
    async with Client(options) as client:
        await client.query(long_prompt)
        with pytest.raises(ContextTooLongError) as caught:
            async for _item in client.receive_messages():
                pass
    error = caught.value
    message = str(error)
    # the server's own figures: "request (3007 tokens) exceeds the available context
    # size (2048 tokens)", n_prompt_tokens and n_ctx in its error object
    assert error.window == 2048 and error.prompt_tokens is not None
    assert error.prompt_tokens > 2048
    assert f"({error.prompt_tokens:,} tokens)" in message
    assert "2,048 tokens per request" in message
    assert "Turn compaction on" in message and "--ctx-size 8192" in message
    assert applied_context.learned(llama_server.base_url, llama_server.model) == 2048


async def test_a_small_window_is_asked_and_every_prompt_fits_it(
        start_llama_server: Callable[..., LlamaServer]) -> None:
    """--ctx-size 1024: the app asks it, compacts to it, and the server refuses nothing."""
    server = start_llama_server(context_size=1024)
    window = await applied_context.applied_context(server.base_url, server.model)
    assert window.applied == 1024
    paragraph = "The river bends past the old mill and the orchard. " * 20  # ~220 tokens
    items = []
    turns = 5  # over 1024 by the fifth: the fewest requests that must compact
    async with Client(llama_options(server, compaction="drop_oldest", max_tokens=16)) as client:
        for turn in range(turns):
            await client.query(f"Note {turn}: {paragraph}")
            items += [item async for item in client.receive_messages()]
    assert any(isinstance(i, CompactionBlock) for i in items)
    assert not any(isinstance(i, PromptCutBlock) for i in items)
    usages = [i for i in items if isinstance(i, Usage)]
    assert len(usages) == turns and all((u.prompt_tokens or 0) <= 1024 for u in usages)
