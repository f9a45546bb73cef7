"""The word rules of :mod:`.tool_match` on requests as people write them.

Each rule is shown with a request it holds to an answer and a neighbour that
still names the tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.tooling import tool_match


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


def test_a_request_in_a_spaced_alphabet_is_judged_by_its_words() -> None:
    assert names("Какая погода в Москве?", [weather()]) == []
    assert names("Покажи current weather в Москве", [weather()]) == ["get_current_weather"]


def test_a_request_in_an_unspaced_script_still_names_every_tool() -> None:
    assert names("北京的天气怎么样？", [weather()]) == ["get_current_weather"]
    assert names("최근 뉴스를 찾아줘", [weather()]) == ["get_current_weather"]


def test_a_request_without_a_letter_names_no_tool() -> None:
    assert names("9:45", [weather()]) == []
    assert names("", [weather()]) == []
    assert names("weather at 9:45", [weather()]) == ["get_current_weather"]
