"""Sessions from code: resume by id, fork from a message, undo files, the query's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent import (
    AgentOptions,
    Client,
    MemoryHistory,
    ResultMessage,
    TextBlock,
    fork_history,
    query,
    tool,
)
from desktop_agent.store import NotFoundError, Store, StoreHistory
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.workspace import FileCheckpoints
from desktop_agent.workspace.checkpoints import CheckpointError, RestoreConflictError

pytestmark = pytest.mark.timeout(90)


def options(server: ScriptedServer, **more) -> AgentOptions:
    return AgentOptions(model="test-model", base_url=server.base_url, **more)


async def ask(client: Client, prompt: str) -> str:
    await client.query(prompt)
    return "".join([i.text async for i in client.receive_messages()
                    if isinstance(i, TextBlock)])


async def test_resume_by_id_from_the_data_folder_and_continue(store: Store, server) -> None:
    record = store.create_conversation("Trip", {"model": "test-model"})
    store.add_message(record.id, {"role": "user", "content": "Plan Lyon"})
    store.add_message(record.id, {"role": "assistant", "content": "Day 1: old town."})
    server.enqueue(script.text("Day 2: the hills."))
    session = StoreHistory.resume(record.id)  # the app's data folder: the test's own
    try:
        async with Client(options(server), session=session) as client:
            assert await ask(client, "And day 2?") == "Day 2: the hills."
    finally:
        session.close()
    assert [m["content"] for m in server.requests[0]["messages"]] == [
        "Plan Lyon", "Day 1: old town.", "And day 2?"]
    assert [r.message["content"] for r in store.active_path(record.id)][-1] == \
        "Day 2: the hills."


def test_resuming_an_unknown_id_says_so(store: Store) -> None:
    with pytest.raises(NotFoundError, match="No conversation 'nope' is stored"):
        StoreHistory.resume("nope")


async def test_fork_from_a_message_leaves_the_original_alone(store: Store, server) -> None:
    record = store.create_conversation("Trip", {"model": "test-model", "temperature": 0.2})
    first = store.add_message(record.id, {"role": "user", "content": "Plan Lyon"})
    store.add_message(record.id, {"role": "assistant", "content": "Day 1: old town."})
    store.add_message(record.id, {"role": "user", "content": "Make it longer"})
    server.enqueue(script.text("Paris instead: the Louvre."))
    forked = StoreHistory(store, record.id).fork(first.id)
    assert forked.conversation_id != record.id
    async with Client(options(server), session=forked) as client:
        assert await ask(client, "No, plan Paris") == "Paris instead: the Louvre."
    fork_record = store.get_conversation(forked.conversation_id)
    assert fork_record.title == "Trip (fork)" and fork_record.settings["temperature"] == 0.2
    assert [r.message["content"] for r in store.active_path(forked.conversation_id)] == [
        "Plan Lyon", "No, plan Paris", "Paris instead: the Louvre."]
    assert len(store.active_path(record.id)) == 3  # untouched
    with pytest.raises(NotFoundError, match="not on the active branch"):
        StoreHistory(store, record.id).fork("missing")


async def test_fork_any_history_store(server) -> None:
    source = MemoryHistory([{"role": "user", "content": "a"},
                            {"role": "assistant", "content": "b"},
                            {"role": "user", "content": "c"}])
    forked = await fork_history(source, keep=2)
    server.enqueue(script.text("d"))
    async with Client(options(server), session=forked) as client:
        await ask(client, "x")
    assert [m["content"] for m in forked.messages] == ["a", "b", "x", "d"]
    assert len(source.messages) == 3


def make_writer(folder: Path):
    @tool("write_file", "Write a file", {"path": str, "content": str}, edits_files=True)
    def write_file(args):
        (folder / args["path"]).write_text(args["content"])
        return "written"

    return write_file


async def test_rewind_files_puts_back_what_later_turns_changed(server, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("original\n")
    checkpoints = FileCheckpoints(folder, tmp_path / "checkpoints")
    server.enqueue(
        script.tool_calls([("write_file", {"path": "notes.txt", "content": "turn 1\n"})]),
        script.text("one"),
        script.tool_calls([("write_file", {"path": "new.txt", "content": "turn 2\n"})]),
        script.text("two"))
    opts = options(server, tools=[make_writer(folder)], auto_execute_tools=True,
                   file_checkpoints=checkpoints)
    async with Client(opts) as client:
        await ask(client, "first")
        await ask(client, "second")
        assert [len(t.changes) for t in checkpoints.changes()] == [1, 1]
        client.rewind_files(2)  # as before the second prompt
        assert (folder / "notes.txt").read_text() == "turn 1\n"
        assert not (folder / "new.txt").exists()
        (folder / "notes.txt").write_text("my own edit\n")
        with pytest.raises(RestoreConflictError, match=r"notes\.txt"):
            client.rewind_files(1)
        client.rewind_files(1, force=True)
        assert (folder / "notes.txt").read_text() == "original\n"
        with pytest.raises(CheckpointError, match="No tool round ran from turn 5"):
            client.rewind_files(5)


async def test_rewind_without_checkpoints_is_a_clear_error(server) -> None:
    from desktop_agent import ConfigurationError

    async with Client(options(server)) as client:
        with pytest.raises(ConfigurationError, match="file_checkpoints"):
            client.rewind_files(1)


async def test_the_result_says_turns_usage_stop_reason_and_structured_output(server) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    server.enqueue(script.text('{"name": "Paris"}'))
    run = query("Capital of France?", options(server), output_type=City)
    messages = [m async for m in run]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and run.result is result
    assert result.structured_output == City(name="Paris")
    assert result.subtype == "success" and result.total_cost_usd is None


async def test_a_limit_is_an_error_result(server) -> None:
    @tool("noop", "Do nothing", {"n": int})
    def noop(args):
        return "ok"

    server.enqueue(*[script.tool_calls([("noop", {"n": i})]) for i in range(4)])
    async with Client(options(server, tools=[noop], auto_execute_tools=True,
                              max_tool_iterations=2)) as client:
        await ask(client, "go")
        result = client.last_result
    assert (result.subtype, result.is_error, result.stop_reason) == (
        "error_max_turns", True, "tool_rounds")
    assert result.num_turns == 3
