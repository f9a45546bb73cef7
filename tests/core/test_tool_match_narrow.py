"""The first reply offers only the tools whose name holds a thing the request names.

:func:`.tool_match.by_thing`: the request that narrows, and neighbours that must not.
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


def _schema(**arguments: str) -> dict[str, Any]:
    return {"type": "object", "properties": {
        name: {"type": "string", "description": text} for name, text in arguments.items()}}


def media_tools() -> list[Tool]:
    return [Tool("Media_3_FindMovies", "Explore movies online based on your preferences",
                 _schema(genre="The genre of the movies", starring="Actors in the movie",
                         album="Unused")),
            Tool("Music_3_LookupMusic", "Discover songs that align with your taste",
                 _schema(artist="The artist performing", album="The album of the song"))]


def names(history: list[dict[str, Any]], tools: list[Tool]) -> list[str]:
    return [t.name for t in tool_match.offered(history, tools)]


def test_a_thing_of_a_tools_name_leaves_the_others_out_of_the_first_reply() -> None:
    request = "I want to listen to some music by Imagine Dragons, the album Night Visions."
    # Both share "album"; only one's name says music.
    assert names([{"role": "user", "content": request}], media_tools()) == [
        "Music_3_LookupMusic"]


def test_after_a_tool_result_every_tool_is_offered_again() -> None:
    history = [{"role": "user", "content": "Some music from the album Night Visions."},
               {"role": "assistant", "content": "", "tool_calls": []},
               {"role": "tool", "content": "[]"}]
    assert sorted(names(history, media_tools())) == ["Media_3_FindMovies",
                                                     "Music_3_LookupMusic"]


def test_no_name_named_keeps_every_tool_named_by_its_other_words() -> None:
    request = "Find me something from the album Night Visions."
    assert sorted(names([{"role": "user", "content": request}], media_tools())) == [
        "Media_3_FindMovies", "Music_3_LookupMusic"]


def test_an_action_of_a_name_does_not_narrow() -> None:
    # "play" is in both names' sibling tools; people write it of either.
    tools = [Tool("Media_PlayMovie", "Stream a film", _schema(title="The film's title")),
             Tool("Music_LookupSongs", "Discover songs to play",
                  _schema(title="The song's title"))]
    request = "Play the title track for me."
    assert sorted(names([{"role": "user", "content": request}], tools)) == [
        "Media_PlayMovie", "Music_LookupSongs"]


def test_a_plural_in_a_name_meets_the_singular_of_the_request() -> None:
    tools = [Tool("RentalCars_GetCarsAvailable", "Find cars for rent at a location",
                  _schema(city="The city to pick the car up in")),
             Tool("Events_BuyEventTickets", "Buy tickets for an event",
                  _schema(city="The city of the event"))]
    request = "I need to rent a car in Los Angeles, city of angels."
    assert names([{"role": "user", "content": request}], tools) == [
        "RentalCars_GetCarsAvailable"]
