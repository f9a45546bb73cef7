"""The LiteLLM tier: a real LiteLLM proxy in front of the llama.cpp server (and a scripted one).

Facts observed against litellm[proxy] 1.102.4 (its own venv, .venv-compat/):

- Start-up to ``GET /health/liveliness`` == 200 takes 10-20 s on two busy cores.
- ``/v1/models`` lists ``{"id": ..., "owned_by": "openai", "max_input_tokens": N}`` when
  the config gives ``model_info.max_input_tokens``; ``/v1/model/info`` has it under
  ``model_info`` with ``mode`` and ``supports_vision`` null for a custom
  ``openai/...`` deployment.
- An unknown model answers 400 ``{"error": {"message": "/chat/completions: Invalid model
  name passed in model=nope. Call `/v1/models` ..."}}``.
- When the upstream drops the connection mid-reply, the proxy ends its own stream with
  a ``data: {"error": {...}}`` event.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litellm_process import (
    LiteLLMNotInstalled,
    LiteLLMProxy,
    litellm_command,
    start_proxy,
    write_config,
)
from tier_policy import part_missing

from desktop_agent.testing import ScriptedServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def flaky_upstream() -> Iterator[ScriptedServer]:
    """A scripted OpenAI-compatible upstream the proxy routes model ``flaky`` to."""
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="session")
def litellm_proxy(llama_server, flaky_upstream: ScriptedServer,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLMProxy]:
    """One proxy for the session: ``smollm2`` -> llama.cpp, ``flaky`` -> the scripted upstream."""
    try:
        litellm_command()
    except LiteLLMNotInstalled as exc:
        part_missing(str(exc))
    folder: Path = tmp_path_factory.mktemp("litellm")
    config = write_config(folder, [
        {"model_name": "smollm2",
         "litellm_params": {"model": "openai/smollm2", "api_base": llama_server.base_url,
                            "api_key": "not-needed"},
         "model_info": {"max_input_tokens": 2048}},
        {"model_name": "flaky",
         "litellm_params": {"model": "openai/flaky", "api_base": flaky_upstream.base_url,
                            "api_key": "not-needed"}},
    ])
    proxy = start_proxy(config, folder)
    try:
        yield proxy
    finally:
        proxy.stop()
