"""Tool calls small local models can make by default, over real HTTP to a scripted server.

The scripted server plays each kind of server through the routes it answers:
llama.cpp's ``/props``, Ollama's ``/api/show``; nothing (a cloud API) otherwise.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop_agent import Client, TextBlock, ToolUseBlock, ToolUseError, tool
from desktop_agent.core.errors import APIError
from desktop_agent.core.tooling import constrained_calls, tool_call_mode
from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.timeout(60)

LLAMACPP_PROPS = {"default_generation_settings": {"n_ctx": 2048},
                  "chat_template_caps": {"supports_tool_calls": True}}


@pytest.fixture(autouse=True)
def _forget_decisions() -> Any:
    tool_call_mode.forget()
    yield
    tool_call_mode.forget()


def weather_tool(calls: list[dict[str, Any]]) -> Any:
    @tool("get_weather", "The weather in a city.",
          {"type": "object", "properties": {"city": {"type": "string"}},
           "required": ["city"]})
    def get_weather(args: dict[str, Any]) -> str:
        calls.append(dict(args))
        return f"Sunny in {args['city']}"

    return get_weather


def as_llamacpp(server: ScriptedServer) -> None:
    server.routes[("GET", "/props")] = (200, LLAMACPP_PROPS)


def as_grammar_server(server: ScriptedServer) -> None:
    """Ollama with a model whose capabilities have no ``tools``: response_format is used."""
    server.routes[("POST", "/api/show")] = (200, {"capabilities": ["completion"]})


def calls_reply(*calls: tuple[str, dict[str, Any]], **kwargs: Any) -> Any:
    """A constrained reply calling one tool, once or (a list of arguments) several times."""
    assert len({n for n, _ in calls}) == 1, "one reply calls one tool"
    arguments: Any = [a for _, a in calls] if len(calls) > 1 else calls[0][1]
    body = json.dumps({"name": calls[0][0], "arguments": arguments}, separators=(",", ":"))
    return script.text(body, pieces=5, **kwargs)


async def turn(client: Client, prompt: str) -> list[Any]:
    await client.query(prompt)
    return [item async for item in client.receive_messages()]


def text_of(items: list[Any]) -> str:
    return "".join(i.text for i in items if isinstance(i, TextBlock))


async def test_llamacpp_gets_constrained_calls_without_any_option(
        server: ScriptedServer, make_options: Any) -> None:
    as_llamacpp(server)
    calls: list[dict[str, Any]] = []
    server.enqueue(calls_reply(("get_weather", {"city": "Paris"})),
                   script.text('{"answer":"Sunny."}'))
    async with Client(make_options(tools=[weather_tool(calls)],
                                   auto_execute_tools=True)) as client:
        items = await turn(client, "Weather in Paris?")
    assert calls == [{"city": "Paris"}]
    assert text_of(items) == "Sunny."
    first = server.requests[0]
    assert "response_format" in first and "tools" not in first
    mode = tool_call_mode.decided(make_options(tools=[weather_tool([])]))
    assert mode is not None and mode.constrained and "llama.cpp" in mode.reason


async def test_a_model_the_server_says_calls_tools_gets_native_calls(
        server: ScriptedServer, make_options: Any) -> None:
    server.routes[("POST", "/api/show")] = (200, {"capabilities": ["completion", "tools"]})
    server.enqueue(script.text("Plain."))
    async with Client(make_options(tools=[weather_tool([])])) as client:
        await turn(client, "hi")
    request = server.requests[0]
    assert "tools" in request and "response_format" not in request
    mode = tool_call_mode.decided(make_options(tools=[weather_tool([])]))
    assert mode is not None and not mode.constrained and "Ollama" in mode.reason


async def test_an_explicit_false_is_never_constrained(server: ScriptedServer,
                                                      make_options: Any) -> None:
    as_llamacpp(server)
    server.enqueue(script.text("Plain."))
    async with Client(make_options(tools=[weather_tool([])],
                                   constrained_tool_calls=False)) as client:
        await turn(client, "hi")
    assert "tools" in server.requests[0] and "response_format" not in server.requests[0]


async def test_a_server_error_does_not_switch_constraints_off(server: ScriptedServer,
                                                              make_options: Any) -> None:
    as_grammar_server(server)
    overloaded = script.error(500, "slot unavailable, try again later")
    server.enqueue(overloaded, overloaded, overloaded, script.text('{"answer":"Back."}'))
    options = make_options(tools=[weather_tool([])])
    async with Client(options) as client:
        with pytest.raises(APIError):
            await turn(client, "hi")
        assert text_of(await turn(client, "again")) == "Back."
    assert all("response_format" in r for r in server.requests)
    assert tool_call_mode.refusal(options.base_url, options.model) is None


async def test_a_refusal_of_the_field_is_remembered_per_model_and_told(
        server: ScriptedServer, make_options: Any) -> None:
    as_grammar_server(server)
    server.enqueue(script.error(400, "response_format type json_schema is not supported"),
                   script.text("Native."), script.text("Still native."),
                   script.text('{"answer":"Other model."}'))
    options = make_options(tools=[weather_tool([])])
    async with Client(options) as client:
        assert text_of(await turn(client, "hi")) == "Native."
        assert text_of(await turn(client, "again")) == "Still native."
    async with Client(make_options(tools=[weather_tool([])], model="other")) as client:
        assert text_of(await turn(client, "hi")) == "Other model."
    refused, asked, remembered, other = server.requests
    assert "response_format" in refused
    assert "tools" in asked and "response_format" not in asked
    assert "response_format" not in remembered
    assert "response_format" in other  # the refusal was this model's only
    mode = tool_call_mode.decided(options)
    assert mode is not None and not mode.constrained
    assert "refused" in mode.reason and "not supported" in mode.reason
    assert "Ollama" not in mode.reason


async def test_several_calls_in_one_reply_run_and_repeats_are_dropped(
        server: ScriptedServer, make_options: Any) -> None:
    as_grammar_server(server)
    calls: list[dict[str, Any]] = []
    server.enqueue(calls_reply(("get_weather", {"city": "Paris"}),
                               ("get_weather", {"city": "Rome"}),
                               ("get_weather", {"city": "Paris"})),
                   script.text('{"answer":"Both sunny."}'))
    async with Client(make_options(tools=[weather_tool(calls)],
                                   auto_execute_tools=True)) as client:
        items = await turn(client, "Weather in Paris and Rome?")
    assert calls == [{"city": "Paris"}, {"city": "Rome"}]
    assert len([i for i in items if isinstance(i, ToolUseBlock)]) == 2
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    several = schema["anyOf"][1]["properties"]["arguments"]["anyOf"][1]
    assert several["type"] == "array"
    assert several["maxItems"] == constrained_calls.MAX_CALLS > 1


async def test_a_reply_cut_mid_call_is_asked_again_with_room_and_only_the_retry_is_shown(
        server: ScriptedServer, make_options: Any) -> None:
    as_grammar_server(server)
    calls: list[dict[str, Any]] = []
    cut = '{"name":"get_weather","arguments":{"city":"Par'
    server.enqueue(script.text(cut, pieces=4, finish_reason="length"),
                   calls_reply(("get_weather", {"city": "Paris"})),
                   script.text('{"answer":"Sunny."}'))
    async with Client(make_options(tools=[weather_tool(calls)], max_tokens=40,
                                   auto_execute_tools=True)) as client:
        items = await turn(client, "Weather in Paris?")
        history = client.history
        metadata = client.turn_metadata
    # The cut call was never the reply: no error card for a call that was not made
    # (a cut retry still shows one: the next test); the record says it was asked again.
    assert not [i for i in items if isinstance(i, ToolUseError)]
    assert metadata["asked_again"] == ["room"]
    assert calls == [{"city": "Paris"}]  # the cut call never ran; the retried one did
    assert [r["max_tokens"] for r in server.requests] == [40, 80, 40]
    assert sum(1 for m in history if m.get("tool_calls")) == 1  # the cut reply is not kept


async def test_a_cut_reply_that_the_repair_could_close_is_not_run(
        server: ScriptedServer, make_options: Any) -> None:
    # Cut inside the only call: closing the brackets would run it; it was not sent whole.
    as_grammar_server(server)
    calls: list[dict[str, Any]] = []
    cut = '{"name":"get_weather","arguments":{"city":"Pa'
    server.enqueue(script.text(cut, finish_reason="length"),
                   script.text(cut, finish_reason="length"))
    async with Client(make_options(tools=[weather_tool(calls)], max_tokens=30,
                                   auto_execute_tools=True, max_tool_iterations=1)) as client:
        items = await turn(client, "Weather in Paris?")
    assert calls == []
    assert any(isinstance(i, ToolUseError) and "cut off" in i.error for i in items)
    assert len(server.requests) >= 2  # asked again once with room, then reported


async def test_the_whole_calls_of_a_list_cut_by_the_limit_run_without_asking_again(
        server: ScriptedServer, make_options: Any) -> None:
    # The model ran on inside its list until max_tokens; the calls it closed are whole.
    as_grammar_server(server)
    calls: list[dict[str, Any]] = []
    cut = '{"name":"get_weather","arguments":[{"city":"Paris"}, {"city":"Rome"}, {"ci'
    server.enqueue(script.text(cut, finish_reason="length"), script.text('{"answer": "Done."}'))
    async with Client(make_options(tools=[weather_tool(calls)], max_tokens=30,
                                   auto_execute_tools=True)) as client:
        items = await turn(client, "Weather in Paris and Rome?")
    assert calls == [{"city": "Paris"}, {"city": "Rome"}]
    assert not any(isinstance(i, ToolUseError) for i in items)
    assert len(server.requests) == 2  # the calls, then the answer: nothing asked again


def test_required_arrays_need_content_and_strings_are_capped() -> None:
    schema = {"type": "object", "properties": {
        "cities": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "note": {"type": "string", "maxLength": 10}},
        "required": ["cities"]}

    @tool("plan", "Plan.", schema)
    def plan(args: dict[str, Any]) -> str:
        return "ok"

    built = constrained_calls.reply_schema([plan], max_tokens=100)
    arguments = built["anyOf"][1]["properties"]["arguments"]["anyOf"][0]["properties"]
    assert arguments["cities"]["minItems"] == 1
    assert "minItems" not in arguments["tags"]  # not required: may be empty
    assert arguments["cities"]["items"]["maxLength"] == 200  # two characters a token
    assert "maxLength" not in arguments["unit"] and arguments["note"]["maxLength"] == 10
    assert "minItems" not in schema["properties"]["cities"]  # the tool's own is untouched
    assert constrained_calls.reply_schema([plan])["anyOf"][1]["properties"]["arguments"][
        "anyOf"][0]["properties"]["cities"]["items"]["maxLength"] == constrained_calls.STRING_CAP


async def test_an_argument_at_the_cap_is_not_run(server: ScriptedServer,
                                                 make_options: Any) -> None:
    as_grammar_server(server)
    calls: list[dict[str, Any]] = []
    cap = constrained_calls.string_cap(40)
    server.enqueue(calls_reply(("get_weather", {"city": "Paris " * (cap // 6 + 1)})),
                   script.text('{"answer":"Sorry."}'))
    async with Client(make_options(tools=[weather_tool(calls)], max_tokens=40,
                                   auto_execute_tools=True)) as client:
        items = await turn(client, "Weather in Paris?")  # a city nobody named is not run either
    assert calls == []
    assert any(isinstance(i, ToolUseError) and "limit of constrained calls" in i.error
               for i in items)


async def test_prose_naming_a_tool_is_asked_again_for_calls_once(
        server: ScriptedServer, make_options: Any) -> None:
    as_grammar_server(server)
    calls: list[dict[str, Any]] = []
    server.enqueue(script.text('{"answer":"I will use get_weather for Paris."}'),
                   calls_reply(("get_weather", {"city": "Paris"})),
                   script.text('{"answer":"get_weather says sunny."}'))
    async with Client(make_options(tools=[weather_tool(calls)],
                                   auto_execute_tools=True)) as client:
        await turn(client, "Weather in Paris?")
        history = client.history
    assert calls == [{"city": "Paris"}]
    prose, again, last = server.requests
    assert "anyOf" in prose["response_format"]["json_schema"]["schema"]
    only_calls = again["response_format"]["json_schema"]["schema"]
    assert [c["properties"]["name"] for c in only_calls["anyOf"]] == [
        {"const": "get_weather"}]  # a call of an offered tool, no answer
    assert "anyOf" in last["response_format"]["json_schema"]["schema"]  # once per turn
    assert not any("I will use" in str(m.get("content")) for m in history)
    assert history[-1]["content"] == "get_weather says sunny."


async def test_prose_without_a_tool_name_or_on_an_unknown_server_is_kept(
        server: ScriptedServer, make_options: Any) -> None:
    server.enqueue(script.text("Use get_weather for that."))  # no /props: a cloud API
    async with Client(make_options(tools=[weather_tool([])])) as client:
        assert text_of(await turn(client, "hi")) == "Use get_weather for that."
    assert len(server.requests) == 1


async def test_python_style_calls_are_read_without_running_code(
        server: ScriptedServer, make_options: Any) -> None:
    calls: list[dict[str, Any]] = []
    server.enqueue(script.text('[get_weather(city="Paris"), get_weather(city=\'Rome\')]'),
                   script.text('[get_weather(city=__import__("os").getcwd())]'),
                   script.text("Done."))
    async with Client(make_options(tools=[weather_tool(calls)], auto_execute_tools=True,
                                   constrained_tool_calls=False)) as client:
        items = await turn(client, "Weather?")
    assert calls == [{"city": "Paris"}, {"city": "Rome"}]
    errors = [i for i in items if isinstance(i, ToolUseError)]
    assert errors and "not a literal value" in errors[0].error
    assert "[get_weather" not in text_of(items)


async def test_a_server_that_is_down_is_asked_again_later(make_options: Any) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = make_options(base_url=f"http://127.0.0.1:{port}/v1", tools=[weather_tool([])])
    mode = await tool_call_mode.resolve(options)
    assert not mode.constrained and "did not answer" in mode.reason
    assert tool_call_mode.decided(options) is None  # nothing learnt, nothing remembered


async def test_an_answer_after_tools_ran_may_name_them(server: ScriptedServer,
                                                       make_options: Any) -> None:
    # "get_weather says sunny" answers the tool's result: asking again would force a call.
    as_grammar_server(server)
    calls: list[dict[str, Any]] = []
    server.enqueue(calls_reply(("get_weather", {"city": "Paris"})),
                   script.text('{"answer":"get_weather says it is sunny."}'))
    async with Client(make_options(tools=[weather_tool(calls)],
                                   auto_execute_tools=True)) as client:
        items = await turn(client, "Weather in Paris?")
    assert text_of(items) == "get_weather says it is sunny."
    assert len(server.requests) == 2 and calls == [{"city": "Paris"}]


async def test_conversations_starting_together_ask_the_server_once(
        server: ScriptedServer, make_options: Any) -> None:
    """Five turns starting at once wait for one question to the server, and all use its answer."""
    import asyncio

    as_llamacpp(server)
    server.responder = lambda _body: script.text('{"answer":"Hi."}')
    clients = [Client(make_options(tools=[weather_tool([])], auto_execute_tools=True))
               for _ in range(5)]
    try:
        replies = await asyncio.gather(*(turn(client, "Hello?") for client in clients))
    finally:
        for client in clients:
            await client.close()
    assert [text_of(items) for items in replies] == ["Hi."] * 5
    assert server.request_targets.count("/props") == 1
    assert all("response_format" in body for body in server.requests)


async def test_a_server_of_no_known_kind_is_asked_once_not_at_every_turn(
        server: ScriptedServer, make_options: Any) -> None:
    """A server none of whose endpoints names a kind (a cloud API, a proxy) is asked once.

    Its five endpoints were asked again before every turn: five requests per
    turn to the model server, and their handling on the event loop of ``serve``
    while other conversations streamed.
    """
    server.responder = lambda _body: script.text("Hi.")
    client = Client(make_options(tools=[weather_tool([])], auto_execute_tools=True))
    try:
        for _ in range(3):
            assert text_of(await turn(client, "Hello?")) == "Hi."
    finally:
        await client.close()
    assert server.request_targets.count("/props") == 1
    assert server.request_targets.count("/v1/models") == 1
    assert len(server.requests) == 3
