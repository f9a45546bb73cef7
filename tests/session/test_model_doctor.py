"""The model doctor of a conversation: its notices, the probe on demand and in the background.

The scripted server plays llama.cpp: ``/props`` (the key the server kind is
told by), ``/apply-template`` rendering the same prompt with and without tools
(what SmolLM2's own template does, seen on the real server: see
tests/e2e/llama/test_llama_doctor.py), and ``timings`` in the last chunk
(tools/server/README.md).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from desktop_agent.core.servers import prompt_speed
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.session import events as ev
from desktop_agent.session import probe_summary, tool_call_mode_for
from desktop_agent.store import Store
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import ChunkFactory

SAME_PROMPT = {"prompt": "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                         "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n"
                         "<|im_start|>assistant\n"}


def llama_like(server: ScriptedServer, template_drops_tools: bool = True) -> None:
    server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 4096},
                                              "chat_template_caps": {"supports_tools": False}})
    if template_drops_tools:
        server.routes[("POST", "/apply-template")] = (200, SAME_PROMPT)


def probe_answers(body: dict[str, Any]) -> script.Script:
    """A model that calls only when held to the grammar (as SmolLM2 under its own template)."""
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    wanted = {"What is the weather in Paris?": ("get_weather", {"city": "Paris"}),
              "What time is it in Tokyo?": ("get_time", {"city": "Tokyo"}),
              "Use the add tool to add 2 and 3.": ("add", {"a": 2, "b": 3})}.get(prompt)
    if "response_format" in body and wanted:
        return script.text(json.dumps({"name": wanted[0], "arguments": wanted[1]}))
    return script.text(json.dumps({"answer": "Bonjour"}) if "response_format" in body
                       else "Bonjour")


def slow_reply(text: str) -> script.Script:
    f = ChunkFactory()
    last = f.usage(900, 2).data
    last["timings"] = {"prompt_n": 900, "cache_n": 0, "prompt_per_second": 40.0,
                       "predicted_per_second": 18.0}
    return script.from_chunks([f.delta({"role": "assistant", "content": text}).data,
                               f.finish("stop").data, last])


@pytest.fixture(autouse=True)
def _fresh():
    tool_call_mode.forget()
    prompt_speed.forget()
    yield
    tool_call_mode.forget()
    prompt_speed.forget()


async def finished(session: Any) -> None:
    for _ in range(2000):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn did not end")


async def probed(session: Any) -> ev.ToolCallProbed:
    for _ in range(2000):
        done = [e for e in session.events if isinstance(e, ev.ToolCallProbed)]
        if done:
            return done[0]
        await asyncio.sleep(0.01)
    raise AssertionError("the background probe did not finish")


async def test_a_template_without_tools_is_said_and_a_new_model_probed_in_background(
        make_session: Any, model_server: ScriptedServer, store: Store) -> None:
    llama_like(model_server)
    model_server.enqueue(script.text('{"answer": "Sunny, I think."}'))
    model_server.responder = probe_answers  # the background probe's requests (after the turn)
    session = make_session()
    session.send("Weather in Paris?")
    await finished(session)
    notices = [e for e in session.events if isinstance(e, ev.DoctorNotice)]
    assert [n.kind for n in notices] == ["template_without_tools"]
    assert "chat template has no place for tools" in notices[0].text
    assert "response_format" in model_server.requests[0]  # constrained, as said

    done = await probed(session)
    assert done.result.summary == "native calls: 1 of 4; constrained: 4 of 4"
    assert done.result.template_ignores_tools is True
    assert done.mode.startswith("Constrained tool calls: measured on this model")
    # kept for every conversation and process: a fresh process reads it back
    tool_call_mode.forget()
    assert probe_summary(session.settings, store) == done.result
    mode = await tool_call_mode_for(session.settings, store)
    assert mode is not None and mode.measured == done.result

    # the next turn does not probe again, nor say the template again
    requests = len(model_server.requests)
    model_server.enqueue(script.text('{"answer": "Still sunny."}'))
    session.send("And now?")
    await finished(session)
    await asyncio.sleep(0.05)
    assert len(model_server.requests) == requests + 1
    assert len([e for e in session.events if isinstance(e, ev.DoctorNotice)]) == 1


async def test_test_this_model_runs_once_however_often_it_is_asked(
        make_session: Any, model_server: ScriptedServer) -> None:
    llama_like(model_server, template_drops_tools=False)
    model_server.responder = probe_answers
    session = make_session()
    first, second = await asyncio.gather(session.test_model(), session.test_model())
    assert first == second and first.constrained == 4
    assert len(model_server.requests) == 8  # four cases, natively and constrained, once
    assert [type(e).__name__ for e in session.events].count("ToolCallProbed") == 2


async def test_a_slow_fixed_prompt_is_said_with_what_helps(
        make_session: Any, model_server: ScriptedServer) -> None:
    llama_like(model_server, template_drops_tools=False)
    model_server.enqueue(slow_reply('{"answer": "Hi."}'))
    session = make_session(system_prompt="Be brief. " * 300)
    session.send("Hi")
    await finished(session)
    notice = next(e for e in session.events if isinstance(e, ev.DoctorNotice)
                  and e.kind == "slow_prompt")
    assert "takes about" in notice.text and "(40 prompt tokens/s)" in notice.text
    assert [offer for offer, _ in notice.offers] == ["prompt_cache"]
    await session.close()
