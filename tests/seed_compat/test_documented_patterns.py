"""The three seed patterns issue 30 found broken, run as real scripts against the scripted server.

Each script under ``examples/`` makes the calls the seed documents (manual
tool mode continued from inside the loop; a blocking UserPromptSubmit hook
caught as ``RuntimeError``; interrupt, break and ask again at once) and runs
as a subprocess; the test reads what a person running it would see and what
reached the server.
"""

from __future__ import annotations

import pytest

from desktop_agent.testing import script
from desktop_agent.testing.script import ChunkFactory, Gate, Script

pytestmark = pytest.mark.timeout(180)


def test_manual_tool_mode_continued_from_inside_the_loop(server, run_example):
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"})], ids=["call_1"]),
                   script.text("It is sunny in Paris."))
    done = run_example("manual_continue_in_loop")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "[ran get_weather] Sunny in Paris" in lines
    assert "follow-up: It is sunny in Paris." in lines
    assert "outer loop ended after 1 block(s)" in lines
    assert "roles: user assistant tool assistant" in lines
    continued = server.requests[1]["messages"]
    assert [m["role"] for m in continued] == ["system", "user", "assistant", "tool"]
    assert continued[-1]["content"] == "Sunny in Paris"
    assert len(server.requests) == 2


def test_blocked_prompt_is_caught_as_runtime_error(server, run_example):
    done = run_example("blocked_prompt")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "blocked: prompts may not mention passwords" in lines
    assert "reply: You said: What is the capital of France?" in lines
    assert "history: 2 messages" in lines
    assert len(server.requests) == 1  # the blocked prompt never reached the server


def test_interrupt_break_and_ask_again_at_once(server, run_example, gate):
    f = ChunkFactory()
    words = [f.delta({"content": f"River number {i} flows. "}) for i in range(12)]
    # The rest of the essay waits behind a gate the test never opens while the script
    # runs: the second question can only be answered if interrupt() did not wait for it.
    server.enqueue(Script([f.delta({"role": "assistant", "content": ""}), *words,
                           Gate(gate, timeout=120), f.delta({"content": "never sent"}),
                           f.finish("stop")]))
    done = run_example("interrupt_break_query")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    kept = int(lines[0].split()[1])
    assert 100 <= kept < len("River number 10 flows. ") * 12
    assert "You said: another question" in lines
    assert "roles: user assistant user assistant" in lines
    second = server.requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and "never sent" not in second[-2]["content"]
