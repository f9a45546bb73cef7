"""Progress of a running tool call, streamed as :class:`ToolProgressBlock`.

A tool handler calls :func:`report_progress` (MCP tools do it for the
server's ``notifications/progress``); the client yields each report as a
block while the round's calls run, so a front end can fill a progress bar on
the tool card. The reporter travels in a context variable set for the call's
task, so handlers need no extra parameter and nested helpers can report too.

The same channel carries what a subagent run by the call does
(:func:`report_subagent`: its blocks, wrapped in
:class:`~desktop_agent.core.types.SubagentBlock`), a running call's live
output (:func:`report_output`: the ``bash`` tool's stdout and stderr as they
come) and the person's request
to end just that call (:func:`stop_requested`, set by
``Client.stop_tool_call``). Output passes the one redaction of the
conversation's secrets here, before it becomes a block: the tail of each
report that could be the start of a secret, in any of its forms (base64 of a
secret is a third longer than the secret), is held back until the next report
says how it goes on, so no part of a secret leaves; a secret split by terminal
escapes or wrapped over lines is found as a terminal shows it
(:func:`~desktop_agent.core.secret_forms.secret_spans`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from typing import Any

from desktop_agent.core.secret_forms import longest_form, safe_cut
from desktop_agent.core.tooling.redaction import redact_values
from desktop_agent.core.types import SubagentBlock, ToolProgressBlock

Report = ToolProgressBlock | SubagentBlock

Reporter = Callable[[float, float | None, str | None], None]

_reporter: ContextVar[Reporter | None] = ContextVar("desktop_agent_tool_progress", default=None)
_call: ContextVar[_RunningCall | None] = ContextVar("desktop_agent_tool_call", default=None)


def report_progress(progress: float, total: float | None = None,
                    message: str | None = None) -> None:
    """Report how far the running tool call is (no-op outside a tool call)."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter(progress, total, message)


def progress_reporter() -> Reporter | None:
    """The running call's reporter, to hand to a library callback (None outside a call)."""
    return _reporter.get()


def report_output(text: str, *, lines: int, elapsed: float) -> None:
    """Report output the running call printed since its last report (no-op outside a call).

    Args:
        text: The new output (a bounded tail of it when there was more; may be
            empty, to say the call is still running).
        lines: Lines printed so far in all.
        elapsed: Seconds since the call started.
    """
    call = _call.get()
    if call is not None:
        call.output(text, lines, elapsed)


def report_subagent(block: SubagentBlock) -> None:
    """Stream what a subagent running inside this call did (no-op outside a call)."""
    call = _call.get()
    if call is not None:
        call.subagent(block)


def running_call_id() -> str | None:
    """The id of the tool call this task runs (None outside a call)."""
    call = _call.get()
    return None if call is None else call.tool_use_id


def stop_requested() -> asyncio.Event | None:
    """The event set when the person asks to end just this call (None outside a call).

    Asking for it marks the call as one that can be stopped, so front ends
    offer Stop on its card; a handler that asks must end soon after the event
    is set and say in its result that it was stopped.
    """
    call = _call.get()
    if call is None:
        return None
    call.stoppable = True
    return call.stop


class _RunningCall:
    """One call's side of the channel: its reports, its held-back output, its stop switch."""

    def __init__(self, queue: asyncio.Queue[Report], tool_use_id: str, name: str,
                 secrets: Sequence[str]) -> None:
        self._queue = queue
        self.tool_use_id = tool_use_id
        self.name = name
        self._secrets = tuple(secrets)
        # The longest form of any secret minus one: the most of a secret (raw, base64,
        # hex...) that can end a report unfinished.
        self._hold = max(longest_form(self._secrets) - 1, 0)
        self._held = ""
        self.stop = asyncio.Event()
        self.stoppable = False
        self._lines = 0
        self._elapsed = 0.0

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if message is not None:
            message = redact_values(message, self._secrets)
        self._queue.put_nowait(ToolProgressBlock(self.tool_use_id, float(progress),
                                                 None if total is None else float(total),
                                                 message, self.name,
                                                 stoppable=self.stoppable))

    def subagent(self, block: SubagentBlock) -> None:
        self._queue.put_nowait(block)

    def output(self, text: str, lines: int, elapsed: float) -> None:
        self._lines, self._elapsed = lines, elapsed
        shown = self._releasable(self._held + text)
        self._queue.put_nowait(ToolProgressBlock(self.tool_use_id, float(lines), None, None,
                                                 self.name, output=shown, elapsed=elapsed,
                                                 stoppable=self.stoppable))

    def release(self) -> None:
        """The call ended: what was held back is all there is (redacted whole)."""
        if self._held:
            shown, self._held = redact_values(self._held, self._secrets), ""
            self._queue.put_nowait(ToolProgressBlock(
                self.tool_use_id, float(self._lines), None, None, self.name, output=shown,
                elapsed=self._elapsed, stoppable=False))

    def _releasable(self, text: str) -> str:
        """``text`` redacted, minus a tail that might be the start of a secret."""
        if not self._secrets or self._hold <= 0:
            return text
        cut = safe_cut(text, self._secrets, self._hold)
        self._held = text[cut:]
        return redact_values(text[:cut], self._secrets)


class ProgressChannel:
    """Collects reports from one round's calls and yields them while the calls run."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Report] = asyncio.Queue()
        self._calls: dict[str, _RunningCall] = {}

    def bind(self, tool_use_id: str, name: str, secrets: Sequence[str] = ()) -> None:
        """Make reports from the current task belong to this call.

        ``secrets`` are blanked out of its output and messages before they
        become blocks.
        """
        call = _RunningCall(self._queue, tool_use_id, name, secrets)
        self._calls[tool_use_id] = call
        _call.set(call)
        _reporter.set(call.progress)

    def stop(self, tool_use_id: str) -> bool:
        """Ask call ``tool_use_id`` to end; False when it is not running or cannot stop."""
        call = self._calls.get(tool_use_id)
        if call is None or not call.stoppable or call.stop.is_set():
            return False
        call.stop.set()
        return True

    def finished(self, tool_use_id: str) -> None:
        """Forget a call that ended (a late Stop then does nothing); report its last output."""
        call = self._calls.pop(tool_use_id, None)
        if call is not None:
            call.release()

    async def until_done(self, task: asyncio.Future[Any]) -> AsyncIterator[Report]:
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
