"""Long agent runs on a small context: compaction, result budgets, prompt overhead.

Every test talks to a real ScriptedServer that refuses prompts over its
``max_prompt_tokens`` the way llama.cpp does (400 ``exceed_context_size_error``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop_agent import AgentOptions, Client
from desktop_agent.core import errors
from desktop_agent.core.context.compaction import DROPPED_NOTE, SUMMARY_HEADER
from desktop_agent.core.context.history_invariants import open_calls
from desktop_agent.core.context.summary_request import SUMMARY_INSTRUCTIONS
from desktop_agent.core.context.tokens import count_text_tokens, estimate_tokens
from desktop_agent.core.tooling.tools import Tool
from desktop_agent.core.types import CompactionBlock, TextBlock, ToolResultBlock, Usage
from desktop_agent.testing import ScriptedServer
from desktop_agent.testing import script as scripts

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango", "uniform", "victor", "whiskey", "xray"]


def chunk_text(n: int, tokens: int = 300) -> str:
    """About ``tokens`` tokens of text that differ per ``n``."""
    words = [f"{WORDS[(n + i) % len(WORDS)]}{i % 7}" for i in range(tokens)]
    text = " ".join(words)
    while count_text_tokens(text) > tokens:
        words.pop()
        text = " ".join(words)
    return text


def read_chunk_tool() -> Tool:
    def read_chunk(args: dict[str, Any]) -> str:
        return chunk_text(int(args["n"]))

    return Tool("read_chunk", "Read chunk n.", {"type": "object", "properties": {
        "n": {"type": "integer"}}, "required": ["n"]}, read_chunk)


def is_summary_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("content") == SUMMARY_INSTRUCTIONS


def agent_responder(summary_fails: bool = False):
    """A model that reads one chunk per user turn, then answers; it also summarises."""
    counter = {"turn": 0}

    def respond(body: dict[str, Any]) -> scripts.Script:
        if is_summary_request(body):
            if summary_fails:
                return scripts.error(400, "the summariser is unavailable")
            return scripts.text("The user asked for chunks one by one; each was read and "
                                "acknowledged. Nothing is left open.")
        last = body["messages"][-1]
        if last["role"] == "user":
            counter["turn"] += 1
            return scripts.tool_calls([("read_chunk", {"n": counter["turn"]})])
        return scripts.text(f"Chunk read; it starts with {WORDS[counter['turn'] % 24]}.")

    return respond


def assert_valid_history(history: list[dict[str, Any]]) -> None:
    """Every call answered, every result answering a call, no empty user message."""
    pending: set[str] = set()
    for message in history:
        if message["role"] == "assistant":
            assert not pending
            pending = {c["id"] for c in message.get("tool_calls") or ()}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in pending
            pending.discard(message["tool_call_id"])
        else:
            assert not pending
            assert message["role"] != "user" or message["content"].strip()
    assert not pending
    assert not open_calls(history)


def chat_requests(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if not is_summary_request(r)]


async def run_turns(client: Client, turns: int) -> list[Any]:
    items: list[Any] = []
    for turn in range(turns):
        await client.query(f"Please read chunk number {turn + 1} and tell me about it.")
        async for item in client.receive_messages():
            items.append(item)
        assert client.history[-1]["role"] == "assistant"
        assert client.history[-1]["content"].startswith("Chunk read")
    return items


@pytest.mark.parametrize("mode", ["summarise", "drop_oldest"])
async def test_forty_turns_fit_a_2048_context(server: ScriptedServer, make_options,
                                              mode: str) -> None:
    server.max_prompt_tokens = 2048
    server.responder = agent_responder()
    options = make_options(tools=[read_chunk_tool()], auto_execute_tools=True,
                           context_length=2048, max_tokens=256, compaction=mode,
                           system_prompt="You are a careful reading assistant.")
    async with Client(options) as client:
        items = await run_turns(client, 40)
        history = client.history

    # nothing was refused, and the history holds all of it, results whole
    assert max(server.prompt_tokens) <= 2048
    assert len(history) == 40 * 4
    assert_valid_history(history)
    results = [m["content"] for m in history if m["role"] == "tool"]
    assert results == [chunk_text(n) for n in range(1, 41)]
    # compaction happened in steps, not on every turn, and told the caller
    compactions = [i for i in items if isinstance(i, CompactionBlock)]
    assert 2 <= len(compactions) <= 16  # one every 2.5 turns at most
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    assert [c.messages for c in compactions] == sorted(c.messages for c in compactions)
    summaries = [r for r in server.requests if is_summary_request(r)]
    last_request = chat_requests(server)[-1]
    system = last_request["messages"][0]["content"]
    if mode == "summarise":
        assert len(summaries) == len(compactions)
        assert all(c.mode == "summarise" and c.summary for c in compactions)
        assert SUMMARY_HEADER in system and "chunks one by one" in system
    else:
        assert not summaries
        assert all(c.mode == "drop_oldest" and c.summary is None for c in compactions)
        assert DROPPED_NOTE.split("{n}")[1].split(";")[0] in system
    # each request the model saw is a valid conversation: calls paired with results
    for request in chat_requests(server):
        assert_valid_history([m for m in request["messages"] if m["role"] != "system"])


async def test_between_compactions_the_prompt_only_grows_at_its_end(
        server: ScriptedServer, make_options) -> None:
    """The server's prompt cache keeps matching: each request extends the last one."""
    server.max_prompt_tokens = 2048
    server.responder = agent_responder()
    options = make_options(tools=[read_chunk_tool()], auto_execute_tools=True,
                           context_length=2048, max_tokens=256)
    async with Client(options) as client:
        items = await run_turns(client, 12)
    assert any(isinstance(i, CompactionBlock) for i in items)
    requests = [r["messages"] for r in chat_requests(server)]
    extended = sum(1 for a, b in zip(requests, requests[1:], strict=False)
                   if b[:len(a)] == a)
    changed = len(requests) - 1 - extended
    compactions = sum(isinstance(i, CompactionBlock) for i in items)
    assert changed == compactions


async def test_a_failed_summary_falls_back_to_dropping(server: ScriptedServer,
                                                       make_options) -> None:
    server.max_prompt_tokens = 2048
    server.responder = agent_responder(summary_fails=True)
    options = make_options(tools=[read_chunk_tool()], auto_execute_tools=True,
                           context_length=2048, max_tokens=256)
    async with Client(options) as client:
        items = await run_turns(client, 10)
        assert_valid_history(client.history)
    compactions = [i for i in items if isinstance(i, CompactionBlock)]
    assert compactions and all(c.mode == "drop_oldest" for c in compactions)
    assert max(server.prompt_tokens) <= 2048


async def test_the_servers_refusal_compacts_and_retries_once(server: ScriptedServer,
                                                             make_options) -> None:
    """No context_length known: the 400 names n_ctx, the client compacts and retries."""
    server.max_prompt_tokens = 900
    server.responder = lambda body: scripts.text(
        "Summary." if is_summary_request(body) else "Parts 0 to 5 were about the alphabet.")
    long_history: list[dict[str, Any]] = []
    for n in range(6):
        long_history += [{"role": "user", "content": f"Tell me about part {n}."},
                         {"role": "assistant", "content": chunk_text(n, 200)}]
    options = make_options(max_tokens=128)
    async with Client(options) as client:
        client.message_history = long_history
        await client.query("And now summarise what you told me.")
        items = [i async for i in client.receive_messages()]
        assert len(client.history) == len(long_history) + 2  # nothing left the history
        assert client.history[-1]["content"] == "Parts 0 to 5 were about the alphabet."
    assert any(isinstance(i, CompactionBlock) for i in items)
    assert server.prompt_tokens[0] > 900 and server.prompt_tokens[-1] <= 900


async def test_compaction_off_leaves_the_error_to_the_caller(server: ScriptedServer,
                                                             make_options) -> None:
    server.max_prompt_tokens = 300
    options = make_options(context_length=300, compaction="off", max_tokens=64)
    async with Client(options) as client:
        client.message_history = [{"role": "user", "content": chunk_text(1, 200)},
                                  {"role": "assistant", "content": chunk_text(2, 200)}]
        await client.query("Go on.")
        with pytest.raises(errors.ContextTooLongError):
            async for _ in client.receive_messages():
                pass
    assert len(server.requests) == 1


async def test_a_changed_history_forgets_the_old_summary(server: ScriptedServer,
                                                         make_options) -> None:
    server.max_prompt_tokens = 2048
    server.responder = agent_responder()
    options = make_options(tools=[read_chunk_tool()], auto_execute_tools=True,
                           context_length=2048, max_tokens=256)
    async with Client(options) as client:
        await run_turns(client, 8)
        assert client.context_keeper.covered > 0
        client.message_history = client.history[:2] + [
            {"role": "tool", "tool_call_id": client.history[1]["tool_calls"][0]["id"],
             "content": "edited"}, {"role": "assistant", "content": "ok"}]
        await client.query("Start again.")
        async for _ in client.receive_messages():
            pass
    assert client.context_keeper.covered == 0
    last = chat_requests(server)[-1]["messages"]
    assert "edited" in json.dumps(last) and SUMMARY_HEADER not in json.dumps(last)


# -- tool results within a budget ------------------------------------------------------
async def test_a_big_result_reaches_the_model_cut_with_a_way_to_read_on(
        server: ScriptedServer, make_options) -> None:
    big = "\n".join(f"line {i}: " + " ".join(WORDS) for i in range(1, 400))

    def read_file(args: dict[str, Any]) -> str:
        return big

    tool = Tool("read_file", "Read a file.", {"type": "object", "properties": {
        "path": {"type": "string"}, "offset": {"type": "integer"}}}, read_file)
    server.enqueue(scripts.tool_calls([("read_file", {"path": "big.txt", "offset": 1})]),
                   scripts.text("Done."))
    options = make_options(tools=[tool], auto_execute_tools=True, context_length=4096,
                           max_tokens=256)
    async with Client(options) as client:
        await client.query("Read big.txt")
        items = [i async for i in client.receive_messages()]
        history = client.history
    card = next(i for i in items if isinstance(i, ToolResultBlock))
    assert card.content == big  # the card and the history keep it whole
    assert history[2]["content"] == big
    sent = server.requests[1]["messages"][-1]["content"]
    assert count_text_tokens(sent) <= 4096 // 4
    assert sent.startswith("line 1: ")
    assert "Result truncated" in sent and "read_file again with offset=" in sent
    shown = sent.split("\n[Result truncated")[0]
    next_line = shown.count("\n") + 1
    assert f"offset={next_line}" in sent
    assert big.splitlines()[next_line - 1].startswith(f"line {next_line}:")


async def test_without_a_context_length_results_get_4000_tokens(server: ScriptedServer,
                                                                make_options) -> None:
    big = " ".join(WORDS) * 600

    tool = Tool("dump", "Dump.", {"type": "object", "properties": {}}, lambda args: big)
    server.enqueue(scripts.tool_calls([("dump", {})]), scripts.text("Done."))
    async with Client(make_options(tools=[tool], auto_execute_tools=True)) as client:
        await client.query("dump it")
        async for _ in client.receive_messages():
            pass
    sent = server.requests[1]["messages"][-1]["content"]
    assert 3000 < count_text_tokens(sent) <= 4000 < count_text_tokens(big)
    assert "Ask for a smaller part" in sent


# -- prompt overhead -------------------------------------------------------------------
def test_the_seven_builtin_schemas_cost_at_most_400_tokens(tmp_path) -> None:
    from desktop_agent.core.tooling.builtin import BUILTIN_TOOL_NAMES, builtin_tools
    from desktop_agent.core.tooling.schema_cost import schema_costs

    tools = builtin_tools(tmp_path)
    assert [t.name for t in tools] == list(BUILTIN_TOOL_NAMES)
    total = estimate_tokens([], tools=tools)
    assert total <= 400
    costs = schema_costs(tools)
    assert sum(c.tokens for c in costs) == total
    assert {c.group for c in costs} == {"built-in"}
    # every parameter is still described to the model where its meaning is not obvious
    read_file = next(t for t in tools if t.name == "read_file").to_openai_format()
    assert "offset" in read_file["function"]["parameters"]["properties"]


def test_only_the_enabled_tools_are_sent_in_a_stable_order(tmp_path) -> None:
    from desktop_agent.core.tooling.builtin import builtin_tools

    chosen = builtin_tools(tmp_path, include=("grep", "read_file"))
    assert [t.name for t in chosen] == ["read_file", "grep"]


async def test_hello_sends_nothing_volatile_before_the_conversation(
        server: ScriptedServer, make_options) -> None:
    """Two fresh clients send byte-identical prompts: nothing volatile in the prefix."""
    for _ in range(2):
        async with Client(make_options(system_prompt="Be brief.")) as client:
            await client.query("hello")
            items = [i async for i in client.receive_messages()]
            assert isinstance(items[-1], Usage)
            assert any(isinstance(i, TextBlock) for i in items)
    first, second = server.requests
    assert first["messages"] == second["messages"] == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]


def test_options_reject_unknown_compaction_modes() -> None:
    with pytest.raises(errors.ConfigurationError):
        AgentOptions(model="m", base_url="http://x/v1", compaction="sometimes")  # type: ignore[arg-type]
    with pytest.raises(errors.ConfigurationError):
        AgentOptions(model="m", base_url="http://x/v1", compaction_threshold=1.5)


async def test_the_servers_own_count_calibrates_the_estimate(server: ScriptedServer,
                                                             make_options) -> None:
    """A model whose tokenizer and template count twice ours: no request is ever refused."""
    server.max_prompt_tokens = 1024  # what 2,048 of its tokens are in ours
    plain = agent_responder()

    def respond(body: dict[str, Any]) -> scripts.Script:
        reply = plain(body)
        size = estimate_tokens(body["messages"], tools=body.get("tools"))
        for step in reply.steps:
            data = getattr(step, "data", None)
            if isinstance(data, dict) and data.get("usage"):
                data["usage"]["prompt_tokens"] = 2 * size
        return reply

    server.responder = respond
    options = make_options(tools=[read_chunk_tool()], auto_execute_tools=True,
                           context_length=2048, max_tokens=128)
    async with Client(options) as client:
        items = await run_turns(client, 12)
        assert_valid_history(client.history)
    assert any(isinstance(i, CompactionBlock) for i in items)
    assert max(server.prompt_tokens) <= 1024
