"""A constrained list of calls over real HTTP: the calls asked for run, run-on ones do not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop_agent import Client, ToolUseBlock, tool
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.wire.call_lists import Said, invents_needed
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _forget_modes() -> Any:
    yield
    tool_call_mode.forget()


def recording_tool(name: str, properties: dict[str, Any], ran: list[dict[str, Any]]) -> Any:
    @tool(name, f"The {name} tool.", {"type": "object", "properties": properties,
                                      "required": list(properties)})
    def run(args: dict[str, Any]) -> str:
        ran.append(dict(args))
        return "done"

    return run


async def calls_made(server: Any, make_options: Any, prompt: str, name: str,
                     properties: dict[str, Any], arguments: list[dict[str, Any]]) -> Any:
    """Ask ``prompt``, the model replying with one list call; the tools that ran and the request."""
    ran: list[dict[str, Any]] = []
    server.enqueue(script.text(json.dumps({"name": name, "arguments": arguments}), pieces=5),
                   script.text('{"answer": "Done."}'))
    options = make_options(tools=[recording_tool(name, properties, ran)], auto_execute_tools=True,
                           constrained_tool_calls=True)
    async with Client(options) as client:
        await client.query(prompt)
        used = [b.input async for b in client.receive_messages()
                if isinstance(b, ToolUseBlock)]
    assert used == ran
    return ran, server.requests[0]


async def test_the_request_shows_a_list_call_by_example(server: Any, make_options: Any) -> None:
    # Told only the shapes, SmolLM2-135M almost never opened the list when two
    # things were asked; an example of one is in the system prompt.
    _, request = await calls_made(server, make_options, "Weather in Paris?", "get_weather",
                                  {"city": {"type": "string"}}, [{"city": "Paris"}])
    system = request["messages"][0]
    assert system["role"] == "system"
    assert '"arguments": [{"word": "ferret"}, {"word": "lynx"}]' in system["content"]


async def test_the_things_asked_for_each_get_a_call(server: Any, make_options: Any) -> None:
    weather = {"city": {"type": "string"}, "unit": {"type": "string"}}
    ran, _ = await calls_made(
        server, make_options, "Weather in Paris and in New York, in celsius?", "get_weather",
        weather, [{"city": "Paris", "unit": "celsius"}, {"city": "new york", "unit": "celsius"},
                  {"city": "Paris", "unit": "celsius"}, {"city": "Berlin", "unit": "celsius"}])
    # a repeat and a city nobody asked about are the model running on to the cap
    assert ran == [{"city": "Paris", "unit": "celsius"}, {"city": "new york", "unit": "celsius"}]


async def test_places_named_get_their_calls_with_the_region_the_tool_asks_for(
        server: Any, make_options: Any) -> None:
    # A tool asking for 'City, State' holds SmolLM2 to that shape: the states are its
    # own, the cities the person's; a city nobody named is still a run-on.
    ran, _ = await calls_made(
        server, make_options, "What's the weather in Boston and in San Francisco?",
        "get_weather", {"location": {"type": "string"}},
        [{"location": "Boston, MA"}, {"location": "San Francisco, CA"},
         {"location": "Chicago, IL"}, {"location": "San Francisco, ca lol"}])
    assert ran == [{"location": "Boston, MA"}, {"location": "San Francisco, CA"}]


async def test_numbers_are_found_however_the_person_wrote_them(server: Any,
                                                               make_options: Any) -> None:
    loan = {"amount": {"type": "number"}, "rate": {"type": "number"},
            "years": {"type": "integer"}}
    asked = [{"amount": 400000, "rate": 0.04, "years": 15},
             {"amount": 400000, "rate": 0.04, "years": 30}]
    ran, _ = await calls_made(server, make_options,
                              "Payments on $400,000 at 4% over 15 and 30 years?", "mortgage",
                              loan, [*asked, {"amount": 400000, "rate": 0.04, "years": 20}])
    assert ran == asked


async def test_the_same_values_in_another_order_are_not_a_new_call(server: Any,
                                                                   make_options: Any) -> None:
    sides = {"a": {"type": "integer"}, "b": {"type": "integer"}}
    ran, _ = await calls_made(server, make_options, "Hypotenuse for a = 3 and b = 4.",
                              "pythagoras", sides, [{"a": 3, "b": 4}, {"a": 4, "b": 3}])
    assert ran == [{"a": 3, "b": 4}]


async def test_a_first_call_is_kept_whatever_it_holds(server: Any, make_options: Any) -> None:
    # Only the continuation is judged: a single call with a value the person did not
    # write (a default the model filled in) still runs.
    ran, _ = await calls_made(server, make_options, "Factorial of five", "factorial",
                              {"number": {"type": "integer"}}, [{"number": 5}, {"number": 6}])
    assert ran == [{"number": 5}]


async def test_a_value_changed_only_in_case_needs_that_case_written(server: Any,
                                                                    make_options: Any) -> None:
    # SmolLM2 asked for the frequency of "AA" went on to "Aa": the person wrote only
    # "AA", so "Aa" is the model's run-on; written both ways, both are asked for.
    genotype = {"allele_frequency": {"type": "number"}, "genotype": {"type": "string"}}
    listed = [{"allele_frequency": 0.3, "genotype": "AA"},
              {"allele_frequency": 0.3, "genotype": "Aa"}]
    ran, _ = await calls_made(server, make_options, "Frequency of the AA genotype if A is 0.3?",
                              "genotype_frequency", genotype, listed)
    assert ran == listed[:1]


async def test_both_cases_written_are_both_asked_for(server: Any, make_options: Any) -> None:
    genotype = {"allele_frequency": {"type": "number"}, "genotype": {"type": "string"}}
    listed = [{"allele_frequency": 0.7, "genotype": "AA"},
              {"allele_frequency": 0.7, "genotype": "Aa"},
              {"allele_frequency": 0.7, "genotype": "aa"}]
    ran, _ = await calls_made(server, make_options,
                              "Frequencies of the genotypes AA, Aa and aa if A is 0.7?",
                              "genotype_frequency", genotype, listed)
    assert ran == listed


ENTROPY = {"initial_temp": {"type": "integer"}, "final_temp": {"type": "integer"},
           "isothermal": {"type": "boolean"}}


async def test_a_flag_flipped_that_nobody_named_is_a_run_on(server: Any,
                                                            make_options: Any) -> None:
    listed = [{"initial_temp": 300, "final_temp": 400, "isothermal": True},
              {"initial_temp": 300, "final_temp": 400, "isothermal": False}]
    ran, _ = await calls_made(server, make_options, "Entropy change from 300K to 400K?",
                              "entropy_change", ENTROPY, listed)
    assert ran == listed[:1]


async def test_a_flag_the_person_named_may_be_asked_both_ways(server: Any,
                                                              make_options: Any) -> None:
    listed = [{"initial_temp": 300, "final_temp": 350, "isothermal": True},
              {"initial_temp": 300, "final_temp": 350, "isothermal": False}]
    ran, _ = await calls_made(
        server, make_options,
        "Entropy change from 300K to 350K, isothermal. And if it is not isothermal?",
        "entropy_change", ENTROPY, listed)
    assert ran == listed


ROUTE = {"start": {"type": "string"}, "end": {"type": "string"},
         "stops": {"type": "array", "items": {"type": "string"}}}


async def test_a_call_that_only_moves_the_first_calls_values_is_a_run_on(
        server: Any, make_options: Any) -> None:
    listed = [{"start": "San Francisco", "end": "Los Angeles",
               "stops": ["Santa Barbara", "Monterey"]},
              {"start": "Santa Barbara", "end": "Santa Barbara",
               "stops": ["Santa Barbara", "Monterey"]}]
    ran, _ = await calls_made(
        server, make_options,
        "Travel time from San Francisco to Los Angeles with stops at Santa Barbara and Monterey?",
        "route_time", ROUTE, listed)
    assert ran == listed[:1]


async def test_a_leg_that_goes_on_from_the_first_brings_a_new_place(server: Any,
                                                                    make_options: Any) -> None:
    listed = [{"start": "Paris", "end": "Lyon", "stops": []},
              {"start": "Lyon", "end": "Nice", "stops": []}]
    ran, _ = await calls_made(server, make_options,
                              "Travel times from Paris to Lyon, then from Lyon to Nice?",
                              "route_time", ROUTE, listed)
    assert ran == listed


async def test_a_request_that_lists_nothing_gets_one_call(server: Any,
                                                          make_options: Any) -> None:
    weight = {"weight_earth_kg": {"type": "number"}, "planet": {"type": "string"}}
    listed = [{"weight_earth_kg": 70, "planet": "Mars"},
              {"weight_earth_kg": 70, "planet": "Earth"}]
    ran, _ = await calls_made(server, make_options,
                              "How much will I weigh on Mars if my weight on Earth is 70 kg?",
                              "weight_in_space", weight, listed)
    assert ran == listed[:1]


@pytest.mark.parametrize("prompt", [
    "Return on $2000 with a gain of $500. Do the same for $5000 with a gain of $1000.",
    "Rendement de 2000 € avec 500 € de gain et de 5000 € avec 1000 € de gain ?",
])
async def test_a_request_that_lists_in_words_gets_each_call(server: Any, make_options: Any,
                                                            prompt: str) -> None:
    investment = {"initial": {"type": "number"}, "gain": {"type": "number"}}
    listed = [{"initial": 2000, "gain": 500}, {"initial": 5000, "gain": 1000}]
    ran, _ = await calls_made(server, make_options, prompt, "roi", investment, listed)
    assert ran == listed


async def test_optional_values_nobody_gave_are_left_out(server: Any, make_options: Any) -> None:
    # The tool's own default is what a person who did not mention them expects.
    ran: list[dict[str, Any]] = []

    @tool("circle_area", "The area of a circle.", {"type": "object", "properties": {
        "radius": {"type": "number"}, "unit": {"type": "string"},
        "rounded": {"type": "boolean"}, "digits": {"type": "integer"}},
        "required": ["radius"]})
    def circle_area(args: dict[str, Any]) -> str:
        ran.append(dict(args))
        return "78.5"

    server.enqueue(
        script.text(json.dumps({"name": "circle_area", "arguments": {
            "radius": 5, "unit": "cm", "rounded": False, "digits": 2}})),
        script.text('{"answer": "78.5"}'),
        script.text(json.dumps({"name": "circle_area", "arguments": {
            "radius": 5, "unit": "inches", "rounded": True, "digits": 3}})),
        script.text('{"answer": "78.540"}'))
    options = make_options(tools=[circle_area], auto_execute_tools=True,
                           constrained_tool_calls=True)
    async with Client(options) as client:
        for prompt in ("The area of a circle of radius 5 units?",
                       "The same in inches, rounded to three digits?"):
            await client.query(prompt)
            _ = [b async for b in client.receive_messages()]
    assert ran == [{"radius": 5}, {"radius": 5, "unit": "inches", "rounded": True, "digits": 3}]


async def test_a_value_found_only_inside_a_longer_word_was_not_given(
        server: Any, make_options: Any) -> None:
    # "CA" is in "California" only as letters: the county and city are the model's own.
    ran: list[dict[str, Any]] = []

    @tool("sales_tax", "Sales tax of a purchase.", {"type": "object", "properties": {
        "amount": {"type": "number"}, "state": {"type": "string"},
        "county": {"type": "string"}, "city": {"type": "string"}},
        "required": ["amount", "state"]})
    def sales_tax(args: dict[str, Any]) -> str:
        ran.append(dict(args))
        return "7.25 %"

    server.enqueue(script.text(json.dumps({"name": "sales_tax", "arguments": {
        "amount": 999, "state": "CA", "county": "CA", "city": "San Jose"}})),
        script.text('{"answer": "72.43"}'))
    options = make_options(tools=[sales_tax], auto_execute_tools=True,
                           constrained_tool_calls=True)
    async with Client(options) as client:
        await client.query("The sales tax on $999 in San Jose, California?")
        _ = [b async for b in client.receive_messages()]
    assert ran == [{"amount": 999, "state": "CA", "city": "San Jose"}]


async def test_a_choice_stays_when_the_person_named_it(server: Any, make_options: Any) -> None:
    ran: list[dict[str, Any]] = []

    @tool("find_venue", "Find venues.", {"type": "object", "properties": {
        "city": {"type": "string"},
        "free_entry": {"type": "string", "enum": ["True", "False", "dontcare"]},
        "good_for_kids": {"type": "string", "enum": ["True", "False", "dontcare"]}},
        "required": ["city"]})
    def find_venue(args: dict[str, Any]) -> str:
        ran.append(dict(args))
        return "found"

    server.enqueue(script.text(json.dumps({"name": "find_venue", "arguments": {
        "city": "London", "free_entry": "True", "good_for_kids": "True"}})),
        script.text('{"answer": "Found."}'))
    options = make_options(tools=[find_venue], auto_execute_tools=True,
                           constrained_tool_calls=True)
    async with Client(options) as client:
        await client.query("Find a venue in London with free entry.")
        _ = [b async for b in client.receive_messages()]
    assert ran == [{"city": "London", "free_entry": "True"}]  # kids were never mentioned


async def test_a_date_given_in_words_stays(server: Any, make_options: Any) -> None:
    ran: list[dict[str, Any]] = []

    @tool("forecast", "The weather forecast.", {"type": "object", "properties": {
        "city": {"type": "string"}, "date": {"type": "string"}}, "required": ["city"]})
    def forecast(args: dict[str, Any]) -> str:
        ran.append(dict(args))
        return "Rain"

    server.enqueue(script.text(json.dumps({"name": "forecast", "arguments": {
        "city": "London", "date": "2023-03-05"}})), script.text('{"answer": "Rain."}'),
        script.text(json.dumps({"name": "forecast", "arguments": {
            "city": "Paris", "date": "2023-03-06"}})), script.text('{"answer": "Sun."}'))
    options = make_options(tools=[forecast], auto_execute_tools=True,
                           constrained_tool_calls=True)
    async with Client(options) as client:
        for prompt in ("The forecast for London on the 5th of March 2023?",
                       "And the forecast for Paris?"):
            await client.query(prompt)
            _ = [b async for b in client.receive_messages()]
    # the 6th was never said in the conversation: that date is the model's own
    assert ran == [{"city": "London", "date": "2023-03-05"}, {"city": "Paris"}]


def _said(request: str, schema: dict[str, Any], name: str = "tool") -> Said:
    class Offered:
        def __init__(self) -> None:
            self.name = name
            self.input_schema = schema

    return Said([{"role": "user", "content": request}], [Offered()])


@pytest.mark.parametrize(("request_text", "arguments", "invented"), [
    ("I want to watch a movie.", {"title": "The Matrix"}, True),
    ("I want to watch a movie.", {"title": "play_movie"}, True),
    ("Play Ad Astra.", {"title": "Ad Astra"}, False),
    ("How many yen for 500 US dollars?", {"title": "USD"}, False),  # a code for a name
    ("Weather in LA?", {"title": "Los Angeles, CA"}, False),  # a name by its initials
    ("Book it for the 15th.", {"title": "2023-04-15"}, False),  # a date in the tool's form
    ("I want to watch a movie.", {"title": "dontcare"}, False),  # a word the tool offers
    ("我想看电影", {"title": "Hero"}, False),  # another script: a translation may be right
])
def test_a_needed_value_is_invented_only_when_nothing_said_gave_it(
        request_text: str, arguments: dict[str, Any], invented: bool) -> None:
    schema = {"type": "object", "required": ["title"], "properties": {"title": {
        "type": "string", "description": "The movie's title, or 'dontcare'."}}}
    assert invents_needed("play_movie", arguments, _said(request_text, schema,
                                                         "play_movie")) is invented


def test_optional_values_and_tools_that_make_things_are_not_judged() -> None:
    optional = {"type": "object", "properties": {"title": {"type": "string"}}}
    needed = {"type": "object", "required": ["title"],
              "properties": {"title": {"type": "string"}}}
    assert not invents_needed("play_movie", {"title": "The Matrix"},
                              _said("I want a movie.", optional, "play_movie"))
    assert not invents_needed("create_issue", {"title": "Crash on start"},
                              _said("File an issue about it.", needed, "create_issue"))
