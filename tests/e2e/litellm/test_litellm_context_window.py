"""The window a real LiteLLM proxy applies: its ``max_input_tokens``, with where it came from."""

from __future__ import annotations

import pytest
from litellm_process import LiteLLMProxy

from desktop_agent.core.servers.applied_context import applied_context
from desktop_agent.core.servers.discovery import probe_server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


async def test_the_proxy_says_the_window_of_its_deployment(litellm_proxy: LiteLLMProxy) -> None:
    window = await applied_context(litellm_proxy.base_url, "smollm2", timeout=10.0)
    assert (window.applied, window.server, window.source) == (
        2048, "LiteLLM", "LiteLLM max_input_tokens")
    info = await probe_server(litellm_proxy.base_url, kind="litellm", timeout=5.0)
    listed = {m.id: m for m in info.chat_models}
    assert listed["smollm2"].context_source == "LiteLLM max_input_tokens"
    assert listed["flaky"].context_length is None  # its config names no window
