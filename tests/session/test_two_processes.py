"""Two processes on one conversation: one turn at a time, and the tree never forks."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.store import ConversationBusyError, Store
from desktop_agent.testing import ScriptedServer, script
from desktop_agent.testing.script import Pause, Script

ACTOR = Path(__file__).with_name("session_actor_process.py")


async def test_a_turn_in_another_process_makes_this_one_wait(
        make_session: Any, model_server: ScriptedServer, store: Store,
        data_dir: Path) -> None:
    slow = script.text("Reply from the other process.")
    model_server.enqueue(Script([Pause(1.5), *slow.steps]), script.text("My reply."))
    session = make_session(tools=[])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    other = await asyncio.create_subprocess_exec(
        sys.executable, str(ACTOR), str(data_dir / "conversations.sqlite3"),
        session.conversation_id, "from the other process",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        assert other.stdout is not None
        assert (await other.stdout.readline()).decode().strip() == "SENT"
        for _ in range(500):
            if store.turn_lease_holder(session.conversation_id):
                break
            await asyncio.sleep(0.01)
        assert store.turn_lease_holder(session.conversation_id) == "other-process"
        with pytest.raises(ConversationBusyError):
            session.send("from this process")
        out, err = await asyncio.wait_for(other.communicate(), 60)
        assert out.decode().strip() == "DONE complete", err.decode()
    finally:
        if other.returncode is None:
            other.kill()
            await other.wait()

    session.send("from this process")
    for _ in range(1000):
        if not session.busy:
            break
        await asyncio.sleep(0.01)
    path = store.active_path(session.conversation_id)
    assert [r.message.get("content") for r in path] == [
        "from the other process", "Reply from the other process.",
        "from this process", "My reply."]
    assert store.count_messages(session.conversation_id) == 4  # nothing forked
    assert [m["content"] for m in model_server.requests[1]["messages"]] == [
        "from the other process", "Reply from the other process.", "from this process"]
    await session.close()
