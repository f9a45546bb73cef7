"""The fixed part of the prompt is byte-identical from request to request.

Every server's prefix cache (llama.cpp's slots, vLLM's and LM Studio's) reuses
work only up to the first byte that differs; a system prompt or a tool list
that changes between requests makes each request process the whole prompt
again. Two consecutive requests are captured over real HTTP (ScriptedServer)
and their serialized prefix compared: system prompt, tools (or the constrained
instructions and schema) and every earlier message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop_agent import Client
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.tooling.builtin import builtin_tools
from desktop_agent.testing import script

SYSTEM = "You are a careful assistant.\n\nProject instructions (AGENTS.md):\nUse tabs."


def _fixed(body: dict[str, Any]) -> str:
    """The part of the prompt that does not depend on the conversation's new messages.

    Not ``response_format``: a server compiles it to a grammar that steers the
    sampling, it is no part of the prompt's tokens (constrained calls narrow it
    to the tools a request names, see tool_match).
    """
    return json.dumps({"system": body["messages"][0], "tools": body.get("tools")},
                      ensure_ascii=False)


def _messages(body: dict[str, Any]) -> list[str]:
    return [json.dumps(m, ensure_ascii=False) for m in body["messages"]]


@pytest.fixture(autouse=True)
def _fresh_modes():
    tool_call_mode.forget()
    yield
    tool_call_mode.forget()


@pytest.mark.parametrize("llama", [False, True], ids=["native", "llama-constrained"])
async def test_consecutive_requests_share_their_prefix(server, make_options, tmp_path,
                                                       llama: bool) -> None:
    if llama:  # /props answering makes this a llama.cpp server: constrained calls
        server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 4096}})
    (tmp_path / "a.txt").write_text("hello\n")
    call = ({"name": "read_file", "arguments": {"path": "a.txt"}} if llama else None)
    server.enqueue(script.text(json.dumps(call)) if llama else
                   script.tool_calls([("read_file", {"path": "a.txt"})]),
                   script.text('{"answer": "It says hello."}' if llama else "It says hello."),
                   script.text('{"answer": "Yes."}' if llama else "Yes."))
    options = make_options(tools=builtin_tools(str(tmp_path)), system_prompt=SYSTEM,
                           auto_execute_tools=True)
    async with Client(options) as client:
        for prompt in ("What does a.txt say?", "Sure?"):
            await client.query(prompt)
            [item async for item in client.receive_messages()]
    first, second, third = server.requests
    assert _fixed(first) == _fixed(second) == _fixed(third)
    # each request starts with every message of the one before, byte for byte
    assert _messages(second)[:len(_messages(first))] == _messages(first)
    assert _messages(third)[:len(_messages(second))] == _messages(second)
    assert ("response_format" in first) is llama
    # llama.cpp is asked to keep its prompt cache; other servers get no unknown field
    assert all(r.get("cache_prompt") is (True if llama else None) for r in server.requests)
