"""CPU per streamed text piece in a turn's own step: the core reading it, the session recording it.

    python bench/piece_cpu.py [--streams 10] [--tokens 2000] [--delay 0.001]
        [--rounds 3] [--loop uvloop|asyncio] [--only session|client]

Each text piece a model streams costs the event loop one step of the turn's task:
the core reads the chunk from the openai SDK's response and turns it into a
``TextBlock``, the session writes it to the reply being recorded and reports a
``TextDelta`` to its listeners. In ``serve`` that step is part of every event's
latency at 50 streams (issue 48: the loop's queue), and in the window it is the
loop the transcript paints from. This measures it alone, without a front end:
``--streams`` conversations (``ConversationSession`` on a SQLite store in a
temporary data folder, one listener that counts) each run a turn whose reply is
``--tokens`` one-word pieces, one every ``--delay`` seconds, from the scripted
model server in its own process (its CPU is not counted); and, for the core
alone, as many ``Client`` turns reading the same replies (``--only`` runs one of
the two). Printed: CPU of this process (user + system) and of the event loop's
thread per piece, the median of ``--rounds`` rounds after a warm-up round.
Long replies keep a turn's start and end to a µs or two of each piece's figure.

The loop is uvloop by default, as ``serve`` runs. CPU time, not wall time: the
machine it runs on may be shared. To compare two trees, run this file from one
with ``PYTHONPATH`` naming the other, alternating (the first line printed says
which tree ran).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import server_load  # the bench's own model-server helper (a process of its own)

Round = Callable[[], Awaitable[None]]


def _cpu() -> tuple[float, float]:
    return time.process_time(), time.thread_time()


async def _measured(rounds: int, one_round: Round) -> list[tuple[float, float]]:
    """CPU seconds (process, loop thread) of each round after a warm-up round."""
    await one_round()
    spent = []
    for _ in range(rounds):
        gc.collect()
        process, thread = _cpu()
        await one_round()
        after = _cpu()
        spent.append((after[0] - process, after[1] - thread))
    return spent


async def sessions(url: str, folder: Path, streams: int,
                   rounds: int) -> list[tuple[float, float]]:
    """Rounds of ``streams`` session turns at once, each streaming one whole reply."""
    from desktop_agent.core.wire.connection_pool import ConnectionPool
    from desktop_agent.session.approvals.approval_broker import ApprovalAnswer, ToolCallQuestion
    from desktop_agent.session.conversation import ConversationSession
    from desktop_agent.session.events import SessionEvent, TextDelta
    from desktop_agent.session.tools.config import AppConfig
    from desktop_agent.session.tools.tool_catalog import ToolCatalog
    from desktop_agent.session.turn.options import SessionEnvironment
    from desktop_agent.store import Store

    async def refuse(_question: ToolCallQuestion) -> ApprovalAnswer:
        raise RuntimeError("no tool is called here")

    pieces = [0]

    def listener(event: SessionEvent) -> None:
        if type(event) is TextDelta:
            pieces[0] += 1

    store = Store.open(folder / "conversations.sqlite3")
    config = AppConfig(folder / "config.json")
    pool = ConnectionPool()
    env = SessionEnvironment(tools=ToolCatalog([], include_builtin=True, config=config,
                                               workdirs_root=folder / "workdirs"),
                             config=config, connection_pool=pool)
    made: list[ConversationSession] = []
    for _ in range(streams):
        record = store.create_conversation(title="bench", settings={
            "base_url": url, "model": "test-model"})
        made.append(ConversationSession(store, record.id, env, refuse, owner="bench"))
        made[-1].subscribe(listener)

    async def turn(session: ConversationSession) -> None:
        session.send("go")
        assert session.task is not None
        await session.task

    async def one_round() -> None:
        await asyncio.gather(*(turn(s) for s in made))

    try:
        spent = await _measured(rounds, one_round)
    finally:
        for session in made:
            await session.close()
        await env.tools.aclose()
        await pool.aclose()
        store.close()
    print(f"  session: {pieces[0]} text pieces reported in all")
    return spent


async def clients(url: str, _folder: Path, streams: int,
                  rounds: int) -> list[tuple[float, float]]:
    """Rounds of ``streams`` core ``Client`` turns at once (no session, no store)."""
    from desktop_agent import AgentOptions, Client
    from desktop_agent.core import ConnectionPool

    pool = ConnectionPool()
    made = [Client(AgentOptions(model="test-model", base_url=url, connection_pool=pool))
            for _ in range(streams)]

    async def turn(client: Client) -> None:
        await client.query("go")
        async for _ in client.receive_messages():
            pass

    async def one_round() -> None:
        await asyncio.gather(*(turn(c) for c in made))

    try:
        return await _measured(rounds, one_round)
    finally:
        for client in made:
            await client.close()
        await pool.aclose()


def _run(coroutine: Awaitable[list[tuple[float, float]]], loop: str) -> list[tuple[float, float]]:
    if loop == "uvloop":
        import uvloop

        return uvloop.run(coroutine)  # type: ignore[arg-type, no-any-return]
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.001)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument("--only", choices=("session", "client"))
    args = parser.parse_args()
    import desktop_agent

    print(f"tree: {Path(desktop_agent.__file__).parent.parent}; loop: {args.loop}; "
          f"{args.streams} streams x {args.tokens} pieces, one every {args.delay * 1000:g} ms")
    pieces = args.streams * args.tokens
    ways: dict[str, Callable[..., Awaitable[list[tuple[float, float]]]]] = {
        "session": sessions, "client": clients}
    model, url = server_load._start_model_server(args.tokens, args.delay)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["DESKTOP_AGENT_DATA_DIR"] = tmp
            for name, way in ways.items():
                if args.only not in (None, name):
                    continue
                spent = _run(way(url, Path(tmp), args.streams, args.rounds), args.loop)
                process = statistics.median(s[0] for s in spent) / pieces * 1e6
                thread = statistics.median(s[1] for s in spent) / pieces * 1e6
                print(f"{name:>8}: {process:6.1f} µs CPU per piece (loop thread {thread:.1f}); "
                      f"rounds: " + ", ".join(f"{s[0] / pieces * 1e6:.1f}" for s in spent))
    finally:
        model.communicate("", timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
