"""A running command's output as it comes, coalesced into a few reports a second.

Why coalesce here: a command can print 100 MB in seconds, in thousands of
pipe reads. Each read only appends to a bounded buffer and counts its lines
(both in C); a report goes out at most every :data:`REPORT_INTERVAL` with the
output since the last one, cut to its last :data:`TAIL_BYTES`. So the front
ends get a fixed, small stream of work whatever the command prints, and the
model still gets the full, budgeted result from the capture beside this.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import time
from typing import Any

from desktop_agent.core.tooling.progress import report_output

#: Seconds between two reports while output comes.
REPORT_INTERVAL = 0.1
#: Seconds between two reports while the command prints nothing (elapsed time ticks).
QUIET_INTERVAL = 1.0
#: Most bytes of output carried by one report (the newest ones).
TAIL_BYTES = 8_192


class LiveOutput:
    """Output of one command since the last report, and its lines so far.

    Call :meth:`feed` for every chunk read (stdout and stderr alike, in the
    order they arrive) and run :meth:`report_until_done` beside the command.
    """

    def __init__(self) -> None:
        self._pending = bytearray()
        self._cut = False  # bytes were dropped from the front since the last report
        self.lines = 0
        self._started = time.monotonic()
        self._wake = asyncio.Event()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, chunk: bytes) -> None:
        """Take one chunk the command printed."""
        self.lines += chunk.count(b"\n")
        self._pending += chunk
        if len(self._pending) > 2 * TAIL_BYTES:
            del self._pending[:-TAIL_BYTES]
            self._cut = True
        self._wake.set()

    def elapsed(self) -> float:
        """Seconds since the command started."""
        return time.monotonic() - self._started

    def flush(self) -> None:
        """Report what came since the last report (now)."""
        data = self._pending
        if self._cut or len(data) > TAIL_BYTES:
            self._decoder.reset()  # a character split at the old end is gone with it
            data = data[-TAIL_BYTES:]
            # Start at a line: a cut line is noise, and could be the end half of a secret.
            newline = data.find(b"\n")
            if 0 <= newline < len(data) - 1:
                data = data[newline + 1:]
        self._pending = bytearray()
        self._cut = False
        # A character split between two reads waits in the decoder for its other half.
        report_output(self._decoder.decode(bytes(data)), lines=self.lines,
                      elapsed=self.elapsed())

    async def report_until_done(self, done: asyncio.Future[Any]) -> None:
        """Report every interval until ``done`` completes (a last report is left to the caller)."""
        self.flush()  # at once: the call shows it is running and can be stopped
        while not done.done():
            self._wake.clear()
            waiter: asyncio.Future[Any] = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({waiter, done}, timeout=QUIET_INTERVAL,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter
            if done.done():
                return
            self.flush()
            await asyncio.sleep(REPORT_INTERVAL)  # let output gather: one report per interval
