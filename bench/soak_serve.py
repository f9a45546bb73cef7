"""Memory of ``desktop-agent serve`` over many turns: flat while busy, back down when idle.

Starts ``desktop-agent serve`` as a subprocess (its own interpreter, as in
production) on a temporary data folder, and the scripted model server from
``desktop_agent.testing`` in another subprocess. ``--conversations`` clients
each create a conversation (``bash`` and ``write_file`` allowed, no approval
asked) and keep its SSE stream open for the whole run, as a follower does,
while they run turns one after another. Each reply streams about ``--chars``
characters of markdown with a code block in ``--pieces`` pieces; every third
turn the model first calls ``write_file`` (a 2 KB file) and ``bash`` printing
2,000 lines, run for real (in the sandbox when ``serve`` has one). Compaction is
on, as in the window's soak: ``drop_oldest`` at a ``--context-tokens`` window
(8,192 by default; 0 states none, so every turn carries its whole history).

First a warm-up: one turn per conversation, then the streams close and the
bench waits for the server's idle eviction (``--idle-seconds``). The RSS then is
the start: the code every turn needs is loaded, no conversation is held. Then
the soak: turns until ``--turns`` or ``--minutes``, the server's RSS every 50
turns; then the streams close again and, after the idle eviction, the RSS is
taken once more.

Prints the RSS samples, the slope over the second half of the soak (least
squares, MB per 1,000 turns), the RSS after the idle eviction against the
start, and the data folder's growth per 1,000 turns. With ``--tracemalloc`` the server
runs with allocation tracing (slower) and the bench prints the source lines whose
live allocations grew most between the first and the last sample (the server
dumps a snapshot on ``SIGUSR1``). The exit status is 0 when
both are under their targets (slope <= 5 MB per 1,000 turns; back within 10 %
of the start), 1 when over.

Usage::

    python bench/soak_serve.py [--conversations 20] [--turns 3000] [--minutes M]
                               [--chars 7000] [--pieces 300] [--context-tokens 8192]
                               [--idle-seconds 10] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import httpx

SLOPE_TARGET_MB = 5.0
"""Most the RSS may grow per 1,000 turns over the second half."""

EVICTION_TARGET = 0.10
"""How far above its start the RSS may stay after the idle eviction."""

SAMPLE_EVERY = 50
"""Turns between RSS samples."""

_MODEL_SERVER = """
import json, sys
from desktop_agent.testing import ScriptedServer, script
chars, pieces = int(sys.argv[1]), int(sys.argv[2])
line = "Some *markdown* with `code` and a [link](https://example.org) in it. "
prose = (line * (chars // 2 // len(line) + 1))[: chars // 2]
code = "\\n".join(f"    total += compute({n}, factor={n % 7})" for n in range(chars // 2 // 40))
reply = f"## Answer\\n\\n{prose}\\n\\n```python\\ndef run():\\n    total = 0\\n{code}\\n```\\n"
note = "notes line of a file written by the model\\n" * 50

def respond(body):
    messages = body.get("messages", [])
    last = messages[-1] if messages else {}
    if last.get("role") == "user" and "with tools" in str(last.get("content")):
        name = f"notes_{len(messages)}.md"
        return script.tool_calls([
            ("write_file", {"path": name, "content": note}),
            ("bash", {"command": "seq 1 2000 | sed 's/^/output line /'"})])
    return script.text(reply, pieces)

with ScriptedServer() as server:
    server.responder = respond
    print(server.base_url, flush=True)
    sys.stdin.read()
"""

_TRACED_SERVE = """
import os, runpy, signal, sys, tracemalloc
tracemalloc.start(int(sys.argv[1]))
path = sys.argv[2]

def dump(*_):
    tracemalloc.take_snapshot().dump(path + ".part")
    os.replace(path + ".part", path)

signal.signal(signal.SIGUSR1, dump)
sys.argv = ["desktop_agent", *sys.argv[3:]]
runpy.run_module("desktop_agent", run_name="__main__")
"""
"""``serve`` with allocation tracing; each SIGUSR1 writes a snapshot to the given path."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    """Resident memory of a process (Linux /proc), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc: this bench needs Linux")


def folder_mb(folder: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += (Path(root) / name).lstat().st_size
    return total / 2**20


def _folder_parts(folder: Path) -> dict[str, float]:
    """MB per top-level entry of the data folder (the database, checkpoints/, workdirs/...)."""
    parts: dict[str, float] = {}
    for entry in folder.iterdir():
        size = folder_mb(entry) if entry.is_dir() else entry.lstat().st_size / 2**20
        parts[entry.name] = size
    return parts


def _slope_per_1000(samples: list[tuple[int, float]]) -> float:
    """Least-squares slope of RSS over turns, in MB per 1,000 turns."""
    if len(samples) < 2:
        return 0.0
    xs = [float(turns) for turns, _ in samples]
    ys = [rss for _, rss in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var


class _Soak:
    """The clients: one per conversation, each with its SSE stream open while it runs turns."""

    def __init__(self, base_url: str, key: str, model_url: str, server_pid: int,
                 context_tokens: int) -> None:
        self.base_url = base_url
        self.context_tokens = context_tokens
        self.key = key
        self.model_url = model_url
        self.server_pid = server_pid
        self.turns = 0
        self.samples: list[tuple[int, float]] = []
        self.events = 0
        self.tool_results = 0
        self.tool_errors: list[str] = []
        self.stop_at = float("inf")
        self.turn_limit = 0
        self.last_ids: dict[str, str] = {}  # conversation -> the last event id its stream read
        self.snapshot_path: Path | None = None  # set with --tracemalloc
        self.snapshots: list[tuple[int, tracemalloc.Snapshot]] = []

    async def create(self, client: httpx.AsyncClient, count: int) -> list[str]:
        ids = []
        for n in range(count):
            settings: dict[str, object] = {
                "base_url": self.model_url, "model": "test-model",
                "tools": ["bash", "write_file"], "confirm_tools": False}
            if self.context_tokens:
                settings |= {"context_length": self.context_tokens, "compaction": "drop_oldest"}
            made = await client.post("/conversations", json={
                "title": f"soak {n}", "settings": settings})
            ids.append(made.raise_for_status().json()["id"])
        return ids

    async def follow_and_run(self, client: httpx.AsyncClient, cid: str, turns: int | None) -> None:
        """Open the stream, then run turns (``turns``, or until the soak's limits)."""
        own = 0
        resume = {"Last-Event-ID": self.last_ids[cid]} if cid in self.last_ids else {}
        async with client.stream("GET", f"/conversations/{cid}/events/stream", headers=resume,
                                 timeout=httpx.Timeout(None, connect=60)) as response:
            response.raise_for_status()
            lines = response.aiter_lines()
            while turns is None or own < turns:
                if turns is None and (self.turns >= self.turn_limit
                                      or time.monotonic() >= self.stop_at):
                    return
                self.turns += 1
                own += 1
                number = self.turns
                message = "go with tools" if number % 3 == 0 else "go"
                ran = await client.post(f"/conversations/{cid}/run", json={"message": message})
                ran.raise_for_status()
                async for line in lines:
                    if line.startswith("id:"):
                        self.last_ids[cid] = line[3:].strip()
                    elif line.startswith("data:"):
                        self.events += 1
                        if line.startswith('data: {"id"') and '"type": "tool_result"' in line:
                            self.tool_results += 1
                            if '"is_error": true' in line:
                                self.tool_errors.append(line[:300])
                        if '"state": "idle"' in line:
                            if '"outcome": "complete"' not in line:
                                raise SystemExit(f"a turn of {cid} failed: {line}")
                            break
                if turns is None and number % SAMPLE_EVERY == 0:
                    self.samples.append((number, rss_mb(self.server_pid)))
                    print(f"  {number:>6} turns: RSS {self.samples[-1][1]:7.1f} MB", flush=True)
                    if self.snapshot_path is not None:
                        self.snapshots.append((number, await asyncio.to_thread(
                            _snapshot, self.server_pid, self.snapshot_path)))

    async def round(self, ids: list[str], turns: int | None) -> None:
        async with httpx.AsyncClient(base_url=self.base_url, timeout=120,
                                     headers={"Authorization": f"Bearer {self.key}"},
                                     limits=httpx.Limits(max_connections=4 * len(ids))) as client:
            await asyncio.gather(*(self.follow_and_run(client, cid, turns) for cid in ids))


def _snapshot(pid: int, path: Path) -> tracemalloc.Snapshot:
    """Ask the traced server for a snapshot and read it once it is written whole (blocking)."""
    path.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    while not path.exists():  # written under another name, then renamed: whole when seen
        time.sleep(0.5)
    return tracemalloc.Snapshot.load(str(path))


def print_growth(first: tuple[int, tracemalloc.Snapshot],
                 last: tuple[int, tracemalloc.Snapshot]) -> None:
    """The source lines whose live allocations grew most between two samples."""
    turns = max(1, last[0] - first[0])
    print(f"tracemalloc: growth by line from turn {first[0]} to {last[0]} (per 1,000 turns)")
    filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
    newer, older = last[1].filter_traces(filters), first[1].filter_traces(filters)
    for stat in newer.compare_to(older, "lineno")[:20]:
        frame = stat.traceback[0]
        print(f"  {stat.size_diff * 1000 / turns / 2**20:+8.2f} MB "
              f"{stat.count_diff * 1000 / turns:+9.0f} blocks  {frame.filename}:{frame.lineno}")


def _start_model_server(chars: int, pieces: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", _MODEL_SERVER, str(chars), str(pieces)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def start_server(data_dir: Path, port: int, key: str, idle_seconds: float,
                  snapshot_path: Path | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DESKTOP_AGENT_DATA_DIR": str(data_dir),
           "DESKTOP_AGENT_MASTER_KEY": key}
    env.pop("DESKTOP_AGENT_DATABASE_URL", None)
    serve = ["serve", "--port", str(port), "--log-level", "warning",
             "--idle-seconds", str(idle_seconds)]
    start = ([sys.executable, "-c", _TRACED_SERVE, "1", str(snapshot_path)]
             if snapshot_path is not None else [sys.executable, "-m", "desktop_agent"])
    process = subprocess.Popen([*start, *serve], env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/alive", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
        if process.poll() is not None:
            raise SystemExit("desktop-agent serve exited before it was up")
    process.kill()
    raise SystemExit("desktop-agent serve did not come up within 120 s")


def _after_eviction(pid: int, idle_seconds: float) -> float:
    """The RSS once the server had time to drop every idle conversation (and settle)."""
    time.sleep(idle_seconds * 2 + 2)
    return rss_mb(pid)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=3000, help="turns of the soak in all")
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop the soak after this long even if --turns are not done")
    parser.add_argument("--chars", type=int, default=7000, help="characters per reply")
    parser.add_argument("--pieces", type=int, default=300, help="streamed pieces per reply")
    parser.add_argument("--context-tokens", type=int, default=8192,
                        help="the conversations' context window, compacted by dropping the "
                             "oldest messages (0: none stated, nothing compacted)")
    parser.add_argument("--idle-seconds", type=float, default=10.0,
                        help="the server's --idle-seconds (eviction of idle conversations)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="trace the server's allocations (slower) and print the lines "
                             "that grew most")
    args = parser.parse_args()

    key = secrets.token_hex(16)
    data_dir = Path(tempfile.mkdtemp(prefix="soak-serve-"))
    model, model_url = _start_model_server(args.chars, args.pieces)
    port = free_port()
    snapshot_path = data_dir.parent / f"{data_dir.name}.tracemalloc" if args.tracemalloc else None
    server = start_server(data_dir, port, key, args.idle_seconds, snapshot_path)
    soak = _Soak(f"http://127.0.0.1:{port}", key, model_url, server.pid, args.context_tokens)
    soak.snapshot_path = snapshot_path
    try:
        up = rss_mb(server.pid)

        async def prepare() -> list[str]:
            async with httpx.AsyncClient(base_url=soak.base_url, timeout=60, headers={
                    "Authorization": f"Bearer {key}"}) as client:
                return await soak.create(client, args.conversations)

        ids = asyncio.run(prepare())
        asyncio.run(soak.round(ids, turns=1))
        warm = rss_mb(server.pid)
        start = _after_eviction(server.pid, args.idle_seconds)
        folder_start = folder_mb(data_dir)
        parts_start = _folder_parts(data_dir)
        print(f"serve up: RSS {up:.1f} MB; after a turn in each of {args.conversations} "
              f"conversations {warm:.1f} MB; after the idle eviction (the start) {start:.1f} MB",
              flush=True)

        soak.turns = 0
        soak.samples = [(0, start)]
        soak.turn_limit = args.turns
        began = time.monotonic()
        if args.minutes is not None:
            soak.stop_at = began + args.minutes * 60
        asyncio.run(soak.round(ids, turns=None))
        took = time.monotonic() - began
        busy = rss_mb(server.pid)
        folder_end = folder_mb(data_dir)
        parts_end = _folder_parts(data_dir)
        evicted = _after_eviction(server.pid, args.idle_seconds)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        model.stdin.close()  # type: ignore[union-attr]
        model.wait(10)
        shutil.rmtree(data_dir, ignore_errors=True)
        if snapshot_path is not None:
            snapshot_path.unlink(missing_ok=True)

    done = soak.turns
    half = [(turns, rss) for turns, rss in soak.samples if turns >= done / 2]
    slope = _slope_per_1000(half)
    back = (evicted - start) / start
    folder_rate = (folder_end - folder_start) / max(done, 1) * 1000
    print(f"{done} turns in {took / 60:.1f} min over {args.conversations} conversations "
          f"({soak.events} SSE events read, {soak.tool_results} tool results of which "
          f"{len(soak.tool_errors)} errors); load average {os.getloadavg()[0]:.2f}")
    for error in soak.tool_errors[:3]:
        print(f"  tool error: {error}")
    print(f"RSS: start {start:.1f} MB, at the end {busy:.1f} MB, "
          f"after the idle eviction {evicted:.1f} MB")
    print(f"slope over the second half ({len(half)} samples): {slope:+.1f} MB per 1,000 turns "
          f"(target <= {SLOPE_TARGET_MB:g}): {'under' if slope <= SLOPE_TARGET_MB else 'OVER'}")
    print(f"after the idle eviction: {back:+.1%} against the start "
          f"(target <= {EVICTION_TARGET:.0%}): {'under' if back <= EVICTION_TARGET else 'OVER'}")
    print(f"data folder: {folder_start:.1f} -> {folder_end:.1f} MB, "
          f"{folder_rate:.1f} MB per 1,000 turns")
    for name, size in sorted(parts_end.items(), key=lambda item: -item[1])[:6]:
        grew = (size - parts_start.get(name, 0.0)) / max(done, 1) * 1000
        print(f"  {name}: {size:.1f} MB, {grew:+.1f} MB per 1,000 turns")
    if len(soak.snapshots) >= 2:
        print_growth(soak.snapshots[(len(soak.snapshots) - 1) // 2], soak.snapshots[-1])
    return 0 if slope <= SLOPE_TARGET_MB and back <= EVICTION_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
