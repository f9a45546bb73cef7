"""Progress of a running tool call, streamed as :class:`ToolProgressBlock`.

A tool handler calls :func:`report_progress` (MCP tools do it for the
server's ``notifications/progress``); the client yields each report as a
block while the round's calls run, so a front end can fill a progress bar on
the tool card. The reporter travels in a context variable set for the call's
task, so handlers need no extra parameter and nested helpers can report too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import Any

from desktop_agent.core.types import ToolProgressBlock

Reporter = Callable[[float, float | None, str | None], None]

_reporter: ContextVar[Reporter | None] = ContextVar("desktop_agent_tool_progress", default=None)


def report_progress(progress: float, total: float | None = None,
                    message: str | None = None) -> None:
    """Report how far the running tool call is (no-op outside a tool call)."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter(progress, total, message)


def progress_reporter() -> Reporter | None:
    """The running call's reporter, to hand to a library callback (None outside a call)."""
    return _reporter.get()


class ProgressChannel:
    """Collects reports from one round's calls and yields them while the calls run."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[ToolProgressBlock] = asyncio.Queue()

    def bind(self, tool_use_id: str, name: str) -> None:
        """Make reports from the current task belong to this call."""
        def report(progress: float, total: float | None, message: str | None) -> None:
            self._queue.put_nowait(ToolProgressBlock(tool_use_id, float(progress),
                                                     None if total is None else float(total),
                                                     message, name))
        _reporter.set(report)

    async def until_done(self, task: asyncio.Future[Any]) -> AsyncIterator[ToolProgressBlock]:
        """Yield reports until ``task`` finishes (its result is left to the caller)."""
        while not task.done():
            getter = asyncio.ensure_future(self._queue.get())
            try:
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled():
                yield getter.result()
        while not self._queue.empty():
            yield self._queue.get_nowait()
