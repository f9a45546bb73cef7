"""Constrained tool calls over real HTTP: what is asked for, and what comes back as blocks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from constrained_replies import text_of

from desktop_agent import Client, TextBlock, ToolUseBlock, tool
from desktop_agent.core.tooling import constrained_calls, tool_call_mode
from desktop_agent.core.wire.constrained_reply import ConstrainedReplyParser
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


def weather_tool(calls: list[dict[str, Any]]) -> Any:
    @tool("get_weather", "The weather in a city.",
          {"type": "object", "properties": {
              "city": {"type": "string"},
              "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "unit"]})
    def get_weather(args: dict[str, Any]) -> str:
        calls.append(dict(args))
        return f"Sunny in {args['city']}"

    return get_weather


async def turn(client: Client, prompt: str) -> list[Any]:
    await client.query(prompt)
    return [item async for item in client.receive_messages()]


@pytest.fixture(autouse=True)
def _forget_refusals() -> Any:
    yield
    tool_call_mode.forget()


async def test_off_by_default_and_on_only_with_tools(server: Any, make_options: Any) -> None:
    calls: list[dict[str, Any]] = []
    server.enqueue(script.text("Plain."), script.text('{"answer": "No tools."}'))
    async with Client(make_options(tools=[weather_tool(calls)])) as client:
        await turn(client, "hi")
    async with Client(make_options(constrained_tool_calls=True)) as client:
        assert text_of(await turn(client, "hi")) == '{"answer": "No tools."}'
    plain, toolless = server.requests
    assert "tools" in plain and "response_format" not in plain
    assert "response_format" not in toolless  # nothing to constrain a call to


async def test_a_constrained_call_runs_and_the_answer_streams(server: Any,
                                                              make_options: Any) -> None:
    calls: list[dict[str, Any]] = []
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})
    answer = json.dumps({"answer": 'Sunny in Paris, "warm" \u00e9t\u00e9 \U0001f31e.'})
    server.enqueue(script.text(call, pieces=7), script.text(answer, pieces=11))
    options = make_options(tools=[weather_tool(calls)], constrained_tool_calls=True,
                           auto_execute_tools=True, system_prompt="Be brief.")
    async with Client(options) as client:
        items = await turn(client, "Weather in Paris?")
        history = client.history
    assert calls == [{"city": "Paris", "unit": "celsius"}]
    used = [i for i in items if isinstance(i, ToolUseBlock)]
    assert [(u.name, u.input) for u in used] == [("get_weather",
                                                 {"city": "Paris", "unit": "celsius"})]
    assert text_of(items) == 'Sunny in Paris, "warm" \u00e9t\u00e9 \U0001f31e.'
    assert sum(isinstance(i, TextBlock) for i in items) > 1, "the answer streams in pieces"
    # the history keeps native calls and the answer's text, never the JSON
    assert history[1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert history[-1] == {"role": "assistant",
                           "content": 'Sunny in Paris, "warm" \u00e9t\u00e9 \U0001f31e.'}
    request = server.requests[0]
    assert "tools" not in request
    schema = request["response_format"]["json_schema"]["schema"]
    call_schema = schema["anyOf"][1]
    assert call_schema["properties"]["name"] == {"const": "get_weather"}
    assert call_schema["properties"]["arguments"]["anyOf"][0]["properties"]["unit"]["enum"] == \
        ["celsius", "fahrenheit"]
    system = request["messages"][0]["content"]
    assert system.startswith("Be brief.") and "- get_weather: The weather in a city." in system


def test_the_answer_is_the_same_split_at_every_character() -> None:
    answer = 'Line one\nsaid "hi" \\ caf\u00e9 \U0001f31e'
    reply = json.dumps({"answer": answer})
    for cut in range(1, len(reply)):
        parser = ConstrainedReplyParser()
        shown = parser.feed(reply[:cut]) + parser.feed(reply[cut:]) + parser.finish()
        assert shown == answer, cut
        assert parser.calls == []


def calls_in(reply: str) -> list[tuple[str | None, Any]]:
    """The calls the parser reads in a reply fed in two pieces."""
    parser = ConstrainedReplyParser()
    assert parser.feed(reply[:20]) == "" and parser.feed(reply[20:]) == ""
    assert parser.finish() == ""
    return [(c.name, c.arguments) for c in parser.calls]


def test_calls_are_read_at_the_end_and_broken_ones_are_reported() -> None:
    assert calls_in('{"name": "a", "arguments": {"x": 1}}') == [("a", {"x": 1})]
    # one tool several times: one call per object, repeats dropped
    assert calls_in('{"name": "a", "arguments": [{"x": 1}, {"x": 2}, {"x": 1}]}') == [
        ("a", {"x": 1}), ("a", {"x": 2})]
    # the earlier shape and a bare list are still read (a server that ignores the schema)
    assert calls_in('{"tool_calls": [{"name": "a", "arguments": {"x": 1}}, '
                    '{"name": "b", "arguments": {}}]}') == [("a", {"x": 1}), ("b", {})]
    assert calls_in('[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]') == [
        ("a", {}), ("b", {})]
    broken = ConstrainedReplyParser()
    broken.feed('{"name": "a", "arguments": ')
    broken.finish()
    assert broken.calls and broken.calls[0].error


def test_the_tool_name_is_the_first_decision_and_picks_its_arguments() -> None:
    # A multiple-choice request (several tools, one to pick): each tool is one branch
    # whose name comes first, so arguments written after it follow that tool's schema.
    @tool("area", "Area of a circle.", {"type": "object", "properties": {
        "radius": {"type": "number"}}, "required": ["radius"]})
    def area(args: dict[str, Any]) -> str:
        return ""

    tools = [weather_tool([]), area]
    schema = constrained_calls.reply_schema(tools)
    answer, *calls = schema["anyOf"]
    assert answer["required"] == ["answer"]
    assert [c["properties"]["name"]["const"] for c in calls] == ["get_weather", "area"]
    for branch, offered in zip(calls, tools, strict=True):
        assert list(branch["properties"]) == ["name", "arguments"] == branch["required"]
        once, several = branch["properties"]["arguments"]["anyOf"]
        assert list(once["properties"]) == list(offered.input_schema["properties"])
        assert several == {"type": "array", "minItems": 2,
                           "maxItems": constrained_calls.MAX_CALLS, "items": once}
    assert constrained_calls.reply_schema(tools, calls_only=True) == {"anyOf": calls}
    words = constrained_calls.instructions(tools)
    assert '{"name": ..., "arguments": {...}}' in words and '"answer"' in words
    assert "tool_calls" not in words


def test_the_list_example_shows_a_made_up_tool_never_one_offered() -> None:
    """A small model copies the example: it must not be a call it could make."""
    words = constrained_calls.instructions([weather_tool([])])
    example = next(line for line in words.splitlines() if line.startswith("For example"))
    assert "get_weather" not in example and '"arguments": [' in example

    @tool("define_word", "What a word means.", {"type": "object", "properties": {
        "word": {"type": "string"}}, "required": ["word"]})
    def define_word(args: dict[str, Any]) -> str:
        return "a meaning"

    words = constrained_calls.instructions([define_word])
    example = next(line for line in words.splitlines() if line.startswith("For example"))
    assert "define_word" not in example and '"arguments": [' in example


def test_a_reply_that_is_not_json_is_plain_text() -> None:
    parser = ConstrainedReplyParser()
    shown = parser.feed("Just words") + parser.finish()
    assert shown == "Just words" and parser.calls == []


async def test_a_server_that_refuses_the_field_is_asked_as_usual(server: Any,
                                                                 make_options: Any) -> None:
    server.enqueue(script.error(400, "response_format is not supported"),
                   script.text("Fine."), script.text("Again."))
    options = make_options(tools=[weather_tool([])], constrained_tool_calls=True)
    async with Client(options) as client:
        assert text_of(await turn(client, "hi")) == "Fine."
        assert text_of(await turn(client, "again")) == "Again."
    refused, asked, remembered = server.requests
    assert "response_format" in refused
    assert "response_format" not in asked and "tools" in asked
    assert "response_format" not in remembered
