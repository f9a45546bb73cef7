"""Checks on real processes, shared by the bash-tool and MCP tests."""

from __future__ import annotations

import asyncio
import os


def process_alive(pid: int) -> bool:
    """True while a process with this pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_until_dead(pid: int) -> bool:
    """Wait (bounded, ~10 s) for the OS to reap ``pid``; not a timing assertion."""
    for _ in range(200):
        if not process_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def processes_running(marker: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line contains ``marker``.

    Sandboxed commands run in their own PID namespace, so ``$!`` inside them
    is not a pid out here; tests find their processes by a unique argument.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z" and int(entry) != os.getpid():
            found.append(int(entry))
    return found


async def wait_until_gone(marker: str) -> bool:
    """Wait (bounded, ~10 s) until no process with ``marker`` in its command line runs."""
    for _ in range(200):
        if not processes_running(marker):
            return True
        await asyncio.sleep(0.05)
    return False
