"""The server's prompt-processing speed is measured from its own figures; a slow prefix is said.

llama.cpp's last streamed chunk carries ``timings`` (``prompt_n``, ``cache_n``,
``prompt_per_second``: tools/server/README.md, "POST /v1/chat/completions" and
the ``timings`` object of its responses); the scripted server replays that shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from desktop_agent import Client
from desktop_agent.core.servers import prompt_speed
from desktop_agent.testing import script
from desktop_agent.testing.script import ChunkFactory


def llama_reply(text: str, *, prompt_n: int, cache_n: int, per_second: float) -> Any:
    """A streamed reply ending as llama.cpp ends it: usage and timings in the last chunk."""
    f = ChunkFactory()
    last = f.usage(prompt_n + cache_n, 3).data
    last["usage"]["prompt_tokens_details"] = {"cached_tokens": cache_n}
    last["timings"] = {"cache_n": cache_n, "prompt_n": prompt_n,
                       "prompt_ms": 1000 * prompt_n / per_second,
                       "prompt_per_second": per_second, "predicted_n": 3,
                       "predicted_per_second": 18.0}
    return script.from_chunks([f.delta({"role": "assistant", "content": text}).data,
                               f.finish("stop").data, last])


@pytest.fixture(autouse=True)
def _fresh():
    prompt_speed.forget()
    yield
    prompt_speed.forget()


async def test_the_turn_reports_what_the_server_evaluated_and_reused(server,
                                                                    make_options) -> None:
    server.enqueue(llama_reply("Hi.", prompt_n=1000, cache_n=0, per_second=40.0),
                   llama_reply("Again.", prompt_n=12, cache_n=1010, per_second=30.0))
    async with Client(make_options()) as client:
        usages = []
        for prompt in ("hello", "again"):
            await client.query(prompt)
            usages += [i async for i in client.receive_messages() if i.type == "usage"]
    first, second = usages
    assert (first.prompt_tokens_evaluated, first.cached_prompt_tokens,
            first.prompt_tokens_per_second) == (1000, 0, 40.0)
    assert (second.prompt_tokens_evaluated, second.cached_prompt_tokens) == (12, 1010)
    # twelve tokens say nothing about the speed: the estimate stays the first turn's
    assert prompt_speed.speed(server.base_url, "test-model") == 40.0


def test_without_server_timings_the_time_to_first_token_measures_it() -> None:
    assert prompt_speed.observe("http://h/v1", "m", evaluated=500,
                                first_token_seconds=10.0) == 50.0
    assert prompt_speed.observe("http://h/v1", "m", evaluated=500,
                                tokens_per_second=150.0) == 100.0  # halfway to the new one
    assert prompt_speed.observe("http://h/v1", "m", evaluated=None) == 100.0


def test_a_slow_fixed_prefix_is_said_with_what_helps() -> None:
    warning = prompt_speed.slow_prompt(1100, 495, 40.0, server="llama.cpp", tool_count=7)
    assert warning is not None and round(warning.seconds) == 28
    assert warning.sentence == ("The fixed part of every prompt (1,100 tokens, 495 of them tool "
                                "schemas) takes about 28 s to process on this server (40 "
                                "prompt tokens/s) before the first word.")
    assert [offer for offer, _ in warning.offers] == ["prompt_cache", "fewer_tools",
                                                      "constrained_schemas"]
    # a fast server, or an unmeasured one, gets no warning
    assert prompt_speed.slow_prompt(1100, 495, 1000.0, server="llama.cpp") is None
    assert prompt_speed.slow_prompt(1100, 495, None) is None
    # another server has no prompt_cache switch to offer; constrained already is compact
    other = prompt_speed.slow_prompt(1100, 495, 40.0, server="Ollama", tool_count=7,
                                     constrained=True)
    assert other is not None and [o for o, _ in other.offers] == ["fewer_tools"]
