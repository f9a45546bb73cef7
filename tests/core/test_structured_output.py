"""Structured output against the scripted server: native schema, fallback, retries."""

import json

import pytest
from pydantic import BaseModel

from desktop_agent import Client, StructuredOutputError, TextBlock, query, tool
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


class City(BaseModel):
    name: str
    population: int


PARIS = json.dumps({"name": "Paris", "population": 2100000})


async def test_awaited_query_returns_the_validated_object(server, make_options):
    server.enqueue(script.text(PARIS))
    city = await query("Biggest French city?", make_options(), output_type=City)
    assert city == City(name="Paris", population=2100000)
    schema = server.requests[0]["response_format"]
    assert schema["type"] == "json_schema"
    assert schema["json_schema"]["name"] == "City"
    assert schema["json_schema"]["schema"]["required"] == ["name", "population"]


async def test_iterating_streams_and_then_holds_the_output(server, make_options):
    server.enqueue(script.text(PARIS))
    run = query("Biggest French city?", make_options(output_type=City))
    text = "".join([b.text async for m in run for b in m.content if isinstance(b, TextBlock)])
    assert text == PARIS
    assert run.output.name == "Paris"


async def test_a_server_refusing_response_format_gets_the_schema_in_the_prompt(server,
                                                                                make_options):
    server.enqueue(script.error(400, "response_format is not supported by this server"),
                   script.text(PARIS), script.text(PARIS))
    async with Client(make_options(output_type=City, system_prompt="Be exact.")) as client:
        await client.query("Biggest French city?")
        [item async for item in client.receive_messages()]
        assert client.last_output.population == 2100000
        await client.query("Again?")  # remembered: no second refused request
        [item async for item in client.receive_messages()]
    assert [("response_format" in r) for r in server.requests] == [True, False, False]
    system = server.requests[1]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be exact.")
    assert '"population"' in system["content"]


async def test_a_reply_that_does_not_validate_is_sent_back_with_the_errors(server, make_options):
    server.enqueue(script.text('{"name": "Paris"}'), script.text(f"Sure! ```json\n{PARIS}\n```"))
    city = await query("Biggest French city?", make_options(), output_type=City)
    assert city.name == "Paris"
    correction = server.requests[1]["messages"][-1]
    assert correction["role"] == "user" and "population" in correction["content"]
    assert server.requests[1]["messages"][-2] == {"role": "assistant",
                                                  "content": '{"name": "Paris"}'}


async def test_giving_up_raises_a_typed_error_with_what_came_back(server, make_options):
    server.enqueue(*[script.text("Paris, about two million.") for _ in range(3)])
    with pytest.raises(StructuredOutputError) as caught:
        await query("Biggest French city?", make_options(output_retries=2), output_type=City)
    assert caught.value.attempts == 3
    assert caught.value.raw_text == "Paris, about two million."
    assert caught.value.problems
    assert len(server.requests) == 3


async def test_with_tools_the_schema_is_prompted_and_tools_still_run(server, make_options):
    @tool("census", "Population of a city", {"city": str})
    async def census(args):
        return "2100000"

    server.enqueue(script.tool_calls([("census", {"city": "Paris"})]), script.text(PARIS))
    options = make_options(tools=[census], auto_execute_tools=True)
    city = await query("How many live in Paris?", options, output_type=City)
    assert city.population == 2100000
    assert all("response_format" not in r for r in server.requests)
    assert server.requests[1]["messages"][-1]["content"] == "2100000"


async def test_a_too_long_prompt_is_not_mistaken_for_a_refused_schema(server, make_options):
    from desktop_agent import ContextTooLongError

    server.enqueue(script.error(400, "the request exceeds the available context size"))
    with pytest.raises(ContextTooLongError):
        await query("Biggest French city?", make_options(), output_type=City)
    assert len(server.requests) == 1
