"""What one turn costs a ``serve`` replica (on PostgreSQL: and its database) in CPU.

``bench/server_load.py`` prints the server side's CPU per turn started, but read
from the second or so in which 150 turns start while the first ones already
stream, on a machine the load generator and the model server share: it moves by
a millisecond or two from run to run. This runs turns alone, so a change to what
a turn's start and end cost can be read to a few tenths of a millisecond:
``desktop-agent serve`` (a subprocess, as in production) on the database given
(without ``--database``: on SQLite in a temporary data folder),
the scripted model server answering each turn with two text pieces at once, and
``--turns`` conversations each run once (``POST /run``), ``--batch`` at a time,
with no SSE reader. The replica's CPU (``/proc``) and that of its database's
backends are read before and after, once the replica is idle again, and divided
by the number of turns; a turn run first, not counted, warms up what a process
does once (imports, the tool-call mode question).

Usage::

    python bench/turn_cpu.py [--database postgresql://...] [--turns 150] [--batch 50]

The replica runs the code of the folder it is started from (``python -m`` puts the
working folder first on the path): to compare two trees, run it from outside both
with ``PYTHONPATH`` naming one, alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_load import (
    _cpu_seconds,
    _CpuSampler,
    _free_port,
    _start_model_server,
    _start_server,
)

KEY = "turn-cpu-bench-key-0123456789abcdef"


QUIET_SECONDS = 2.0
"""How long the replica's CPU time must stay flat for its turns to count as over.

Half a second was too short: turns starting together wait in the start pacer
(:mod:`desktop_agent.server.start_pacer`) between their steps, and on a busy
machine a replica with only paced steps left used under 4 % of a CPU for half
a second and the batch was taken for done."""


async def _idle(pid: int) -> None:
    """Wait until the replica's CPU time stops growing (its turns are over)."""
    last = _cpu_seconds(pid) or 0.0
    quiet = 0.0
    while quiet < QUIET_SECONDS:
        await asyncio.sleep(0.5)
        now = _cpu_seconds(pid) or 0.0
        quiet = quiet + 0.5 if now - last < 0.02 else 0.0
        last = now


async def _run(base_url: str, model_url: str, pid: int, database: str | None,
               turns: int, batch: int) -> tuple[float, float]:
    settings = {"base_url": model_url, "model": "test-model"}
    sampler = _CpuSampler([pid], database)
    async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {KEY}"},
                                 timeout=120, limits=httpx.Limits(max_connections=batch)) as client:
        ids = []
        for _ in range(turns + 1):
            made = await client.post("/conversations", json={"title": "cpu", "settings": settings})
            ids.append(made.raise_for_status().json()["id"])
        warm, ids = ids[0], ids[1:]
        (await client.post(f"/conversations/{warm}/run", json={"message": "go"})).raise_for_status()
        await _idle(pid)
        replica, database_cpu = _cpu_seconds(pid) or 0.0, sampler._backends()
        for start in range(0, turns, batch):
            answers = await asyncio.gather(*(
                client.post(f"/conversations/{cid}/run", json={"message": "go"})
                for cid in ids[start:start + batch]))
            for answer in answers:
                answer.raise_for_status()
            await _idle(pid)
        replica = (_cpu_seconds(pid) or 0.0) - replica
        database_cpu = sampler._backends() - database_cpu
        for cid in ids:  # every turn answered: the figures are of whole turns
            messages = (await client.get(f"/conversations/{cid}/messages")).json()["messages"]
            if not any(m["role"] == "assistant" and m["status"] == "complete"
                       for m in messages):
                raise SystemExit(f"conversation {cid} has no complete reply: {messages}")
    return replica / turns, database_cpu / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=None,
                        help="a PostgreSQL URL (an empty database); default: SQLite")
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--batch", type=int, default=50, help="turns started together")
    args = parser.parse_args()
    model, model_url = _start_model_server(2, 0.0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            port = _free_port()
            server = _start_server(Path(tmp), port, KEY, database=args.database)
            began = time.perf_counter()
            try:
                replica, database = asyncio.run(_run(
                    f"http://127.0.0.1:{port}", model_url, server.pid, args.database,
                    args.turns, args.batch))
            finally:
                server.terminate()
                server.wait(30)
    finally:
        model.communicate("", timeout=30)
    where = "PostgreSQL" if args.database else "SQLite"
    print(f"{args.turns} turns on one replica on {where}, {args.batch} started together, "
          f"each a prompt and a two-piece reply, no SSE reader "
          f"({time.perf_counter() - began:.1f} s): CPU per turn: replica {replica * 1000:.2f} ms"
          + (f", PostgreSQL {database * 1000:.2f} ms" if args.database else ""))


if __name__ == "__main__":
    main()
