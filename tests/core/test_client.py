"""Client and query() over real HTTP against the scripted server."""

import asyncio
import json

import pytest

from desktop_agent import (
    AgentOptions,
    AssistantMessage,
    Client,
    ResultMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    TurnInProgressError,
    Usage,
    query,
    tool,
)
from desktop_agent.testing import script
from desktop_agent.testing.script import ChunkFactory, Gate, Raw, Script

pytestmark = pytest.mark.timeout(60)


@tool("get_weather", "Weather for a city", {"city": str})
async def get_weather(args):
    return f"Sunny in {args['city']}"


async def collect(client):
    return [item async for item in client.receive_messages()]


def text_of(items):
    return "".join(i.text for i in items if isinstance(i, TextBlock))


async def test_query_streams_assistant_messages(server, make_options):
    server.enqueue(script.text("Hello there, friend!"))
    messages = [m async for m in query("hi", make_options())]
    *streamed, result = messages
    assert all(isinstance(m, AssistantMessage) for m in streamed)
    assert len(streamed) == 3
    assert "".join(b.text for m in messages for b in m.content) == "Hello there, friend!"
    # last, as claude-agent-sdk: how the query ended (no content for seed loops to read)
    assert isinstance(result, ResultMessage) and result.content == []
    assert (result.subtype, result.is_error, result.num_turns) == ("success", False, 1)
    assert result.result == "Hello there, friend!" and result.stop_reason == "stop"
    assert result.usage is not None and result.duration_ms >= result.duration_api_ms
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert server.requests[0]["stream"] is True


async def test_first_block_arrives_before_the_stream_ends(server, make_options, gate):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "Hello"}), Gate(gate),
                           f.delta({"content": " world"}), f.finish("stop")]))
    async with Client(make_options()) as client:
        await client.query("hi")
        stream = client.receive_messages()
        first = await asyncio.wait_for(stream.__anext__(), 5)
        assert first == TextBlock("Hello")  # the server is still holding the rest
        assert not gate.is_set()
        gate.set()
        rest = [item async for item in stream]
    assert text_of(rest) == " world"
    assert isinstance(rest[-1], Usage)


async def test_query_also_streams_first_piece_early(server, make_options, gate):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "A"}), Gate(gate), f.delta({"content": "B"}),
                           f.finish("stop"), script.DONE]))
    stream = query("x", make_options())
    first = await asyncio.wait_for(stream.__anext__(), 5)
    assert first.content == [TextBlock("A")] and not gate.is_set()
    gate.set()
    assert [m.content[0].text async for m in stream if m.content] == ["B"]


async def test_usage_reported_per_turn(server, make_options):
    server.enqueue(script.text("one two three", prompt_tokens=42))
    async with Client(make_options()) as client:
        await client.query("count")
        items = await collect(client)
    usage = items[-1]
    assert usage == client.last_usage
    assert usage.prompt_tokens == 42 and usage.completion_tokens == 3
    assert usage.time_to_first_token is not None and usage.tokens_per_second > 0
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_usage_is_none_when_the_server_reports_nothing(server, make_options):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "hi"}), f.finish("stop")]))
    async with Client(make_options()) as client:
        await client.query("x")
        await collect(client)
    assert client.last_usage.prompt_tokens is None
    assert client.last_usage.completion_tokens is None


async def test_multi_turn_history_and_system_prompt(server, make_options):
    server.enqueue(script.text("First."), script.text("Second."))
    async with Client(make_options(system_prompt="Be brief.")) as client:
        await client.query("one")
        await collect(client)
        await client.query("two")
        await collect(client)
        assert client.history == [
            {"role": "user", "content": "one"}, {"role": "assistant", "content": "First."},
            {"role": "user", "content": "two"}, {"role": "assistant", "content": "Second."}]
    assert server.requests[1]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert len(server.requests[1]["messages"]) == 4


async def test_history_is_a_copy_and_settable(server, make_options):
    async with Client(make_options()) as client:
        client.history.append({"role": "user", "content": "ignored"})
        assert client.history == []
        client.message_history = [{"role": "system", "content": "s"},
                                  {"role": "user", "content": "earlier"},
                                  {"role": "assistant", "content": "reply"}]
        assert client.history[0] == {"role": "user", "content": "earlier"}
        await client.query("now")
        await collect(client)
    assert [m["content"] for m in server.requests[0]["messages"]] == ["earlier", "reply", "now"]


async def test_a_default_client_takes_many_queries_and_counts_them(server):
    options = AgentOptions(model="test-model", base_url=server.base_url)  # the defaults
    async with Client(options) as client:
        assert client.turn_count == 0
        assert client.turn_metadata == {"turn_count": 0, "max_turns": None}
        for word in ("one", "two", "three"):
            await client.query(word)
            assert text_of(await collect(client)) == f"You said: {word}"
        assert client.turn_count == 3
        assert client.turn_metadata["turn_count"] == 3
    assert len(server.requests) == 3


async def test_max_turns_limits_model_requests_within_one_query(server, make_options):
    ran = []

    @tool("note", "Note something", {"text": str})
    async def note(args):
        ran.append(args["text"])
        return "noted"

    server.enqueue(script.tool_calls([("note", {"text": "a"})]),
                   script.tool_calls([("note", {"text": "b"})]))
    async with Client(make_options(max_turns=2, tools=[note],
                                   auto_execute_tools=True)) as client:
        await client.query("go")
        items = await collect(client)
        stops = [i for i in items if isinstance(i, ToolUseError) and i.tool_use_id is None]
        assert stops and "max_turns" in stops[0].error
        assert ran == ["a"]  # the second reply's call did not run
        assert client.turn_metadata["requests"] == 2
        assert client.history[-1]["role"] == "tool"  # every call answered
        await client.query("again")  # the next query is still accepted
        assert text_of(await collect(client)) == "You said: again"


async def test_reasoning_is_not_sent_back(server, make_options):
    server.enqueue(script.thinking("let me think", "The answer."),
                   script.thinking("inline plan", "Next.", inline=True))
    async with Client(make_options()) as client:
        await client.query("q")
        items = await collect(client)
        assert "".join(i.text for i in items if isinstance(i, ThinkingBlock)) == "let me think"
        assert text_of(items) == "The answer."
        await client.query("q2")
        items = await collect(client)
        assert text_of(items) == "Next."
    sent = json.dumps(server.requests[1]["messages"])
    assert "let me think" not in sent and "The answer." in sent


async def test_cumulative_server_streams_clean_text(server, make_options):
    server.enqueue(script.text("Hello world, again!", cumulative=True))
    async with Client(make_options()) as client:
        await client.query("x")
        assert text_of(await collect(client)) == "Hello world, again!"


async def test_malformed_chunk_is_skipped(server, make_options):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "Good "}), Raw(b"data: {not json\n\n"),
                           f.delta({"content": "still here"}), f.finish("stop")]))
    async with Client(make_options()) as client:
        await client.query("x")
        assert text_of(await collect(client)) == "Good still here"


# -- manual tool use -------------------------------------------------------------------

async def test_manual_tool_flow_continues_without_empty_user_message(server, make_options):
    server.enqueue(script.tool_calls([("get_weather", {"city": "Rome"})], ids=["c1"]),
                   script.text("It is sunny in Rome."))
    async with Client(make_options(tools=[get_weather])) as client:
        await client.query("Weather in Rome?")
        items = await collect(client)
        call = next(i for i in items if isinstance(i, ToolUseBlock))
        assert call.input == {"city": "Rome"}
        await client.add_tool_result(call.id, await get_weather.execute(call.input),
                                     name="get_weather")
        await client.query("")  # continue the turn
        assert text_of(await collect(client)) == "It is sunny in Rome."
    last_request = server.requests[-1]["messages"]
    assert last_request[-1] == {"role": "tool", "tool_call_id": "c1",
                                "content": "Sunny in Rome", "name": "get_weather"}
    assert not any(m["role"] == "user" and not m.get("content") for m in last_request)


async def test_new_prompt_answers_forgotten_tool_calls(server, make_options):
    server.enqueue(script.tool_calls([("get_weather", {"city": "Rome"})], ids=["c1"]),
                   script.text("ok"))
    async with Client(make_options(tools=[get_weather])) as client:
        await client.query("Weather?")
        await collect(client)
        await client.query("never mind")
        await collect(client)
    roles = [m["role"] for m in server.requests[-1]["messages"]]
    assert roles == ["user", "assistant", "tool", "user"]


# -- auto execution ----------------------------------------------------------------------

async def test_auto_mode_runs_tools_and_continues(server, make_options):
    server.enqueue(script.tool_calls([("get_weather", {"city": "Paris"}),
                                      ("get_weather", {"city": "Oslo"})],
                                     text_before="Checking both.", ids=["a", "b"]),
                   script.text("Paris sunny, Oslo sunny."))
    async with Client(make_options(tools=[get_weather], auto_execute_tools=True)) as client:
        await client.query("Weather in Paris and Oslo?")
        items = await collect(client)
        history = client.history
    kinds = [type(i).__name__ for i in items]
    assert kinds.count("ToolUseBlock") == 2 and kinds.count("ToolResultBlock") == 2
    results = [i for i in items if isinstance(i, ToolResultBlock)]
    assert [r.content for r in results] == ["Sunny in Paris", "Sunny in Oslo"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
    continuation = server.requests[1]["messages"]
    assert continuation[-1]["role"] == "tool" and continuation[-2]["tool_call_id"] == "a"


async def test_tool_calls_of_one_message_run_concurrently(server, make_options):
    started = []
    both_started = asyncio.Event()

    @tool("wait_for_peer", "w", {"n": int})
    async def wait_for_peer(args):
        started.append(args["n"])
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 5)  # deadlocks if run one by one
        return f"done {args['n']}"

    server.enqueue(script.tool_calls([("wait_for_peer", {"n": 1}), ("wait_for_peer", {"n": 2})]),
                   script.text("ok"))
    async with Client(make_options(tools=[wait_for_peer], auto_execute_tools=True)) as client:
        await client.query("go")
        items = await collect(client)
    results = [i.content for i in items if isinstance(i, ToolResultBlock)]
    assert results == ["done 1", "done 2"]


async def test_tool_failures_become_errors_for_the_model(server, make_options):
    @tool("explode", "e", {})
    def explode(args):
        raise RuntimeError("disk on fire")

    server.enqueue(script.tool_calls([("explode", {}), ("nope", {}),
                                      ("get_weather", {"town": "x"}),
                                      ("get_weather", "{broken")], ids=["e", "n", "v", "j"]),
                   script.text("I see the errors."))
    options = make_options(tools=[explode, get_weather], auto_execute_tools=True)
    async with Client(options) as client:
        await client.query("go")
        items = await collect(client)
        history = client.history
    errors = [i for i in items if isinstance(i, ToolUseError)]
    assert len(errors) == 4
    text = " | ".join(e.error for e in errors)
    assert "disk on fire" in text and "no tool named 'nope'" in text
    assert "'city' is a required property" in text and "not valid JSON" in text
    tool_messages = {m["tool_call_id"]: m["content"] for m in history if m["role"] == "tool"}
    assert set(tool_messages) == {"e", "n", "v", "j"}
    assert all(c.startswith("Error:") for c in tool_messages.values())
    assert text_of(items).endswith("I see the errors.")


async def test_iteration_limit_keeps_history_valid(server, make_options):
    for city in ("A", "B", "C"):
        server.enqueue(script.tool_calls([("get_weather", {"city": city})]))
    options = make_options(tools=[get_weather], auto_execute_tools=True, max_tool_iterations=2)
    async with Client(options) as client:
        await client.query("loop")
        items = await collect(client)
        history = client.history
        assert "limit of 2 tool rounds" in items[-2].error
        server.enqueue(script.text("fine"))
        await client.query("next")
        await collect(client)
    calls = [c["id"] for m in history if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert sorted(calls) == sorted(answered) and len(calls) == 3
    assert "iteration limit" in history[-1]["content"]
    assert len(server.requests) == 4


async def test_doom_loop_corrects_once_then_stops_identical_calls(server, make_options):
    for _ in range(5):
        server.enqueue(script.tool_calls([("get_weather", {"city": "Same"})]))
    options = make_options(tools=[get_weather], auto_execute_tools=True, max_tool_iterations=10)
    async with Client(options) as client:
        await client.query("loop")
        items = await collect(client)
        metadata = client.turn_metadata
    assert "3 times in a row" in items[-2].error and "identical calls" in items[-2].error
    assert len(server.requests) == 4  # two ran, the third was answered, the fourth stopped
    results = [i for i in items if isinstance(i, ToolResultBlock)]
    assert [r.is_error for r in results] == [False, False, True]
    assert results[2].content.startswith("Not executed: You called get_weather with the "
                                         "same arguments 3 times")
    # the model read the correction as the third call's result
    assert server.requests[3]["messages"][-1]["content"] == results[2].content
    assert metadata["loop_rule"] == "identical"


async def test_turn_in_progress_is_refused(server, make_options, gate):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "a"}), Gate(gate), f.finish("stop")]))
    async with Client(make_options()) as client:
        await client.query("x")
        stream = client.receive_messages()
        await stream.__anext__()
        with pytest.raises(TurnInProgressError):
            await client.query("y")
        gate.set()
        async for _ in stream:
            pass


async def test_interrupt_stops_stream_and_keeps_partial(server, make_options, gate):
    f = ChunkFactory()
    server.enqueue(Script([f.delta({"content": "partial "}), f.delta({"content": "answer"}),
                           Gate(gate), f.delta({"content": " never"}), f.finish("stop")]))
    async with Client(make_options()) as client:
        await client.query("long")
        received = []

        async def consume():
            async for item in client.receive_messages():
                received.append(item)

        task = asyncio.create_task(consume())
        while text_of(received) != "partial answer":
            await asyncio.sleep(0.005)
        await client.interrupt()
        await asyncio.wait_for(task, 2)  # bounded: a hang fails instead of blocking CI
        assert client.turn_metadata["interrupted"] is True
        assert client.history[-1] == {"role": "assistant", "content": "partial answer"}
        assert isinstance(received[-1], Usage)
        server.enqueue(script.text("usable again"))
        await client.query("next")
        assert text_of(await collect(client)) == "usable again"


async def test_interrupt_during_approval_leaves_no_open_calls(server, make_options):
    asked = asyncio.Event()

    async def never_answers(name, args, ctx):
        asked.set()
        await asyncio.sleep(3600)

    server.enqueue(script.tool_calls([("get_weather", {"city": "X"})]))
    options = make_options(tools=[get_weather], auto_execute_tools=True,
                           can_use_tool=never_answers)
    async with Client(options) as client:
        await client.query("go")
        task = asyncio.create_task(collect(client))
        await asyncio.wait_for(asked.wait(), 5)
        await client.interrupt()
        await asyncio.wait_for(task, 2)
        history = client.history
    assert history[-1]["role"] == "tool" and "interrupted" in history[-1]["content"]


async def test_connections_are_reused_across_turns(server, make_options):
    async with Client(make_options()) as client:
        for n in range(5):
            await client.query(f"turn {n}")
            await collect(client)
    assert server.connections_opened == 1


@pytest.mark.parametrize("raw", ['{"city": "Paris",}', "{'city': 'Paris'}"])
async def test_native_arguments_with_small_json_slips_are_repaired(server, make_options, raw):
    """A trailing comma or single quotes: the repair text-format calls get serves both paths."""
    server.enqueue(script.tool_calls([("get_weather", raw)], ids=["c1"]),
                   script.text("Sunny, then."))
    async with Client(make_options(tools=[get_weather], auto_execute_tools=True)) as client:
        await client.query("Weather in Paris?")
        items = await collect(client)
    assert not [i for i in items if isinstance(i, ToolUseError)]
    results = [i for i in items if isinstance(i, ToolResultBlock)]
    assert [r.content for r in results] == ["Sunny in Paris"]
    sent = server.requests[1]["messages"]
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert client.history[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'


async def test_native_arguments_cut_off_by_the_token_limit_are_not_repaired(server,
                                                                          make_options):
    server.enqueue(script.tool_calls([("get_weather", '{"city": "Paris", "days": 3')],
                                     finish_reason="length"))
    async with Client(make_options(tools=[get_weather])) as client:
        await client.query("Weather in Paris?")
        items = await collect(client)
    errors_seen = [i for i in items if isinstance(i, ToolUseError)]
    assert errors_seen and "cut off by the token limit" in errors_seen[0].error
