"""Constrained tool calls on a real llama.cpp server: a tiny model made to call correctly.

SmolLM2-135M does not follow an unfamiliar tool's schema on its own: asked for the
temperature unit it writes whatever comes to it. With ``constrained_tool_calls``
llama.cpp compiles the reply's JSON schema to a grammar, so the only replies it can
produce are an answer or a call of ``convert`` whose ``unit`` is one of the enum's
values and whose ``value`` is an integer; the core turns that into a normal call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agent_fixtures import llama_options
from llama_process import LlamaServer

from desktop_agent import Client, TextBlock, ToolUseBlock, ToolUseError, tool

pytestmark = pytest.mark.e2e

UNITS = ["kelvin", "rankine"]


def convert_tool(calls: list[dict[str, Any]]) -> Any:
    @tool("convert", "Convert a temperature to another unit.",
          {"type": "object",
           "properties": {"value": {"type": "integer"},
                          "unit": {"type": "string", "enum": UNITS}},
           "required": ["value", "unit"]})
    def convert(args: dict[str, Any]) -> str:
        calls.append(dict(args))
        return f"{args['value']} in {args['unit']}"

    return convert


async def test_a_tiny_model_calls_the_tool_correctly_when_constrained(
        llama_server: LlamaServer) -> None:
    # Measured here at temperature 0: without the option SmolLM2 answers in prose with
    # a code snippet (`convert(300, "kelvin")`) and calls nothing; with it, it calls.
    calls: list[dict[str, Any]] = []
    options = llama_options(llama_server, tools=[convert_tool(calls)], max_tokens=96,
                            constrained_tool_calls=True, auto_execute_tools=True,
                            max_tool_iterations=1, extra_body={"cache_prompt": False})
    async with Client(options) as client:
        await client.query("Use the convert tool: convert 300 degrees to kelvin.")
        items = [item async for item in client.receive_messages()]
        history = client.history
    uses = [i for i in items if isinstance(i, ToolUseBlock)]
    assert uses, "the grammar made the model call the tool"
    for use in uses:  # every call the model made is well-formed
        assert use.name == "convert"
        assert set(use.input) == {"value", "unit"}
        assert isinstance(use.input["value"], int) and use.input["unit"] in UNITS
    assert calls[0] == {"value": 300, "unit": "kelvin"}
    # no call was unusable (the only error allowed is the one-round limit stopping)
    assert all(e.name is None for e in items if isinstance(e, ToolUseError))
    assert "{" not in "".join(i.text for i in items if isinstance(i, TextBlock))
    assert history[1]["tool_calls"][0]["function"]["name"] == "convert"  # native in history


def chosen_tools(calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Three tools, each recording its calls, for a request that must pick one."""
    def recording(name: str, description: str, properties: dict[str, Any],
                  reply: Callable[[dict[str, Any]], str]) -> Any:
        @tool(name, description, {"type": "object", "properties": properties,
                                  "required": list(properties)})
        def run(args: dict[str, Any]) -> str:
            calls.append((name, dict(args)))
            return reply(args)

        return run

    return [
        recording("get_weather", "The current weather in a city.",
                  {"city": {"type": "string"}}, lambda _: "Sunny"),
        recording("convert", "Convert a temperature to another unit.",
                  {"value": {"type": "integer"}, "unit": {"type": "string", "enum": UNITS}},
                  lambda args: f"{args['value']} in {args['unit']}"),
        recording("circle_area", "The area of a circle.",
                  {"radius": {"type": "number"}}, lambda _: "28.27"),
    ]


@pytest.mark.parametrize(("prompt", "wanted"), [
    ("Convert 300 degrees to kelvin.", ("convert", {"value": 300, "unit": "kelvin"})),
    ("What is the area of a circle of radius 3?", ("circle_area", {"radius": 3})),
])
async def test_a_tiny_model_picks_one_of_several_tools(
        llama_server: LlamaServer, prompt: str, wanted: tuple[str, dict[str, Any]]) -> None:
    # BFCL's "multiple" kind of request: several tools offered, one call of one of them
    # wanted. Measured here at temperature 0 before the reply's shape put the tool's
    # name first: the model answered the area in prose ("1.5444") and added a call of
    # get_weather for London to the conversion.
    calls: list[tuple[str, dict[str, Any]]] = []
    options = llama_options(llama_server, tools=chosen_tools(calls), max_tokens=96,
                            constrained_tool_calls=True, auto_execute_tools=True,
                            max_tool_iterations=1, extra_body={"cache_prompt": False})
    async with Client(options) as client:
        await client.query(prompt)
        [item async for item in client.receive_messages()]
    assert calls == [wanted]  # the first reply's calls: exactly the one wanted


async def test_a_tiny_model_answers_a_question_no_tool_fits(llama_server: LlamaServer) -> None:
    # BFCL's "irrelevance" kind of request: tools are offered, none does what is asked.
    # Measured before the request was judged by its words: SmolLM2 made a call for each
    # of the 30 such requests of bench/bfcl.py's run; an agent must not run a tool
    # because it is offered one.
    calls: list[tuple[str, dict[str, Any]]] = []
    options = llama_options(llama_server, tools=chosen_tools(calls), max_tokens=48,
                            constrained_tool_calls=True, auto_execute_tools=True,
                            max_tool_iterations=1, extra_body={"cache_prompt": False})
    async with Client(options) as client:
        await client.query("Who wrote Romeo and Juliet?")
        items = [item async for item in client.receive_messages()]
    assert calls == []
    assert not any(isinstance(i, ToolUseBlock | ToolUseError) for i in items)
    text = "".join(i.text for i in items if isinstance(i, TextBlock))
    assert text.strip() and "{" not in text  # an answer in words, not the reply's JSON
