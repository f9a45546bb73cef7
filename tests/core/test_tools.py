import asyncio
import threading
import time
from typing import Any

import pytest

from desktop_agent import ConfigurationError, Tool, ToolInputError, tool


def test_seed_schema_output():
    @tool("get_weather", "Get current weather", {"location": str, "units": str})
    async def get_weather(args):
        return {"temp": 20}

    assert get_weather.to_openai_format() == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get current weather",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}, "units": {"type": "string"}},
                "required": ["location", "units"],
            },
        },
    }


def test_simple_types_map_to_json_types():
    @tool("t", "d", {"s": str, "i": int, "f": float, "b": bool, "l": list, "d": dict})
    def t(args):
        return None

    props = t.input_schema["properties"]
    assert [props[k]["type"] for k in "sifbld"] == [
        "string", "integer", "number", "boolean", "array", "object"]


def test_optional_parameters_three_ways():
    @tool("search", "Search", {
        "query": str,
        "limit": {"type": "integer", "default": 10},
        "lang": {"type": "string", "required": False},
        "site": {"type": "string", "optional": True},
    })
    def search(args):
        return args

    schema = search.input_schema
    assert schema["required"] == ["query"]
    assert "required" not in schema["properties"]["lang"]
    assert "optional" not in schema["properties"]["site"]
    assert schema["properties"]["limit"]["default"] == 10


def test_full_json_schema_passes_through_unchanged():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
              "required": ["n"], "additionalProperties": False}

    @tool("count", "Count", schema)
    def count(args):
        return args["n"]

    assert count.to_openai_format()["function"]["parameters"] == schema


def test_schema_from_type_hints_and_docstring():
    @tool
    def convert(amount: float, currency: str = "EUR", round_to: int | None = None) -> str:
        """Convert money between currencies.

        Args:
            amount: How much money.
            currency: Target currency code.
            round_to: Decimal places.
        """
        return f"{amount} {currency}"

    fmt = convert.to_openai_format()["function"]
    assert fmt["name"] == "convert"
    assert fmt["description"] == "Convert money between currencies."
    params = fmt["parameters"]
    assert params["required"] == ["amount"]
    assert params["properties"]["amount"] == {"type": "number", "description": "How much money."}
    assert params["properties"]["currency"]["default"] == "EUR"
    assert asyncio.run(convert.execute({"amount": 3})) == "3 EUR"


async def test_invalid_arguments_raise_tool_input_error():
    @tool("add", "Add", {"a": int, "b": int})
    def add(args):
        return args["a"] + args["b"]

    with pytest.raises(ToolInputError, match="'x' is not of type 'integer'"):
        await add.execute({"a": "x", "b": 1})
    with pytest.raises(ToolInputError, match="'b' is a required property"):
        await add.execute({"a": 1})
    assert await add.execute({"a": 2, "b": 3}) == 5


async def test_sync_handler_runs_off_the_event_loop():
    loop_thread = threading.get_ident()
    seen = {}

    @tool("slow", "Slow", {})
    def slow(args):
        seen["thread"] = threading.get_ident()
        time.sleep(0.2)
        return "done"

    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    assert await slow.execute({}) == "done"
    task.cancel()
    assert seen["thread"] != loop_thread
    assert ticks >= 5, "the loop kept running while the sync tool worked"


def test_invalid_names_and_schemas_are_rejected():
    with pytest.raises(ConfigurationError):
        Tool("bad name", "d", {}, lambda a: a)
    with pytest.raises(ConfigurationError):
        Tool("ok", "d", {"type": "object", "properties": {"x": {"type": "nonsense"}}},
             lambda a: a)


def test_keyword_handlers_are_detected():
    @tool("weather", "W", {"city": str})
    def weather(city):
        return city

    assert asyncio.run(weather.execute({"city": "Oslo"})) == "Oslo"


def test_a_schema_derived_again_is_a_fresh_copy_and_follows_the_defaults():
    """Tools made per turn from the same code reuse the derived schema, but each gets
    its own copy (a built-in tool edits its schema in place), and closures whose
    defaults differ keep different schemas."""

    def make(limit: int) -> Any:
        def search(query: str, max_results: int = limit) -> str:
            """Search.

            Args:
                query: What to look for.
            """
            return query

        return search

    first = tool()(make(10))
    first.input_schema["properties"]["query"]["description"] = "edited by the caller"
    second = tool()(make(10))
    assert second.input_schema["properties"]["query"]["description"] == "What to look for."
    assert second.input_schema["properties"]["max_results"]["default"] == 10
    assert tool()(make(25)).input_schema["properties"]["max_results"]["default"] == 25


async def test_a_tool_built_but_never_called_still_validates_when_it_is():
    made = tool("pick", "Pick one", {"n": int})(lambda args: args["n"])
    assert await made.execute({"n": 3}) == 3
    with pytest.raises(ToolInputError, match="n"):
        await made.execute({"n": "three"})
