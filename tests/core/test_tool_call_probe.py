"""The tool-call probe measures what a model does, and the automatic mode follows it.

Over real HTTP to ScriptedServer, which answers each probe request as one kind
of model would (it reads the request: ``tools=`` or ``response_format``) and
replays what LM Studio and Ollama say about their models in the JSON shapes
their documentation gives:

* Ollama ``POST /api/show``: ``capabilities`` (``"completion"``, ``"tools"``...),
  https://github.com/ollama/ollama/blob/main/docs/api.md#show-model-information
* LM Studio ``GET /api/v0/models``: entries with ``id``, ``type``, ``capabilities``
  (``"tool_use"``), https://lmstudio.ai/docs/app/api/endpoints/rest
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from desktop_agent import Client, tool
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.tooling.probe_result import ProbeResult
from desktop_agent.core.tooling.tool_call_probe import (
    CASES,
    probe_once,
    probe_tool_calls,
    running,
)
from desktop_agent.testing import script

#: Ollama's /api/show for a model whose template has tools (docs/api.md, "Show Model Information").
OLLAMA_SHOW = {"modelfile": "FROM qwen2.5:0.5b", "parameters": "", "template": "{{ .Prompt }}",
               "details": {"format": "gguf", "family": "qwen2", "parameter_size": "494M",
                           "quantization_level": "Q4_K_M"},
               "model_info": {"general.architecture": "qwen2"},
               "capabilities": ["completion", "tools"]}
#: LM Studio's /api/v0/models (lmstudio.ai/docs/app/api/endpoints/rest, "GET /api/v0/models").
LMSTUDIO_MODELS = {"object": "list", "data": [{
    "id": "test-model", "object": "model", "type": "llm", "publisher": "lmstudio-community",
    "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M",
    "state": "loaded", "max_context_length": 32768, "loaded_context_length": 4096,
    "capabilities": ["tool_use"]}]}

ANSWERS = {"What is the weather in Paris?": ("get_weather", {"city": "Paris"}),
           "What time is it in Tokyo?": ("get_time", {"city": "Tokyo"}),
           "Use the add tool to add 2 and 3.": ("add", {"a": 2, "b": 3})}


def _prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def model_that(native: str, constrained: str = "right") -> Any:
    """A responder: ``native`` is ``calls``, ``prose``, ``mistral`` or ``hermes``;
    ``constrained`` is ``right``, ``prose`` or ``refused``."""
    def respond(body: dict[str, Any]) -> script.Script:
        wanted = ANSWERS.get(_prompt(body))
        if "response_format" in body:
            if constrained == "refused":
                return script.error(400, "response_format is not supported by this server")
            if wanted is None or constrained == "prose":
                return script.text(json.dumps({"answer": "Bonjour !"}))
            return script.text(json.dumps({"name": wanted[0], "arguments": wanted[1]}))
        if wanted is None or native == "prose":
            return script.text("Bonjour ! I would need to look that up.")
        if native == "calls":
            return script.tool_calls([wanted])
        if native == "mistral":
            return script.text(f"[TOOL_CALLS]{wanted[0]}[ARGS]{json.dumps(wanted[1])}")
        return script.text(f"<tool_call>{json.dumps({'name': wanted[0], 'arguments': wanted[1]})}"
                           "</tool_call>")
    return respond


@pytest.fixture(autouse=True)
def _fresh_modes():
    tool_call_mode.forget()
    yield
    tool_call_mode.forget()


async def test_ollama_says_tools_but_the_model_only_calls_when_constrained(server,
                                                                         make_options) -> None:
    server.routes[("POST", "/api/show")] = (200, OLLAMA_SHOW)
    options = make_options(tools=[get_weather])
    said = await tool_call_mode.resolve(options)
    assert not said.constrained and "Ollama says the model calls tools itself" in said.reason

    server.responder = model_that("prose")
    result = await probe_tool_calls(server.base_url, "test-model")
    assert result == ProbeResult(4, 1, 1, 4, None)  # "hello in French": no call is right
    assert result.summary == "native calls: 1 of 4; constrained: 4 of 4"
    assert len(server.requests) == 2 * len(CASES)
    assert all(r["temperature"] == 0 and r["max_tokens"] <= 128 for r in server.requests)

    tool_call_mode.remember_probe(server.base_url, "test-model", result)
    mode = await tool_call_mode.resolve(options)
    assert mode.constrained and mode.measured == result
    assert mode.reason == ("Constrained tool calls: measured on this model (native calls: "
                           "1 of 4; constrained: 4 of 4).")
    server.responder = None
    server.enqueue(script.text('{"answer": "Sunny."}'))
    async with Client(options) as client:  # the next turn goes the measured way
        await client.query("Weather in Paris?")
        [item async for item in client.receive_messages()]
    assert "response_format" in server.requests[-1] and "tools" not in server.requests[-1]


async def test_lmstudio_model_that_calls_natively_stays_native(server, make_options) -> None:
    server.routes[("GET", "/api/v0/models")] = (200, LMSTUDIO_MODELS)
    server.responder = model_that("calls", constrained="prose")
    result = await probe_tool_calls(server.base_url, "test-model")
    assert result.summary == "native calls: 4 of 4; constrained: 1 of 4"
    tool_call_mode.remember_probe(server.base_url, "test-model", result)
    mode = await tool_call_mode.resolve(make_options(tools=[get_weather]))
    assert not mode.constrained and mode.reason.startswith("Native tool calls: measured")


@pytest.mark.parametrize("form", ["mistral", "hermes"])
async def test_calls_written_as_text_count_for_the_native_mode(server, form: str) -> None:
    server.responder = model_that(form, constrained="prose")
    result = await probe_tool_calls(server.base_url, "test-model")
    assert (result.native, result.text, result.constrained) == (1, 4, 1)
    assert result.summary == ("native calls: 1 of 4; text-format calls: 4 of 4; "
                              "constrained: 1 of 4")
    assert not result.constrained_wins


async def test_a_server_that_refuses_constrained_output_is_scored_so(server) -> None:
    server.responder = model_that("prose", constrained="refused")
    result = await probe_tool_calls(server.base_url, "test-model")
    assert result.constrained is None and not result.constrained_wins
    assert result.summary == "native calls: 1 of 4; constrained: refused by the server"
    assert sum("response_format" in r for r in server.requests) == 1  # asked once, not 4 times


async def test_two_askers_share_one_probe(server) -> None:
    server.responder = model_that("prose")
    first = asyncio.ensure_future(probe_once(server.base_url, "test-model"))
    await asyncio.sleep(0)
    assert running(server.base_url, "test-model")
    second = await probe_once(server.base_url, "test-model")
    assert await first == second
    assert len(server.requests) == 2 * len(CASES)
    assert not running(server.base_url, "test-model")


async def test_a_server_that_stops_answering_gives_an_error_not_a_mode(server,
                                                                       make_options) -> None:
    server.enqueue(script.text("Bonjour"), script.text('{"answer": "x"}'))
    server.responder = lambda body: script.Script([script.Hangup()])
    result = await probe_tool_calls(server.base_url, "test-model", timeout=5.0)
    assert result.error is not None and "stopped answering" in result.error
    tool_call_mode.remember_probe(server.base_url, "test-model", result)
    mode = await tool_call_mode.resolve(make_options(tools=[get_weather]))
    assert mode.measured is None  # an unfinished probe does not decide


def test_a_stored_result_reads_back_and_junk_reads_as_none() -> None:
    result = ProbeResult(4, 0, 2, 4, True)
    assert ProbeResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert ProbeResult.from_dict({"cases": "x"}) is None
    assert ProbeResult.from_dict(None) is None


@tool("get_weather", "Weather for a city", {"city": str})
async def get_weather(args: dict[str, Any]) -> str:
    return f"Sunny in {args['city']}"
