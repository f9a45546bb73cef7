"""``desktop-agent serve`` while one ``bash`` call prints gigabytes: memory and records stay capped.

Starts ``serve`` (its own interpreter, a temporary data folder) and the scripted
model server, as ``bench/soak_serve.py`` does. One conversation (``bash``
allowed, no approval asked) gets a warm-up turn (``echo``: the code a turn needs
is loaded), then a turn whose model calls ``yes | head -c <--gigabytes>G`` (the
sandbox when ``serve`` has one) and answers in words. A follower keeps the SSE
stream open throughout. From the second turn's start, the server's RSS is
sampled every ``--every`` seconds; at the end the bench prints the RSS at the
start, the largest and at the end, the stored tool result's size, and the
conversation's events (their count and characters by type, as stored), so the
live-output and result caps can be read off: none of them should grow with the
gigabytes.

The exit status is 0 when the RSS stayed within ``--rss-margin`` MB of its
start, the stored result within twice the command tool's output cap and the
stored events of the turn within ``--events-mb`` MB; 1 otherwise.

Usage::

    python bench/long_output.py [--gigabytes 10] [--every 5] [--rss-margin 30]
                                [--events-mb 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from soak_serve import folder_mb, free_port, rss_mb, start_server

from desktop_agent.core.tooling.builtin.shell_tool import MAX_TIMEOUT, OUTPUT_CAP

_MODEL_SERVER = """
import sys
from desktop_agent.testing import ScriptedServer, script
timeout = float(sys.argv[1])

def respond(body):
    messages = body.get("messages", [])
    if messages and messages[-1].get("role") == "tool":
        return script.text("The command printed a lot.", 4)
    command = str(messages[-1].get("content"))  # the prompt is the command to run
    return script.tool_calls([("bash", {"command": command, "timeout_seconds": timeout})])

with ScriptedServer() as server:
    server.responder = respond
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def _events_by_type(database: Path, conversation_id: str) -> dict[str, tuple[int, int]]:
    """(count, characters of data) of the conversation's stored events, by type."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT type, COUNT(*), SUM(LENGTH(data)) FROM events"
                            " WHERE conversation_id = ? GROUP BY type", (conversation_id,))
        return {str(kind): (int(count), int(size)) for kind, count, size in rows}


async def _turn(client: httpx.AsyncClient, lines: Any, cid: str, command: str,
                seen: dict[str, int]) -> None:
    """Run one turn whose model runs ``command``; read the stream until it ends."""
    (await client.post(f"/conversations/{cid}/run", json={"message": command})).raise_for_status()
    async for line in lines:
        if not line.startswith("data:"):
            continue
        seen["events"] += 1
        if '"type": "tool_output"' in line:
            seen["tool_output"] += 1
        if '"state": "idle"' in line:
            if '"outcome": "complete"' not in line:
                raise SystemExit(f"the turn failed: {line[:300]}")
            return


async def _run(base_url: str, key: str, model_url: str, pid: int, command: str,
               every: float) -> tuple[str, list[tuple[float, float]], dict[str, int]]:
    samples: list[tuple[float, float]] = []
    seen = {"tool_output": 0, "events": 0}
    async with httpx.AsyncClient(base_url=base_url, timeout=120,
                                 headers={"Authorization": f"Bearer {key}"}) as client:
        made = await client.post("/conversations", json={
            "title": "long output", "settings": {
                "base_url": model_url, "model": "test-model", "tools": ["bash"],
                "confirm_tools": False}})
        cid = str(made.raise_for_status().json()["id"])
        async with client.stream("GET", f"/conversations/{cid}/events/stream",
                                 timeout=httpx.Timeout(None, connect=60)) as response:
            response.raise_for_status()
            lines = response.aiter_lines()
            await _turn(client, lines, cid, "echo warm", seen)
            began = time.monotonic()
            samples.append((0.0, rss_mb(pid)))

            async def sample() -> None:
                while True:
                    await asyncio.sleep(every)
                    samples.append((time.monotonic() - began, rss_mb(pid)))
                    print(f"  {samples[-1][0]:7.0f} s: RSS {samples[-1][1]:7.1f} MB, "
                          f"{seen['tool_output']} tool_output events read", flush=True)

            sampler = asyncio.ensure_future(sample())
            try:
                await _turn(client, lines, cid, command, seen)
            finally:
                sampler.cancel()
        samples.append((time.monotonic() - began, rss_mb(pid)))
    return cid, samples, seen


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stored_result(base_url: str, key: str, cid: str) -> str:
    listed = httpx.get(f"{base_url}/conversations/{cid}/messages", timeout=60,
                       headers={"Authorization": f"Bearer {key}"}).raise_for_status().json()
    tool = [m for m in listed["messages"] if m["role"] == "tool"]  # the last is the long one
    if not tool:
        raise SystemExit("no tool result was stored")
    content = tool[-1]["message"]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=10.0, help="what the command prints")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--rss-margin", type=float, default=30.0,
                        help="MB the RSS may rise above its start")
    parser.add_argument("--events-mb", type=float, default=64.0,
                        help="MB of stored events the turn may leave")
    args = parser.parse_args()

    size = f"{int(args.gigabytes * 1024)}M"
    command = f"yes | head -c {size}; echo done"
    key = secrets.token_hex(16)
    data_dir = Path(tempfile.mkdtemp(prefix="long-output-"))
    model = subprocess.Popen([sys.executable, "-c", _MODEL_SERVER, str(MAX_TIMEOUT)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert model.stdout is not None
    model_url = model.stdout.readline().strip()
    port = free_port()
    server = start_server(data_dir, port, key, idle_seconds=3600)
    base_url = f"http://127.0.0.1:{port}"
    try:
        began = time.monotonic()
        cid, samples, seen = asyncio.run(_run(base_url, key, model_url, server.pid, command,
                                              args.every))
        took = time.monotonic() - began
        result = _stored_result(base_url, key, cid)
        events = _events_by_type(data_dir / "conversations.sqlite3", cid)
        folder = folder_mb(data_dir)
        serve_cpu = _cpu_seconds(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        model.stdin.close()  # type: ignore[union-attr]
        model.wait(10)
        shutil.rmtree(data_dir, ignore_errors=True)

    start, top, end = samples[0][1], max(r for _, r in samples), samples[-1][1]
    stored_mb = sum(size for _, size in events.values()) / 2**20
    print(f"`{command}` and the warm-up turn in {took:.0f} s; serve's CPU {serve_cpu:.0f} s "
          f"in all; load average {os.getloadavg()[0]:.2f}")
    print(f"RSS: start {start:.1f} MB, largest {top:.1f} MB, end {end:.1f} MB "
          f"(margin {args.rss_margin:g} MB)")
    print(f"stored tool result: {len(result):,} characters (the output cap is {OUTPUT_CAP:,}); "
          f"it ends: {result[-120:]!r}")
    print(f"SSE events read: {seen['events']} ({seen['tool_output']} tool_output)")
    print(f"stored events: {stored_mb:.2f} MB; data folder {folder:.1f} MB")
    for kind, (count, chars) in sorted(events.items(), key=lambda item: -item[1][1]):
        print(f"  {kind}: {count} events, {chars / 2**20:.2f} MB")
    ok = (top - start <= args.rss_margin and len(result) <= 2 * OUTPUT_CAP
          and stored_mb <= args.events_mb)
    print("capped" if ok else "OVER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
