"""The core against LLMock, a third-party chaos mock of OpenAI-style servers.

Observed with llmock 0.2.2: ``--stream-fault truncate=1.0`` sends 1 to 6 chunks (drawn
at random; the first is the role chunk with empty content), then ends the body cleanly
with no ``finish_reason`` and no ``[DONE]``; ``/v1/models`` lists chat models next to
``gpt-image-1`` and two ``text-embedding-3-*`` models.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litellm_process import LiteLLMNotInstalled, LiteLLMProxy, llmock_command, start_llmock
from tier_policy import part_missing

from desktop_agent import AgentOptions, Client, RetryPolicy, TextBlock
from desktop_agent.core import errors
from desktop_agent.core.servers.discovery import probe_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def truncating_mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLMProxy]:
    try:
        llmock_command()
    except LiteLLMNotInstalled as exc:
        part_missing(str(exc))
    folder: Path = tmp_path_factory.mktemp("llmock")
    mock = start_llmock(folder, "--stream-fault", "truncate=1.0", "--tool-mode", "off")
    try:
        yield mock
    finally:
        mock.stop()


async def test_a_truncated_stream_is_an_incomplete_reply_with_its_text_kept(
        truncating_mock: LiteLLMProxy) -> None:
    options = AgentOptions(model="gpt-4o-mini", base_url=truncating_mock.base_url,
                           retry=RetryPolicy(max_retries=0), timeout=30)
    kept = []
    for _attempt in range(10):  # LLMock cuts after 1 to 6 chunks, at random
        seen: list[str] = []
        async with Client(options) as client:
            await client.query("Tell me a story.")
            with pytest.raises(errors.IncompleteReplyError, match="ended the reply early"):
                async for item in client.receive_messages():
                    if isinstance(item, TextBlock):
                        seen.append(item.text)
            text = "".join(seen)
            if text:  # the text before the cut stays in the conversation
                assert client.history[-1] == {"role": "assistant", "content": text}
                kept.append(text)
            else:  # cut before any text: no empty reply is added
                assert client.history[-1]["role"] == "user"
        if kept:
            break
    assert kept


async def test_image_and_embedding_models_are_not_offered_for_chat(
        truncating_mock: LiteLLMProxy) -> None:
    info = await probe_server(truncating_mock.base_url, timeout=5.0)
    chat = {m.id for m in info.chat_models}
    assert "gpt-4o-mini" in chat
    assert not chat & {"gpt-image-1", "text-embedding-3-small", "text-embedding-3-large"}
