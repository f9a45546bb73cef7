"""Checks on a streamed reply before the aggregator sees it: shape, size and silence.

:class:`~desktop_agent.core.stream.StreamAggregator` trusts chunks to have the
OpenAI shape; a server that sends ``choices: [1, 2]`` or ``content: 5`` used to
end the turn with ``AttributeError``. :class:`StreamGuard` checks the few
fields the aggregator reads (cheap ``isinstance`` tests, no copying) and raises
:class:`~desktop_agent.core.errors.MalformedStreamError` instead. It also
counts the characters of text, reasoning and tool arguments, and the chunks,
and stops a reply that passes a cap tied to ``max_tokens``
(:class:`~desktop_agent.core.errors.ReplyTooLongError`): an endless stream
reached 317 MB before. :func:`next_chunk` bounds the wait for each chunk: SSE
comment lines (``: keep-alive``) never reach it, so a server that only sends
comments is idle, and ends the turn after the timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from . import errors

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
        for key in ("usage", "timings"):
            value = chunk.get(key)
            if value is not None and not isinstance(value, dict):
                self._malformed(f"'{key}' that is not an object")
        model = chunk.get("model")
        if model is not None and not isinstance(model, str):
            self._malformed("'model' that is not a string")
        choices = chunk.get("choices")
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
        for key in _TEXT_KEYS:
            value = delta.get(key)
            if value is not None:
                if not isinstance(value, str):
                    self._malformed(f"'{key}' that is not a string")
                self.chars += len(value)
        calls = delta.get("tool_calls")
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


async def next_chunk(chunks: AsyncIterator[dict[str, Any]], idle_timeout: float,
                     base_url: str = "") -> dict[str, Any]:
    """The next decoded chunk, or :class:`RequestTimeoutError` after ``idle_timeout`` of no data.

    Raises:
        StopAsyncIteration: The stream ended.
        RequestTimeoutError: No data chunk (comments do not count) within the timeout.
    """
    try:
        async with asyncio.timeout(idle_timeout):  # no task per chunk, unlike wait_for
            return await chunks.__anext__()
    except TimeoutError:
        raise errors.RequestTimeoutError(
            f"The server at {base_url or 'the model server'} sent no data for "
            f"{idle_timeout:g} s (keep-alive comments do not count); the reply was stopped.",
            base_url=base_url) from None


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
