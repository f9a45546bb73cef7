"""REST: *Test this model* as a route, and the model doctor's findings as events.

The scripted server plays llama.cpp (``/props``, ``/apply-template`` rendering the
same prompt with and without tools as SmolLM2's own template does on the real
server: tests/e2e/llama/test_llama_doctor.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from server_harness import RunningApi

from desktop_agent.core.servers import prompt_speed
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.testing import ScriptedServer, script

WANTED = {"What is the weather in Paris?": ("get_weather", {"city": "Paris"}),
          "What time is it in Tokyo?": ("get_time", {"city": "Tokyo"}),
          "Use the add tool to add 2 and 3.": ("add", {"a": 2, "b": 3})}


def llama_like(server: ScriptedServer) -> None:
    server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 4096}})
    server.routes[("POST", "/apply-template")] = (200, {"prompt": "<|im_start|>user\nx"})


def calls_when_held(body: dict[str, Any]) -> script.Script:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    wanted = WANTED.get(prompt)
    if "response_format" not in body:
        return script.text("Bonjour")
    return script.text(json.dumps({"name": wanted[0], "arguments": wanted[1]} if wanted
                                  else {"answer": "Bonjour"}))


@pytest.fixture(autouse=True)
def _fresh():
    tool_call_mode.forget()
    prompt_speed.forget()
    yield
    tool_call_mode.forget()
    prompt_speed.forget()


def test_test_model_answers_the_measured_result_and_reports_it(
        api: RunningApi, model_server: ScriptedServer) -> None:
    llama_like(model_server)
    model_server.responder = calls_when_held
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    answer = api.client.post(f"/conversations/{cid}/test-model")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["native"], body["constrained"], body["cases"]) == (1, 4, 4)
    assert body["summary"] == "native calls: 1 of 4; constrained: 4 of 4"
    assert body["template_ignores_tools"] is True
    assert body["mode"].startswith("Constrained tool calls: measured on this model")
    events = api.events(cid, types="tool_call_probe")
    assert [e["data"]["summary"] for e in events] == [body["summary"]]


def test_a_turn_on_a_template_without_tools_reports_a_doctor_notice(
        api: RunningApi, model_server: ScriptedServer) -> None:
    llama_like(model_server)
    model_server.enqueue(script.text('{"answer": "Sunny."}'))
    model_server.responder = calls_when_held  # the background probe after the turn
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    assert api.client.post(f"/conversations/{cid}/run",
                           json={"message": "Weather in Paris?"}).status_code == 202
    api.wait_idle(cid)
    notices = api.events(cid, types="doctor_notice")
    assert [n["data"]["kind"] for n in notices] == ["template_without_tools"]
    assert "chat template has no place for tools" in notices[0]["data"]["text"]


def test_test_model_without_a_model_is_refused_with_a_sentence(api: RunningApi) -> None:
    cid = api.create()["id"]
    answer = api.client.post(f"/conversations/{cid}/test-model")
    assert answer.status_code == 409
    assert answer.json()["code"] == "not_configured" and "model" in answer.json()["error"]
