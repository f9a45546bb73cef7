"""A string argument held to the shape its description names ('City, State', 'YYYY-MM-DD').

The unit tests read descriptions as BFCL's tool authors write them; the scripted
server shows the pattern in the request's schema; the real llama.cpp server (the
e2e tier's, shared by the session) shows that it accepts the patterns and that
SmolLM2 then writes the place in two parts where it wrote "London" before.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from desktop_agent import AgentOptions, Client, ToolUseBlock, tool
from desktop_agent.core.tooling import constrained_calls, tool_call_mode
from desktop_agent.core.tooling.value_shapes import CLOCK, PLACE, shape
from desktop_agent.core.wire.retry import RetryPolicy
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(120)

DATE = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


@pytest.fixture(autouse=True)
def _forget_modes() -> Any:
    yield
    tool_call_mode.forget()


def string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


@pytest.mark.parametrize(("description", "wanted"), [
    ("The city, in the format of 'City, State', such as 'Berkeley, CA' or 'New York, NY'.",
     PLACE),
    ("The location, in the format of 'City, State' or 'City, Country'; e.g., "
     "'New York, NY' or 'London, UK'.", PLACE),
    ("The location, in the format of 'City, State (abbr)', such as 'San Francisco, CA'.",
     PLACE),
    ("The check-in date for the reservation, in the format 'YYYY-MM-DD'.", DATE),
    ("The tentative date in ISO format (YYYY-MM-DD). Defaults to today's date.", DATE),
    ("The date of the event, formatted as 'MM/DD/YYYY'.", "^[0-9]{2}/[0-9]{2}/[0-9]{4}$"),
    ("The start time of the movie showing, in 24-hour format 'HH:MM'.", CLOCK),
    ("The time for the reservation in 24-hour format (e.g., '18:30' for 6:30 PM).", CLOCK),
    ("The start, in the format 'YYYY-MM-DD HH:mm:ss'.",
     "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$"),
    # UTC's Z is left out as often as written
    ("Start of the timespan, in the ISO 8601 format 'YYYY-MM-DDTHH:MM:SSZ'.",
     "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z?$"),
])
def test_a_shape_the_description_names_becomes_a_pattern(description: str,
                                                         wanted: str) -> None:
    assert shape(string(description)) == wanted


@pytest.mark.parametrize("description", [
    "The name of the city for which weather information is requested.",
    # another shape allowed beside the named one
    "The city, formatted as 'City, State' or 'City' if the city does not have a state. "
    "For example, 'New York, NY' or 'Paris'.",
    # a word the tool takes in place of a value
    "The date of the event in the format 'YYYY-MM-DD'. If 'dontcare' is specified, any "
    "date will be considered.",
    "The start in the format 'YYYY-MM-DD HH:mm:ss', or 'null' for immediate availability.",
    "The time for picking up the car in the format 'HH:MM AM/PM'.",
    "The date range for the news search, formatted as 'YYYY-MM-DD to YYYY-MM-DD'.",
    "The address for the cab, formatted as 'Street, City, State'.",
    # two shapes named: no one of them is the shape
    "The date, in the format 'YYYY-MM-DD' or 'MM/DD/YYYY'.",
    # 24 hours as a duration, not the clock
    "The period to search, such as the last 24 hours or the last week.",
    # the value is a format itself, named as the default
    "The format in which the time is to be displayed, optional (defaults to 'HH:MM:SS').",
    "Optional format of the returned date. Default is 'MM-DD-YYYY'.",
])
def test_no_pattern_where_the_description_allows_more_than_one_shape(
        description: str) -> None:
    assert shape(string(description)) is None


def test_a_schema_that_says_its_own_form_or_default_is_left_alone() -> None:
    named = "The date, in the format 'YYYY-MM-DD'."
    assert shape(string(named, enum=["2024-01-01"])) is None
    assert shape(string(named, pattern="^x$")) is None
    assert shape(string(named, format="date")) is None
    assert shape(string(named, default="today")) is None  # the tool takes more
    assert shape(string(named, default="2024-01-01")) == DATE
    assert shape({"type": "integer", "description": named}) is None


def test_the_patterns_hold_the_examples_and_refuse_the_other_shapes() -> None:
    place = re.compile(PLACE)
    assert place.fullmatch("London, UK") and place.fullmatch("São Paulo, Brazil")
    assert not place.fullmatch("London")
    assert not place.fullmatch('Lon"don, UK')  # a quote would close the JSON string
    assert not place.fullmatch("A" * 61 + ", UK")  # the pattern bounds its own runs
    assert re.fullmatch(CLOCK, "18:30") and not re.fullmatch(CLOCK, "6:30 PM")


def test_tightened_puts_the_pattern_in_place_of_the_length_cap() -> None:
    schema = {"type": "object", "properties": {
        "city": string("The city, in the format 'City, Country'."),
        "note": string("Anything."),
        "stops": {"type": "array", "items": string("A date, in the format 'YYYY-MM-DD'.")}}}
    out = constrained_calls.tightened(schema, 256)["properties"]
    assert out["city"]["pattern"] == PLACE and "maxLength" not in out["city"]
    assert out["note"]["maxLength"] == 256 and "pattern" not in out["note"]
    assert out["stops"]["items"]["pattern"] == DATE
    assert "pattern" not in schema["properties"]["city"]  # the tool's schema is not changed


def weather_tool(ran: list[dict[str, Any]]) -> Any:
    @tool("get_weather", "Get the current weather in a location.",
          {"type": "object", "properties": {"location": string(
              "The location, in the format of 'City, State' or 'City, Country', such as "
              "'San Francisco, CA' or 'London, UK'.")}, "required": ["location"]})
    def run(args: dict[str, Any]) -> str:
        ran.append(dict(args))
        return "Sunny"

    return run


async def test_the_request_holds_the_argument_to_the_shape(server: Any,
                                                          make_options: Any) -> None:
    call = json.dumps({"name": "get_weather", "arguments": {"location": "London, UK"}})
    server.enqueue(script.text(call), script.text('{"answer": "Sunny in London."}'))
    ran: list[dict[str, Any]] = []
    options = make_options(tools=[weather_tool(ran)], auto_execute_tools=True,
                           constrained_tool_calls=True)
    async with Client(options) as client:
        await client.query("What is the weather in London?")
        _ = [item async for item in client.receive_messages()]
    assert ran == [{"location": "London, UK"}]
    branch = server.requests[0]["response_format"]["json_schema"]["schema"]["anyOf"][1]
    once, several = branch["properties"]["arguments"]["anyOf"]
    assert once["properties"]["location"]["pattern"] == PLACE
    assert several["items"]["properties"]["location"]["pattern"] == PLACE


async def test_llama_cpp_holds_smollm2_to_the_place_shape(llama_server: Any) -> None:
    # Without the pattern SmolLM2-135M wrote location "London" here; llama.cpp turns
    # the pattern into its grammar (a pattern it cannot read it would let through).
    ran: list[dict[str, Any]] = []
    options = AgentOptions(model=llama_server.model, base_url=llama_server.base_url,
                           tools=[weather_tool(ran)], temperature=0.0, max_tokens=64,
                           timeout=llama_server.scaled_timeout(60.0),
                           retry=RetryPolicy(max_retries=0), max_turns=1,
                           constrained_tool_calls=True, extra_body={"cache_prompt": False})
    async with Client(options) as client:
        await client.query("What is the weather in London?")
        items = [item async for item in client.receive_messages()]
    calls = [item.input for item in items if isinstance(item, ToolUseBlock)]
    assert calls, items
    assert re.fullmatch(PLACE, calls[0]["location"]), calls
