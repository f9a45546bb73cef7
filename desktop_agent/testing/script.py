"""Scripts for the scripted model server: what one chat-completion reply does.

A script is a list of steps played in order: SSE chunks, raw bytes, pauses,
an abrupt drop of the connection, or (as the first step) an HTTP error status.
The builders here produce the shapes real local servers send, quirks
included, so tests and the smoke test can replay them exactly.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MODEL = "test-model"


@dataclass(slots=True)
class Chunk:
    """One SSE event ``data: <json>``.

    Attributes:
        count_prompt: The chunk's ``usage.prompt_tokens`` is filled in when it
            is sent with the server's count of the prompt it read, as real
            servers report it.
    """

    data: dict[str, Any]
    count_prompt: bool = False


@dataclass(slots=True)
class Raw:
    """Bytes written to the stream as they are (malformed chunks, comments)."""

    data: bytes


@dataclass(slots=True)
class Pause:
    """Wait before the next step."""

    seconds: float


@dataclass(slots=True)
class Gate:
    """Hold the stream until a test sets ``event`` (a ``threading.Event``).

    Lets a test observe the client *while* the server is mid-reply, without
    timing assumptions. ``timeout`` bounds the wait so a failing test ends.
    """

    event: Any
    timeout: float = 10.0


@dataclass(slots=True)
class Drop:
    """Abort the connection without finishing the response."""


@dataclass(slots=True)
class Hangup:
    """Close the connection without any response (must be the first step).

    What a server does to a keep-alive connection it timed out just as the
    client sent a new request on it: the client sees "server disconnected
    without sending a response".
    """


@dataclass(slots=True)
class Status:
    """Answer with this HTTP status instead of a stream (must be the first step)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


Step = Chunk | Raw | Pause | Gate | Drop | Hangup | Status
DONE = Raw(b"data: [DONE]\n\n")


@dataclass
class Script:
    """A reply: steps, plus a delay inserted after every chunk (slow streams).

    Attributes:
        steps: What to send, in order.
        delay: Seconds to wait after each chunk.
        usage: Whether the usage chunk is sent even if the request did not ask.
    """

    steps: list[Step]
    delay: float = 0.0

    def __iter__(self) -> Any:
        return iter(self.steps)


def _envelope(choices: list[dict[str, Any]], model: str, cid: str) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }


class ChunkFactory:
    """Makes chunks that share one completion id and model."""

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        self.model = model
        self.cid = "chatcmpl-" + uuid.uuid4().hex[:12]

    def delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> Chunk:
        """A chunk with one choice carrying ``delta``."""
        return Chunk(_envelope([{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                               self.model, self.cid))

    def finish(self, reason: str | None) -> Chunk:
        """The chunk that closes the choice."""
        return self.delta({}, reason)

    def usage(self, prompt_tokens: int | None, completion_tokens: int) -> Chunk:
        """A usage-only final chunk (``choices: []``), as with include_usage.

        ``prompt_tokens`` None: the server's count of the prompt it read, filled
        in when the chunk is sent (unless a responder sets it first).
        """
        data = _envelope([], self.model, self.cid)
        data["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": None if prompt_tokens is None else prompt_tokens + completion_tokens,
        }
        return Chunk(data, count_prompt=prompt_tokens is None)


def split_text(text: str, pieces: int | None = None) -> list[str]:
    """Split text into stream pieces: word-ish tokens, or ``pieces`` even parts."""
    if not text:
        return []
    if pieces is None:
        return re.findall(r"\s*\S+|\s+", text)
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    out, pos = [], 0
    for i in range(pieces):
        n = size + (1 if i < extra else 0)
        out.append(text[pos:pos + n])
        pos += n
    return out


def text(
    content: str,
    pieces: int | None = None,
    *,
    delay: float = 0.0,
    finish_reason: str | None = "stop",
    prompt_tokens: int | None = None,
    model: str = DEFAULT_MODEL,
    cumulative: bool = False,
    done: bool = True,
) -> Script:
    """A streamed text reply, split into ``pieces`` (default: one per word).

    ``prompt_tokens`` is the usage the reply reports (None: the server's own
    count of the prompt it read).
    """
    f = ChunkFactory(model)
    parts = split_text(content, pieces)
    steps: list[Step] = [f.delta({"role": "assistant", "content": ""})]
    so_far = ""
    for part in parts:
        so_far += part
        steps.append(f.delta({"content": so_far if cumulative else part}))
    steps.append(f.finish(finish_reason))
    steps.append(f.usage(prompt_tokens, len(parts)))
    if done:
        steps.append(DONE)
    return Script(steps, delay=delay)


def thinking(
    reasoning: str,
    answer: str,
    *,
    field_name: str = "reasoning_content",
    inline: bool = False,
    delay: float = 0.0,
    model: str = DEFAULT_MODEL,
) -> Script:
    """Reasoning then an answer: in ``delta.<field_name>`` or inline ``<think>`` tags."""
    f = ChunkFactory(model)
    steps: list[Step] = [f.delta({"role": "assistant"})]
    if inline:
        for part in split_text(f"<think>{reasoning}</think>{answer}"):
            steps.append(f.delta({"content": part}))
    else:
        for part in split_text(reasoning):
            steps.append(f.delta({field_name: part}))
        for part in split_text(answer):
            steps.append(f.delta({"content": part}))
    steps += [f.finish("stop"), f.usage(None, 10), DONE]
    return Script(steps, delay=delay)


def tool_calls(
    calls: Sequence[tuple[str, dict[str, Any] | str]],
    *,
    text_before: str | None = None,
    finish_reason: str | None = "tool_calls",
    fragments: int = 3,
    ids: Sequence[str | None] | None = None,
    late_ids: bool = False,
    interleave: bool = False,
    delay: float = 0.0,
    model: str = DEFAULT_MODEL,
) -> Script:
    """A reply that calls tools, with arguments streamed in ``fragments`` pieces.

    Args:
        calls: (name, arguments) pairs; arguments as a dict or raw JSON text.
        text_before: Text streamed before the calls (sent in the same delta as
            the first call fragment, as some servers do).
        finish_reason: The closing reason (``tool_calls``, ``stop``, ``length``, None).
        fragments: How many pieces each argument string is cut into.
        ids: Explicit call ids (None entries mean the server sends no id).
        late_ids: Send each id with the last fragment instead of the first.
        interleave: Alternate fragments of different calls.
        delay: Seconds between chunks.
        model: The model name in the chunks.
    """
    f = ChunkFactory(model)
    steps: list[Step] = [f.delta({"role": "assistant"})]
    per_call: list[list[dict[str, Any]]] = []
    for index, (name, args) in enumerate(calls):
        raw = args if isinstance(args, str) else json.dumps(args)
        parts = split_text(raw, fragments) or [""]
        call_id = ids[index] if ids is not None else f"call_{uuid.uuid4().hex[:10]}"
        frags: list[dict[str, Any]] = []
        for i, part in enumerate(parts):
            frag: dict[str, Any] = {"index": index, "function": {"arguments": part}}
            first, last = i == 0, i == len(parts) - 1
            if first:
                frag["type"] = "function"
                frag["function"]["name"] = name
            if call_id is not None and (last if late_ids else first):
                frag["id"] = call_id
            frags.append(frag)
        per_call.append(frags)
    ordered: list[dict[str, Any]] = []
    if interleave:
        for i in range(max(len(p) for p in per_call)):
            for frags in per_call:
                if i < len(frags):
                    ordered.append(frags[i])
    else:
        for frags in per_call:
            ordered.extend(frags)
    if text_before:
        words = split_text(text_before)
        for word in words[:-1]:
            steps.append(f.delta({"content": word}))
        first_call = ordered.pop(0) if ordered else None
        delta: dict[str, Any] = {"content": words[-1]}
        if first_call:
            delta["tool_calls"] = [first_call]
        steps.append(f.delta(delta))
    for frag in ordered:
        steps.append(f.delta({"tool_calls": [frag]}))
    steps += [f.finish(finish_reason), f.usage(None, 10), DONE]
    return Script(steps, delay=delay)


def error(status: int, message: str = "error", *, error_type: str | None = None,
          code: str | None = None, headers: dict[str, str] | None = None) -> Script:
    """An HTTP error before any streaming, with an OpenAI-style error body."""
    body = {"error": {"message": message, "type": error_type or "server_error", "code": code}}
    return Script([Status(status, body, headers or {})])


def dropped(content: str, *, pieces: int | None = None, delay: float = 0.0,
            model: str = DEFAULT_MODEL) -> Script:
    """Text that stops mid-stream with the connection aborted."""
    f = ChunkFactory(model)
    steps: list[Step] = [f.delta({"role": "assistant"})]
    steps += [f.delta({"content": p}) for p in split_text(content, pieces)]
    steps.append(Drop())
    return Script(steps, delay=delay)


def from_chunks(chunks: Iterable[dict[str, Any] | bytes | Step], *, done: bool = True,
                delay: float = 0.0) -> Script:
    """A script from raw chunk dicts (wrapped in SSE), bytes or steps."""
    steps: list[Step] = []
    for item in chunks:
        if isinstance(item, dict):
            steps.append(Chunk(item))
        elif isinstance(item, bytes):
            steps.append(Raw(item))
        else:
            steps.append(item)
    if done:
        steps.append(DONE)
    return Script(steps, delay=delay)
