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
