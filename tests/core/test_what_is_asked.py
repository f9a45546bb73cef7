"""A request that shares a tool's words but asks for what the tool does not give gets an answer.

Over real HTTP (the scripted server plays a grammar server): which tools the first
constrained reply may call, for requests whose wording says what they ask for —
advice, the first of a ranking, a person, another quantity (``core/tooling/
request_kinds.py``, ``tool_match.named``). Each pair of prompts shares the same
words with the tool; only what is asked differs.
"""

from __future__ import annotations

from typing import Any

import pytest
from constrained_replies import branches

from desktop_agent import Client, tool
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _forget_modes() -> Any:
    yield
    tool_call_mode.forget()


def a_tool(name: str, description: str, **arguments: str) -> Any:
    properties = {key: {"type": "string", "description": text}
                  for key, text in arguments.items()}

    @tool(name, description, {"type": "object", "properties": properties,
                              "required": list(properties)})
    def run(args: dict[str, Any]) -> str:
        raise AssertionError(f"{name} ran: {args}")

    return run


async def offered(server: Any, make_options: Any, tools: list[Any],
                  prompts: list[str]) -> list[list[str]]:
    """What each prompt, asked in a conversation of its own, lets the first reply do."""
    server.enqueue(*(script.text('{"answer": "ok"}') for _ in prompts))
    for prompt in prompts:
        async with Client(make_options(tools=tools, constrained_tool_calls=True)) as client:
            await client.query(prompt)
            _ = [item async for item in client.receive_messages()]
    return [branches(request) for request in server.requests]


async def test_how_the_person_could_do_something_is_advice(server: Any,
                                                           make_options: Any) -> None:
    tuner = a_tool("tune_instrument", "Tune an instrument such as an acoustic guitar.",
                   key="The key to tune to.")
    advice, details, how_to = await offered(server, make_options, [tuner], [
        "How can I sell my acoustic guitar?",
        "How can I tune my acoustic guitar? It is in the key of D.",
        "How to tune an acoustic guitar to D?"])
    # the guitar is the tool's, selling it is not: the person gets an answer
    assert advice == ["answer"]
    # a method asked with the values for the work, and "how to X", ask for X done
    assert details == how_to == ["answer", "tune_instrument"]


async def test_the_first_of_a_ranking_needs_a_tool_that_ranks(server: Any,
                                                              make_options: Any) -> None:
    movies = a_tool("movies_search", "Search movies by title, year or genre.",
                    title="The movie's title.")
    scorer = a_tool("top_scorer", "Retrieve the player with most goals in a league.",
                    league="The football league.")
    highest, most_goals, one_title, find_best = await offered(
        server, make_options, [movies, scorer],
        ["What is the highest grossing movie of all time?",
         "Who has the most goals in the Premier League?",
         "What year is the movie Alien from?",
         "Find the best movies of 1979."])
    assert highest == ["answer"]  # a search by title does not rank box offices
    assert most_goals == ["answer", "top_scorer"]  # the tool says that rank itself
    assert one_title == ["answer", "movies_search"]
    # an instruction asks the tool to search with the rank in mind
    assert find_best == ["answer", "movies_search"]


async def test_a_person_is_asked_of_no_calculation(server: Any, make_options: Any) -> None:
    current = a_tool("calculate_electric_current",
                     "Calculate the electric current from voltage and resistance.",
                     voltage="Volts.")
    discoverer = a_tool("get_discoverer", "Retrieve who discovered an element.",
                        element="The element.")
    who_electricity, who_radium, how_much = await offered(
        server, make_options, [current, discoverer],
        ["Who discovered electricity?", "Who discovered radium?",
         "What is the electric current at 12 volts across 4 ohms?"])
    assert who_electricity == ["answer", "get_discoverer"]
    assert who_radium == ["answer", "get_discoverer"]
    assert how_much == ["answer", "calculate_electric_current"]


async def test_a_calculator_is_named_by_the_quantity_it_works_out(
        server: Any, make_options: Any) -> None:
    bmi = a_tool("determine_body_mass_index",
                 "Calculate body mass index given weight and height.",
                 weight="Weight in kilograms.", height="Height in meters.")
    area, needed, index, result = await offered(server, make_options, [bmi], [
        "Calculate the area of a triangle whose base is 10 and height is 5.",
        "What is the area needed for a weight of 70 and a height of 1.75?",
        "Calculate the body mass index of a person of 70 kg and height 1.75 m.",
        "Calculate the result of a weight of 70 and a height of 1.75."])
    # the height is the tool's input, the area is not what it works out
    assert area == needed == ["answer"]
    assert index == ["answer", "determine_body_mass_index"]
    assert result == ["answer", "determine_body_mass_index"]  # "result" says no quantity


async def test_ordinal_endings_and_prepositions_are_not_words_of_a_job(
        server: Any, make_options: Any) -> None:
    artists = a_tool("get_museum_artists", "List the artists a museum holds.",
                     period="A period, e.g. the 18th century.")
    exchange = a_tool("convert_currency", "Convert an amount between two currencies.",
                      amount="The amount.")
    dancers, poem, century = await offered(server, make_options, [artists, exchange], [
        "Which dancers were famous in the 19th century?",
        "Write a poem about the space between the stars.",
        "Which artists of the 18th century does the museum hold?"])
    # "century" alone is one word of a description, "19th" and "18th" no shared "th"
    assert dancers == ["answer"]
    assert poem == ["answer"]  # "between" says how, not what
    assert century == ["answer", "get_museum_artists"]
