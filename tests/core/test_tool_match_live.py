"""The word rules of :mod:`.tool_match` on requests as people write them.

Each rule is shown with a request it holds to an answer and a neighbour that
still names the tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.tooling import request_kinds, tool_match


@dataclass
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)


def weather() -> Tool:
    return Tool("get_current_weather", "Get the current weather in a given location",
                {"type": "object", "properties": {
                    "location": {"type": "string", "description": "The city and state"}}})


def names(request: str, tools: list[Tool]) -> list[str]:
    return [t.name for t in tool_match.offered([{"role": "user", "content": request}], tools)]


def test_a_request_in_another_script_still_names_every_tool() -> None:
    # Its words cannot be compared with English tools' ones: the model decides.
    assert names("Какая погода в Москве?", [weather()]) == ["get_current_weather"]
    assert names("北京的天气怎么样？", [weather()]) == ["get_current_weather"]
    shell = Tool("bash", "Run a shell command.", {"type": "object", "properties": {
        "command": {"type": "string"}}, "required": ["command"]})
    assert names("запусти тесты", [shell]) == ["bash"]  # "run the tests"


def test_a_remark_is_the_task_of_a_tool_that_runs_what_it_is_given() -> None:
    shell = Tool("bash", "Run a shell command.", {"type": "object", "properties": {
        "command": {"type": "string"}}, "required": ["command"]})
    assert names("The build is broken.", [shell]) == ["bash"]
    assert names("The build is broken.", [weather()]) == []
    assert names("hello", [shell]) == []
    assert names("최근 뉴스를 찾아줘", [weather()]) == ["get_current_weather"]


def test_a_request_without_a_letter_names_no_tool() -> None:
    assert names("9:45", [weather()]) == []
    assert names("", [weather()]) == []
    assert names("weather at 9:45", [weather()]) == ["get_current_weather"]


def alert() -> Tool:
    return Tool("create_website_alert_config", "Create a website alert configuration",
                {"type": "object", "properties": {
                    "name": {"type": "string", "description": "Name of the alert"},
                    "days": {"type": "string", "description": "Day of the week, Tuesday..."}}})


def test_a_remark_names_a_tool_only_plainly() -> None:
    assert names("Today is Tuesday.", [alert()]) == []
    assert names("Boston has high temperature of 54C.", [weather()]) == []
    assert names("Boston has high temperature of 54C, what is the weather now?",
                 [weather()]) == ["get_current_weather"]  # the tool's name


def test_a_statement_of_a_want_still_instructs() -> None:
    assert names("I'm looking for a day that is free on Tuesday.", [alert()]) == \
        ["create_website_alert_config"]
    assert names("Find the city that is hot, temperature above 30.", [weather()]) == \
        ["get_current_weather"]


def test_a_lone_word_names_a_tool_only_by_its_name() -> None:
    rating = Tool("review_of_interviewer", "Get the average ratings of an interviewer",
                  {"type": "object", "properties": {"name": {"type": "string"}}})
    assert names("ratings", [rating]) == []
    assert names("interviewer ratings", [rating]) == ["review_of_interviewer"]
    assert names("weather", [weather()]) == ["get_current_weather"]


def test_request_kinds_remarks() -> None:
    assert request_kinds.remarks("The user did not provide a query")
    assert request_kinds.remarks("It's cold. Today is Tuesday.")
    assert not request_kinds.remarks("Get the NBA team's ranking with the best defence.")
    assert not request_kinds.remarks("I have to make a payment")
    assert not request_kinds.remarks("Delete the release RL50")


def test_if_adds_a_condition_and_names_no_tool() -> None:
    dated = Tool("get_current_weather", "Get the current weather in a given location",
                 {"type": "object", "properties": {
                     "date": {"type": "string",
                              "description": "The day, today if not given"}}})
    assert names("Send Mom an email saying we go out if Friday is okay.", [dated]) == []
    assert names("Tell me if the weather is fine on Friday.", [dated]) == \
        ["get_current_weather"]


def test_a_sentence_about_the_person_is_a_remark_unless_it_wants() -> None:
    assert request_kinds.remarks("I love my maroon clothing")
    assert request_kinds.remarks("i hate you")
    assert not request_kinds.remarks("I need a therapist.")
    assert not request_kinds.remarks("We should deploy the weather service.")
    shop = Tool("ProductSearch_execute", "Search products by color and category",
                {"type": "object", "properties": {
                    "category": {"type": "string", "description": "e.g. clothing"}}})
    assert names("I love my maroon clothing", [shop]) == []
    assert names("I need maroon clothing", [shop]) == ["ProductSearch_execute"]


def web_search() -> Tool:
    return Tool("search_web_tool", "Searches the web with a query and returns results",
                {"type": "object", "properties": {"query": {"type": "string"}}})


def test_a_search_tool_is_named_by_a_search_not_by_any_instruction() -> None:
    assert names("Book me a ticket from NYC to New Delhi", [web_search()]) == []
    assert names("Search flight prices from NYC to New Delhi", [web_search()]) == \
        ["search_web_tool"]
    assert names("I'm looking for flights from NYC to New Delhi", [web_search()]) == \
        ["search_web_tool"]


def test_a_tool_that_does_what_its_query_names_still_takes_any_instruction() -> None:
    play = Tool("play_song", "Plays the song a query names",
                {"type": "object", "properties": {"query": {"type": "string"}}})
    assert names("Put on Baby Shark", [play]) == ["play_song"]
