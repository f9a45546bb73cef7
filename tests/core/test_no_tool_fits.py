"""When no offered tool fits, the person gets an answer; the tools meant are listed first.

Over real HTTP (the scripted server plays a grammar server): what the constrained
request allows, in which order it shows the tools, and what runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from constrained_replies import branches, text_of

from desktop_agent import Client, ToolUseBlock, ToolUseError, tool
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _forget_modes() -> Any:
    yield
    tool_call_mode.forget()


def recording_tool(name: str, description: str, properties: dict[str, Any],
                   ran: list[dict[str, Any]]) -> Any:
    @tool(name, description, {"type": "object", "properties": properties,
                              "required": list(properties)})
    def run(args: dict[str, Any]) -> str:
        ran.append({name: dict(args)})
        return "done"

    return run


def toolbox(ran: list[dict[str, Any]]) -> list[Any]:
    return [
        recording_tool("bash", "Run a shell command.", {"command": {"type": "string"}}, ran),
        recording_tool("stock_ticker", "The latest stock price of a company.",
                       {"company_name": {"type": "string"}}, ran),
        recording_tool("get_weather", "The weather forecast for a city.",
                       {"city": {"type": "string"}}, ran),
    ]


async def ask(server: Any, make_options: Any, prompts: list[str], *replies: str
              ) -> tuple[list[dict[str, Any]], list[Any]]:
    """Ask each prompt in one conversation; the calls that ran, and everything received."""
    ran: list[dict[str, Any]] = []
    server.enqueue(*(script.text(reply, pieces=3) for reply in replies))
    options = make_options(tools=toolbox(ran), auto_execute_tools=True,
                           constrained_tool_calls=True)
    items: list[Any] = []
    async with Client(options) as client:
        for prompt in prompts:
            await client.query(prompt)
            items += [item async for item in client.receive_messages()]
    return ran, items


async def test_a_greeting_gets_an_answer_and_runs_nothing(server: Any,
                                                          make_options: Any) -> None:
    ran, items = await ask(server, make_options, ["hello!"], '{"answer": "Hello, how can I help?"}')
    assert ran == []
    assert text_of(items) == "Hello, how can I help?"
    assert branches(server.requests[0]) == ["answer"]


async def test_a_request_for_a_tools_job_is_offered_that_tool(server: Any,
                                                              make_options: Any) -> None:
    call = json.dumps({"name": "get_weather", "arguments": {"city": "Lyon"}})
    ran, _ = await ask(server, make_options, ["What is the weather forecast in Lyon?"], call,
                       '{"answer": "Sunny."}')
    assert ran == [{"get_weather": {"city": "Lyon"}}]
    first, after_result = server.requests
    assert branches(first) == ["answer", "get_weather"]  # a question runs no command
    # after a result, a next step may need a tool nobody named: all are offered again
    assert sorted(branches(after_result)) == ["answer", "bash", "get_weather", "stock_ticker"]


async def test_the_tools_most_likely_meant_are_listed_first(server: Any,
                                                            make_options: Any) -> None:
    await ask(server, make_options, ["Get the stock price of Airbus and the weather in Lyon."],
              '{"answer": "Not now."}')
    request = server.requests[0]
    # stock_ticker shares "stock" and "price", get_weather "weather"; bash runs any
    # instruction given, and shares no word
    assert branches(request) == ["answer", "stock_ticker", "get_weather", "bash"]
    # The prompt lists them in the options' own order all the same, so that the
    # prefix a server caches stays the same from request to request.
    system = request["messages"][0]["content"]
    assert system.index("- bash:") < system.index("- stock_ticker:") < system.index(
        "- get_weather:")


async def test_a_question_names_a_tool_plainly_an_instruction_by_one_word(
        server: Any, make_options: Any) -> None:
    # "price" is one word of stock_ticker's description: asked as a question it is
    # knowledge of the same field, asked as an instruction it is the tool's job.
    server.enqueue(*(script.text('{"answer": "ok"}') for _ in range(4)))
    for prompt in ("What is the price of gold?", "Find the price of Airbus shares.",
                   "What is the latest stock price of Airbus?",
                   "Hi, could you tell me the price of Airbus shares?"):
        async with Client(make_options(tools=toolbox([]), constrained_tool_calls=True)
                          ) as client:
            await client.query(prompt)
            _ = [item async for item in client.receive_messages()]
    question, instruction, named, polite = (branches(r) for r in server.requests)
    assert question == ["answer"]
    assert instruction == ["answer", "stock_ticker", "bash"]
    assert named == ["answer", "stock_ticker"]
    assert polite == instruction  # a greeting, then a polite request: an instruction


async def test_another_kind_of_the_tools_thing_and_what_a_thing_is_get_an_answer(
        server: Any, make_options: Any) -> None:
    ran: list[dict[str, Any]] = []
    tools = [recording_tool("grocery_store_locate_nearby", "Find grocery stores nearby a "
                            "location.", {"location": {"type": "string"}}, ran),
             recording_tool("search_holy_books", "Search content, chapters or authors of "
                            "holy books.", {"book": {"type": "string"}}, ran)]
    prompts = ("Find a pet store near Lyon.", "Find a grocery store near Lyon.",
               "Find the nearest grocery near Lyon.", "Find the two closest grocery stores "
               "near Lyon.", "Find the grocery store by the pet store in Lyon.",
               "What is a holy book?", "Search the holy books for the flood.")
    server.enqueue(*(script.text('{"answer": "ok"}') for _ in prompts))
    for prompt in prompts:
        async with Client(make_options(tools=tools, constrained_tool_calls=True)) as client:
            await client.query(prompt)
            _ = [item async for item in client.receive_messages()]
    pet, grocery, nearest, closest, both, what, search = (branches(r)
                                                          for r in server.requests)
    # a pet store is not the tool's grocery store: the person gets an answer
    assert pet == ["answer"]
    # the tool's own thing, alone or counted, is its job
    assert grocery == nearest == closest == both == ["answer", "grocery_store_locate_nearby"]
    # what a holy book is: a definition, which searching holy books does not give
    assert what == ["answer"]
    assert search == ["answer", "search_holy_books"]
    assert ran == []


async def test_of_sibling_tools_the_one_of_the_kind_named_is_offered(
        server: Any, make_options: Any) -> None:
    tools = [recording_tool(f"basketball_{kind}_stats_get", f"Get {kind} stats of a "
                            "basketball game.", {"name": {"type": "string"}}, [])
             for kind in ("game", "player")]
    server.enqueue(script.text('{"answer": "ok"}'))
    async with Client(make_options(tools=tools, constrained_tool_calls=True)) as client:
        await client.query("Get the player stats of LeBron James.")
        _ = [item async for item in client.receive_messages()]
    assert branches(server.requests[0]) == ["answer", "basketball_player_stats_get"]


async def test_an_instruction_may_run_a_command_a_file_name_may_open_a_file(
        server: Any, make_options: Any) -> None:
    ran: list[dict[str, Any]] = []
    reader = recording_tool("read_file", "Read a text file.", {"path": {"type": "string"}}, ran)
    tools = [*toolbox(ran), reader]
    server.enqueue(*(script.text('{"answer": "ok"}') for _ in range(3)))
    async with Client(make_options(tools=tools, constrained_tool_calls=True)) as client:
        for prompt in ("install numpy", "how long is notes.txt?", "who won in 2010?"):
            await client.query(prompt)
            _ = [item async for item in client.receive_messages()]
    install, notes, who = (branches(r) for r in server.requests)
    assert install == ["answer", "bash"]
    assert notes == ["answer", "bash", "read_file"]  # the conversation named both by now
    assert who == ["answer", "bash", "read_file"]


async def test_a_follow_up_leans_on_what_the_person_asked_before(server: Any,
                                                                 make_options: Any) -> None:
    call = json.dumps({"name": "bash", "arguments": {"command": "ls"}})
    ran, _ = await ask(server, make_options,
                       ["Can you run a shell command to list my files?", "yes, do it"],
                       '{"answer": "Shall I?"}', call, '{"answer": "Listed."}')
    assert ran == [{"bash": {"command": "ls"}}]
    assert "bash" in branches(server.requests[1])


async def test_a_request_in_another_script_is_not_judged_by_words(server: Any,
                                                                  make_options: Any) -> None:
    call = json.dumps({"name": "get_weather", "arguments": {"city": "北京"}})
    ran, _ = await ask(server, make_options, ["北京的天气怎么样？"], call, '{"answer": "晴"}')
    assert ran == [{"get_weather": {"city": "北京"}}]


async def test_a_call_of_placeholders_is_not_run_and_the_person_gets_an_answer(
        server: Any, make_options: Any) -> None:
    made_up = json.dumps({"name": "stock_ticker",
                          "arguments": {"company_name": "stock_ticker"}})
    ran, items = await ask(server, make_options, ["Who won the stock car race in 2010?"],
                           made_up, '{"answer": "I do not know."}')
    assert ran == []
    assert not any(isinstance(i, ToolUseBlock) for i in items)
    assert text_of(items) == "I do not know."
    first, again = server.requests
    assert "stock_ticker" in branches(first)
    assert branches(again) == ["answer"]


async def test_a_call_of_words_nobody_wrote_is_not_run_and_the_person_gets_an_answer(
        server: Any, make_options: Any) -> None:
    # The stock-price tool shares "stock" with the question, so it is offered; the
    # model fills the company in with a name of its own, which no word of the
    # question gave: the call is the model's, not the person's.
    made_up = json.dumps({"name": "stock_ticker", "arguments": {"company_name": "Apple"}})
    ran, items = await ask(server, make_options, ["Is a stock market a good place for "
                                                  "beginners?"], made_up,
                           '{"answer": "It can be, with care."}')
    assert ran == []
    assert text_of(items) == "It can be, with care."
    assert branches(server.requests[1]) == ["answer"]


async def test_a_value_written_in_another_form_makes_the_call_meant(
        server: Any, make_options: Any) -> None:
    # Abbreviations, initials and plurals are how people and models write the same thing.
    ran, _ = await ask(server, make_options, ["Stock price of International Business "
                                              "Machines?", "And stock prices of Alphabet's "
                                              "companies?"],
                       json.dumps({"name": "stock_ticker",
                                   "arguments": {"company_name": "IBM"}}),
                       '{"answer": "150."}',
                       json.dumps({"name": "stock_ticker",
                                   "arguments": {"company_name": "Alphabet company"}}),
                       '{"answer": "170."}')
    assert ran == [{"stock_ticker": {"company_name": "IBM"}},
                   {"stock_ticker": {"company_name": "Alphabet company"}}]


async def test_a_command_derived_from_the_request_is_run(server: Any,
                                                         make_options: Any) -> None:
    # "list my files" is `ls`: a command, a path or a query is the model's own words.
    call = json.dumps({"name": "bash", "arguments": {"command": "ls -la"}})
    ran, _ = await ask(server, make_options, ["Show me what is in this folder"], call,
                       '{"answer": "Three files."}')
    assert ran == [{"bash": {"command": "ls -la"}}]


async def test_numbers_nobody_wrote_are_placeholders_numbers_written_in_words_are_not(
        server: Any, make_options: Any) -> None:
    ran: list[dict[str, Any]] = []
    power = recording_tool("electric_power", "Electric power from voltage and current.",
                           {"voltage": {"type": "number"}, "current": {"type": "number"}}, ran)
    options = make_options(tools=[power], auto_execute_tools=True, constrained_tool_calls=True)
    invented = json.dumps({"name": "electric_power",
                           "arguments": {"voltage": 100, "current": 0}})
    written = json.dumps({"name": "electric_power",
                          "arguments": {"voltage": 230, "current": 2}})
    server.enqueue(script.text(invented), script.text('{"answer": "No idea."}'),
                   script.text(written), script.text('{"answer": "460 W."}'))
    async with Client(options) as client:
        await client.query("What is the electric charge of a proton?")
        _ = [item async for item in client.receive_messages()]
        await client.query("And the electric power at 230 volts and two amperes?")
        _ = [item async for item in client.receive_messages()]
    assert ran == [{"electric_power": {"voltage": 230, "current": 2}}]


async def test_an_answer_naming_a_tool_is_not_asked_again_when_no_tool_was_meant(
        server: Any, make_options: Any) -> None:
    ran, items = await ask(server, make_options, ["hello"],
                           '{"answer": "Hi! I can use get_weather or bash."}')
    assert ran == []
    assert len(server.requests) == 1
    assert text_of(items) == "Hi! I can use get_weather or bash."


async def test_a_call_cut_in_a_loop_of_nothing_said_gets_an_answer_not_more_room(
        server: Any, make_options: Any) -> None:
    # SmolLM2-135M, offered a concert tool for a question about classes, repeated one
    # piece until the token limit; a greedy reply asked again with more room only
    # repeats it longer, so the person gets an answer instead.
    ran: list[dict[str, Any]] = []
    concerts = recording_tool("concert_availability",
                              "Check the availability of concerts by artist and location.",
                              {"artist": {"type": "string"}, "location": {"type": "string"}},
                              ran)
    looped = '{\n  "name": "concert_availability",\n  "arguments": {\n    "artist": "' + \
        "cronite_" * 30 + "cro"
    in_sydney = '{"name": "concert_availability", "arguments": {"location": "Sydney", ' \
        '"artist": "' + "Midnight Oil " * 20
    server.enqueue(script.text(looped, finish_reason="length"),
                   script.text('{"answer": "I cannot tell."}'),
                   script.text(in_sydney, finish_reason="length"),
                   script.text('{"answer": "Checking."}'))
    options = make_options(tools=[concerts], auto_execute_tools=True,
                           constrained_tool_calls=True, max_tokens=64)
    async with Client(options) as client:
        await client.query("Is there any concert at the University in Sydney in May?")
        items = [item async for item in client.receive_messages()]
        await client.query("Is there any Midnight Oil concert in Sydney in May?")
        _ = [item async for item in client.receive_messages()]
    assert ran == []
    assert text_of(items) == "I cannot tell."
    first, again, second, more_room = server.requests
    assert branches(again) == ["answer"]
    # a loop after a value the person gave may be a long value: more room, as before
    assert "concert_availability" in branches(more_room)
    assert (second["max_tokens"], more_room["max_tokens"]) == (64, 128)


def ticket_tool(ran: list[dict[str, Any]]) -> Any:
    return recording_tool("buy_movie_tickets", "Buy tickets for a showing of a movie.", {
        "movie_name": {"type": "string", "description": "The title of the movie."},
        "location": {"type": "string", "description": "The city, as 'City, State'."}}, ran)


async def ask_with(server: Any, make_options: Any, tools_of: Any, prompt: str, *replies: str
                   ) -> tuple[list[dict[str, Any]], list[Any]]:
    """Ask one prompt offered ``tools_of(ran)``; the calls that ran, and everything received."""
    ran: list[dict[str, Any]] = []
    options = make_options(tools=tools_of(ran), auto_execute_tools=True,
                           constrained_tool_calls=True)
    server.enqueue(*(script.text(reply) for reply in replies))
    async with Client(options) as client:
        await client.query(prompt)
        items = [item async for item in client.receive_messages()]
    return ran, items


async def test_a_call_that_makes_up_a_value_the_tool_needs_asks_the_person_instead(
        server: Any, make_options: Any) -> None:
    # "I want to see a movie in Berkeley" names no movie: the model wrote one of its own.
    made_up = json.dumps({"name": "buy_movie_tickets", "arguments": {
        "movie_name": "The Matrix", "location": "Berkeley, CA"}})
    ran, items = await ask_with(server, make_options, lambda ran: [ticket_tool(ran)],
                                "I want to see a movie in Berkeley tonight.", made_up,
                                '{"answer": "Which movie would you like to see?"}')
    assert ran == []
    assert text_of(items) == "Which movie would you like to see?"
    assert branches(server.requests[1]) == ["answer"]


async def test_needed_values_the_person_gave_in_any_usual_form_make_the_call_run(
        server: Any, make_options: Any) -> None:
    # A film named, a city by its initials with the state the tool asks for.
    call = json.dumps({"name": "buy_movie_tickets", "arguments": {
        "movie_name": "Ad Astra", "location": "Los Angeles, CA"}})
    ran, _ = await ask_with(server, make_options, lambda ran: [ticket_tool(ran)],
                            "Two tickets for Ad Astra in LA, please.", call,
                            '{"answer": "Booked."}')
    assert ran == [{"buy_movie_tickets": {"movie_name": "Ad Astra",
                                          "location": "Los Angeles, CA"}}]


async def test_what_the_model_writes_for_a_file_is_its_own_and_runs(
        server: Any, make_options: Any) -> None:
    def writer(ran: list[dict[str, Any]]) -> list[Any]:
        return [recording_tool("write_file", "Write a file.", {
            "path": {"type": "string"}, "content": {"type": "string"}}, ran)]

    call = json.dumps({"name": "write_file", "arguments": {
        "path": "fib.py", "content": "def f(n):\n    return n if n < 2 else f(n-1) + f(n-2)\n"}})
    ran, _ = await ask_with(server, make_options, writer,
                            "Put a Fibonacci function in a new file.", call,
                            '{"answer": "Written."}')
    assert [next(iter(r)) for r in ran] == ["write_file"]


async def test_a_call_cut_after_a_made_up_start_gets_an_answer_not_more_room(
        server: Any, make_options: Any) -> None:
    # SmolLM2-135M wrote the tool's own name into `movie_name`, misspelt and numbered,
    # to the token limit: more room would only finish a call that is not run. A call
    # cut inside values the person gave still gets the room to finish.
    ran: list[dict[str, Any]] = []
    options = make_options(tools=[ticket_tool(ran)], auto_execute_tools=True,
                           constrained_tool_calls=True, max_tokens=64)
    made_up = '{"name": "buy_movie_tickets", "arguments": [{"movie_name": "' + "".join(
        f"Movie_{n}_BuyTikets_" for n in range(1, 12))
    given = '{"name": "buy_movie_tickets", "arguments": {"movie_name": "Ad Astra", ' \
        '"location": "Berke'
    server.enqueue(script.text(made_up, finish_reason="length"),
                   script.text('{"answer": "Which movie?"}'),
                   script.text(given, finish_reason="length"),
                   script.text(json.dumps({"name": "buy_movie_tickets", "arguments": {
                       "movie_name": "Ad Astra", "location": "Berkeley, CA"}})),
                   script.text('{"answer": "Booked."}'))
    async with Client(options) as client:
        await client.query("I want to see some sort of movie tonight. Can you help?")
        items = [item async for item in client.receive_messages()]
        await client.query("Ad Astra in Berkeley, then.")
        _ = [item async for item in client.receive_messages()]
    assert text_of(items) == "Which movie?"
    assert not any(isinstance(i, ToolUseError) for i in items)
    assert branches(server.requests[1]) == ["answer"]
    assert server.requests[3]["max_tokens"] == 128
    assert ran == [{"buy_movie_tickets": {"movie_name": "Ad Astra", "location": "Berkeley, CA"}}]


async def test_a_value_the_model_offered_and_the_person_took_is_given(
        server: Any, make_options: Any) -> None:
    # "Shall I book Dune?" "Yes, do it." The film is the person's by agreeing to it.
    ran: list[dict[str, Any]] = []
    options = make_options(tools=[ticket_tool(ran)], auto_execute_tools=True,
                           constrained_tool_calls=True)
    call = json.dumps({"name": "buy_movie_tickets", "arguments": {
        "movie_name": "Dune", "location": "Berkeley, CA"}})
    server.enqueue(script.text('{"answer": "Dune plays at 8 pm in Berkeley. Shall I book it?"}'),
                   script.text(call), script.text('{"answer": "Booked."}'))
    async with Client(options) as client:
        for prompt in ("What plays tonight in Berkeley?", "Yes, book it."):
            await client.query(prompt)
            _ = [item async for item in client.receive_messages()]
    assert ran == [{"buy_movie_tickets": {"movie_name": "Dune", "location": "Berkeley, CA"}}]
