"""The app's side of starting the engine's child: spawn it, hand it its secrets, hear it ready.

The contract itself (argv, the stdin line, the ready line) is written down in
:mod:`desktop_agent.engine.engine_child`; this module keeps the parent's half of it
out of :mod:`desktop_agent.engine.runner`, which decides *when* to start and stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from desktop_agent.engine.engine_child import ChildLaunch, ReadyFacts, parse_ready_line


async def spawn_child(launch: ChildLaunch, log_path: Path) -> asyncio.subprocess.Process:
    """Start the child with its log in ``log_path`` and send it the private stdin line.

    The child gets a session of its own: a Ctrl+C in the app's terminal is the app's
    to handle (it stops the engine in order), not the engine's. Its stdin stays open
    afterwards: that pipe is the child's watchdog.
    """
    with log_path.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            *launch.command(os.getpid()), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=log, env=child_environment(),
            start_new_session=True)
    assert process.stdin is not None  # a pipe, asked for above
    with contextlib.suppress(ConnectionError):  # a child that died at once: its start says so
        process.stdin.write(launch.private_line())
        await process.stdin.drain()
    return process


async def read_ready_line(stdout: asyncio.StreamReader) -> ReadyFacts | None:
    """The child's ready line, or None when its stdout ends first (it died)."""
    while line := await stdout.readline():
        ready = parse_ready_line(line.decode("utf-8", "replace").strip())
        if ready is not None:
            return ready
    return None


async def answers_health(port: int) -> bool:
    """Whether ``GET /health`` on the port answers 200 (a plain request: no HTTP library)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    try:
        writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        await writer.drain()
        status = await reader.readline()
    except OSError:
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return status.split(b" ")[1:2] == [b"200"]


async def accepts_connections(port: int) -> bool:
    """Whether anything listens on the port (a refused connection: the engine is gone)."""
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def child_environment() -> dict[str, str]:
    """The app's environment, with this very package first on the path when run from source.

    The child must run the same code as the app even when the app found the package
    through a path set inside Python (a test's launcher) rather than the environment.
    """
    environment = dict(os.environ)
    if not getattr(sys, "frozen", False):
        package_root = str(Path(__file__).resolve().parents[2])
        rest = environment.get("PYTHONPATH")
        environment["PYTHONPATH"] = f"{package_root}{os.pathsep}{rest}" if rest else package_root
    return environment
