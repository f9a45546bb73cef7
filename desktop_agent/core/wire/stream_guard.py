"""Checks on a streamed reply before the aggregator sees it: shape, size and silence.

:class:`~desktop_agent.core.wire.stream.StreamAggregator` trusts chunks to have the
OpenAI shape; a server that sends ``choices: [1, 2]`` or ``content: 5`` used to
end the turn with ``AttributeError``. :class:`StreamGuard` checks the few
fields the aggregator reads (cheap ``isinstance`` tests, no copying) and raises
:class:`~desktop_agent.core.errors.MalformedStreamError` instead. It also
counts the characters of text, reasoning and tool arguments, and the chunks,
and stops a reply that passes a cap tied to ``max_tokens``
(:class:`~desktop_agent.core.errors.ReplyTooLongError`): an endless stream
reached 317 MB before. :class:`IdleTimer` bounds the wait for each chunk: SSE
comment lines (``: keep-alive``) never reach it, so a server that only sends
comments is idle, and ends the turn after the timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from desktop_agent.core import errors

#: Characters per token allowed before a reply counts as runaway (tokens average ~4).
CHARS_PER_TOKEN_CAP = 16
#: The cap when no max_tokens is set (about 250k tokens of text).
DEFAULT_CHAR_CAP = 1_000_000
#: The smallest cap, so a small max_tokens still leaves room for a tool call's JSON.
MIN_CHAR_CAP = 64_000

_TEXT_KEYS = ("content", "reasoning_content", "reasoning")


def char_cap(max_tokens: int | None) -> int:
    """Characters a reply may stream for ``max_tokens`` (generous: runaway, not long, ends)."""
    if max_tokens is None:
        return DEFAULT_CHAR_CAP
    return max(MIN_CHAR_CAP, max_tokens * CHARS_PER_TOKEN_CAP)


class StreamGuard:
    """Shape checks and a size cap for one streamed reply.

    Attributes:
        cap: Characters (text, reasoning, tool arguments) the reply may stream.
        chars: Characters seen so far.
        chunks: Chunks seen so far (also capped: empty chunks cost time too).
    """

    def __init__(self, max_tokens: int | None, base_url: str = "") -> None:
        self.cap = char_cap(max_tokens)
        self.chars = 0
        self.chunks = 0
        self._base_url = base_url

    def check(self, chunk: Any) -> None:
        """Raise if ``chunk`` has a shape the aggregator cannot read, or the cap is passed."""
        self.chunks += 1
        if not isinstance(chunk, dict):
            self._malformed("a chunk that is not a JSON object")
        get = chunk.get  # every chunk passes here: the fields read once each, no loop
        usage = get("usage")
        if usage is not None and not isinstance(usage, dict):
            self._malformed("'usage' that is not an object")
        timings = get("timings")
        if timings is not None and not isinstance(timings, dict):
            self._malformed("'timings' that is not an object")
        model = get("model")
        if model is not None and not isinstance(model, str):
            self._malformed("'model' that is not a string")
        choices = get("choices")
        if choices:
            if not isinstance(choices, list):
                self._malformed("'choices' that is not a list")
            self._check_choice(choices[0])
        if self.chars > self.cap or self.chunks > self.cap:
            raise errors.ReplyTooLongError(
                f"The reply from {self._base_url or 'the server'} passed {self.cap} characters, "
                "far beyond max_tokens; it was stopped there and what arrived is kept.",
                base_url=self._base_url)

    def _check_choice(self, choice: Any) -> None:
        if not isinstance(choice, dict):
            self._malformed("'choices' holding something other than objects")
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, dict):
            self._malformed("a 'delta' that is not an object")
        get = delta.get
        for key in _TEXT_KEYS:
            value = get(key)
            if value is not None:
                if not isinstance(value, str):
                    self._malformed(f"'{key}' that is not a string")
                self.chars += len(value)
        calls = get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                self._malformed("'tool_calls' that is not a list")
            for fragment in calls:
                self._check_call(fragment)
        reason = choice.get("finish_reason")
        if reason is not None and not isinstance(reason, str):
            self._malformed("a 'finish_reason' that is not a string")

    def _check_call(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            self._malformed("a tool call that is not an object")
        call_id = fragment.get("id")
        if call_id is not None and not isinstance(call_id, str):
            self._malformed("a tool call 'id' that is not a string")
        function = fragment.get("function")
        if function is None:
            return
        if not isinstance(function, dict):
            self._malformed("a tool call 'function' that is not an object")
        name = function.get("name")
        if name is not None and not isinstance(name, str):
            self._malformed("a tool name that is not a string")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            self.chars += len(arguments)
        elif isinstance(arguments, dict):
            self.chars += len(arguments)  # an object: its size counts when it is dumped
        elif arguments is not None:
            self._malformed("tool arguments that are neither a string nor an object")

    def _malformed(self, what: str) -> None:
        raise errors.MalformedStreamError(
            f"The server at {self._base_url or 'the model server'} sent {what}; the reply "
            "cannot be read. Is it an OpenAI-compatible server?", base_url=self._base_url)


class IdleTimer:
    """Bounds the silence before each chunk of one stream with a single timer.

    ``asyncio.timeout()`` around every chunk creates, schedules and cancels a
    timer handle per chunk; profiling the REST server under 50 streams showed
    that costing more than reading the chunk itself. Here one timer per stream
    is (re)armed only when it fires: each wait just notes when it began, and
    the timer, when due, either finds that the wait started later (and sleeps
    until the new deadline) or cancels the waiting task, which :meth:`next`
    turns into :class:`~desktop_agent.core.errors.RequestTimeoutError`. An
    outside cancellation (an interrupt) arriving at the same time is passed on.
    """

    def __init__(self, idle_timeout: float | None, base_url: str = "") -> None:
        self._timeout = idle_timeout
        self._base_url = base_url
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._waiting: asyncio.Task[Any] | None = None
        self._since = 0.0
        self._expired = False

    async def next(self, chunks: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
        """The next decoded chunk, or :class:`RequestTimeoutError` after the idle timeout.

        Raises:
            StopAsyncIteration: The stream ended.
            RequestTimeoutError: No data chunk (comments do not count) within the timeout.
        """
        if self._timeout is None:
            return await chunks.__anext__()
        task = asyncio.current_task()
        self._since = self._loop.time()
        self._waiting = task
        if self._handle is None:
            self._handle = self._loop.call_at(self._since + self._timeout, self._due)
        try:
            return await chunks.__anext__()
        except asyncio.CancelledError:
            if self._expired and task is not None:
                self._expired = False
                if task.uncancel() == 0:  # ours alone, not an interrupt as well
                    raise self._error() from None
            raise
        finally:
            self._waiting = None

    def close(self) -> None:
        """Stop the timer (the stream ended or was abandoned)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _due(self) -> None:
        self._handle = None
        task = self._waiting
        if task is None or self._timeout is None:
            return  # between chunks: the next wait arms the timer again
        deadline = self._since + self._timeout
        if self._loop.time() < deadline:
            self._handle = self._loop.call_at(deadline, self._due)
            return
        self._expired = True
        task.cancel()

    def _error(self) -> errors.RequestTimeoutError:
        return errors.RequestTimeoutError(
            f"The server at {self._base_url or 'the model server'} sent no data for "
            f"{self._timeout:g} s (keep-alive comments do not count); the reply was stopped.",
            base_url=self._base_url)


def ended_without_finish(aggregator: Any, stream: Any) -> errors.IncompleteReplyError | None:
    """The error for a stream that closed with no ``finish_reason`` and no ``[DONE]``.

    Every OpenAI-compatible server ends a reply with one or the other; a body
    that simply stops (LLMock's truncation fault, a proxy cut, a crash between
    chunks) used to be taken as a complete answer. None when the end was proper.
    """
    if aggregator.finish_reason or stream is None or stream.saw_done:
        return None
    base_url = getattr(stream, "base_url", "")
    error = errors.IncompleteReplyError(
        f"The server at {base_url or 'the model server'} ended the reply early (the stream "
        "closed without a finish reason); the text so far is kept.", base_url=base_url)
    error.mid_stream = True
    return error
