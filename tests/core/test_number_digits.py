"""A constrained call's integers have no more digits than the person could have meant.

Over real HTTP (the scripted server plays a grammar server): the request's schema
bounds integer arguments by the longest number written, never below a floor, and
leaves alone the bounds a tool's schema sets itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop_agent import Client, tool
from desktop_agent.core.tooling import constrained_calls, tool_call_mode
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _forget_modes() -> Any:
    yield
    tool_call_mode.forget()


def air_conditioner(ran: list[dict[str, Any]]) -> Any:
    @tool("start_air_conditioner", "Start the air conditioner after a delay.",
          {"type": "object", "properties": {
              "target_temperature": {"type": "integer", "minimum": 16, "maximum": 30},
              "relative_minute_to_start": {"type": "integer"},
              "relative_hour_to_start": {"type": "integer", "minimum": 0},
              "mode": {"type": "string", "enum": ["COOL", "HEAT"]},
              "rooms": {"type": "array", "items": {"type": "integer"}}},
           "required": ["relative_minute_to_start"]})
    def run(args: dict[str, Any]) -> str:
        ran.append(dict(args))
        return "started"

    return run


def arguments_schema(request: dict[str, Any]) -> dict[str, Any]:
    """The schema the grammar holds the call's single argument object to."""
    branch = request["response_format"]["json_schema"]["schema"]["anyOf"][1]
    once, _several = branch["properties"]["arguments"]["anyOf"]
    return once  # type: ignore[no-any-return]


async def test_integers_have_no_more_digits_than_the_longest_number_written(
        server: Any, make_options: Any) -> None:
    # SmolLM2-135M asked to start "in 1 hour and 30 minutes" wrote
    # relative_minute_to_start: 1000000000000000, which took the tokens of the rest.
    call = json.dumps({"name": "start_air_conditioner",
                       "arguments": {"relative_minute_to_start": 90}})
    server.enqueue(script.text(call), script.text('{"answer": "It starts in 90 minutes."}'))
    ran: list[dict[str, Any]] = []
    options = make_options(tools=[air_conditioner(ran)], auto_execute_tools=True,
                           constrained_tool_calls=True)
    async with Client(options) as client:
        await client.query("Start the air conditioner in 90 minutes.")
        _ = [item async for item in client.receive_messages()]
    assert ran == [{"relative_minute_to_start": 90}]
    properties = arguments_schema(server.requests[0])["properties"]
    floor = 10 ** constrained_calls.DIGIT_FLOOR - 1
    minutes = properties["relative_minute_to_start"]
    assert (minutes["minimum"], minutes["maximum"]) == (-floor, floor)
    assert properties["rooms"]["items"]["maximum"] == floor  # integers inside lists too
    # the tool's own bounds stand; a bound on one side only gets the other one
    assert (properties["target_temperature"]["minimum"],
            properties["target_temperature"]["maximum"]) == (16, 30)
    assert (properties["relative_hour_to_start"]["minimum"],
            properties["relative_hour_to_start"]["maximum"]) == (0, floor)
    assert "minimum" not in properties["mode"]  # a choice is not a number


def test_a_longer_number_written_allows_that_many_digits() -> None:
    assert constrained_calls.digit_cap("Book flight 12") == constrained_calls.DIGIT_FLOOR
    # thousands separators are not digits; a long id is written whole
    assert constrained_calls.digit_cap("Send 20,000,000 to account 004412345678") == 10
    assert constrained_calls.digit_cap("Wire 12,500,000,000 dollars") == 11
    schema = constrained_calls.reply_schema([air_conditioner([])], digits=11)
    minutes = schema["anyOf"][1]["properties"]["arguments"]["anyOf"][0]["properties"][
        "relative_minute_to_start"]
    assert minutes["maximum"] == 10 ** 11 - 1
    # without a cap (the tool-call probe, older callers) integers are left to the server
    plain = constrained_calls.reply_schema([air_conditioner([])])
    assert "maximum" not in plain["anyOf"][1]["properties"]["arguments"]["anyOf"][0][
        "properties"]["relative_minute_to_start"]
