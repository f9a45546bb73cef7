"""Fixtures for the core tier: a real scripted model server on 127.0.0.1."""

from __future__ import annotations

import pytest

from desktop_agent import AgentOptions, RetryPolicy
from desktop_agent.testing import ScriptedServer

FAST_RETRY = RetryPolicy(max_retries=2, initial_delay=0.01, max_delay=0.05, jitter=False)


@pytest.fixture
def make_options(server: ScriptedServer):
    def make(**overrides) -> AgentOptions:
        values = {"model": "test-model", "base_url": server.base_url, "retry": FAST_RETRY,
                  "max_turns": None, "timeout": 10.0}
        values.update(overrides)
        return AgentOptions(**values)

    return make
