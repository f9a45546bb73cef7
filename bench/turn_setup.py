"""What starting a turn costs the event loop, per conversation.

When many conversations start a turn at once (a REST client fanning out, the
window with several tabs), each turn's set-up runs on the one event loop and
every stream already open waits for it. This measures, with ``--conversations``
sessions on a real store against the scripted model server (in this process):

- building a turn's options (settings, secrets, the built-in tools bound to the
  conversation's folder, rules), per conversation;
- the event loop's CPU time for a whole turn that answers with one text piece
  (options, the turn lease, the request, recording the reply), per conversation.

Everything a turn imports or probes once per process is warmed up first, as
``desktop-agent serve`` does.

Usage::

    python bench/turn_setup.py [--conversations 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path


async def _measure(conversations: int, folder: Path) -> tuple[float, float]:
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ToolCallQuestion
    from desktop_agent.session.conversation import ConversationSession
    from desktop_agent.session.tools.config import AppConfig
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.session.turn.options import SessionEnvironment, build_options
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script

    async def refuse(_question: ToolCallQuestion) -> ApprovalAnswer:
        raise RuntimeError("no tool is called here")

    store = Store.open(folder / "conversations.sqlite3")
    config = AppConfig(folder / "config.json")
    pool = ConnectionPool()  # one per model server, as the window and the REST server keep
    env = SessionEnvironment(tools=ToolCatalog([], include_builtin=True, config=config,
                                               workdirs_root=folder / "workdirs"),
                             config=config, connection_pool=pool)
    sessions: list[ConversationSession] = []
    try:
        with ScriptedServer() as server:
            for _ in range(conversations + 1):
                record = store.create_conversation(title="bench", settings={
                    "base_url": server.base_url, "model": "test-model"})
                sessions.append(ConversationSession(store, record.id, env, refuse,
                                                    owner="bench"))
            server.enqueue(script.text("warm"))
            sessions[0].send("go")  # the first turn of the process, not measured
            assert sessions[0].task is not None
            await sessions[0].task
            measured = sessions[1:]

            began = time.perf_counter()
            for session in measured:
                await build_options(session.conversation_id, session.settings, env,
                                    session.broker)
            options = (time.perf_counter() - began) / len(measured)

            for _ in measured:
                server.enqueue(script.text("hello"))
            cpu = time.thread_time()
            for session in measured:
                session.send("go")
            await asyncio.gather(*(s.task for s in measured if s.task is not None))
            turn = (time.thread_time() - cpu) / len(measured)
    finally:
        for session in sessions:
            await session.close()
        await env.tools.aclose()
        await pool.aclose()
        store.close()
    return options, turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DESKTOP_AGENT_DATA_DIR"] = tmp
        from desktop_agent.session.turn.warm_up import warm_up_turns

        warm_up_turns()
        options: list[float] = []
        turns: list[float] = []
        for round_number in range(args.rounds):
            folder = Path(tmp) / f"round-{round_number}"
            folder.mkdir()
            built, turn = asyncio.run(_measure(args.conversations, folder))
            options.append(built)
            turns.append(turn)
    print(f"conversations: {args.conversations}, rounds: {args.rounds} (median shown)")
    print(f"building a turn's options: {statistics.median(options) * 1000:.3f} ms "
          "per conversation")
    print(f"a one-piece turn, event-loop CPU: {statistics.median(turns) * 1000:.3f} ms "
          "per conversation")


if __name__ == "__main__":
    main()
