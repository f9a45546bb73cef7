"""Waiting for a session's turn to end, as the session tests do (no fixed deadline).

The turn runs as a task of the session; a test that sent a message waits for
it to end before reading what was stored or sent. Polled, not timed: on a busy
machine it waits longer, and a turn that never ends fails the test after a
minute of waits with a sentence, not a hang.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def finished(session: Any) -> None:
    """Return once ``session`` runs no turn; fail when it never stops."""
    for _ in range(6000):
        if not session.busy:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the turn did not end")
