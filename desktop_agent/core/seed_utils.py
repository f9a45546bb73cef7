"""The seed's public helpers for scripts that talk to the server themselves.

``format_messages`` and ``format_tools`` build request pieces the way the
client does; ``ToolCallAggregator`` turns raw streamed chunks into the same
blocks ``receive_messages()`` yields, using the client's own stream parser
(so every server quirk handled there is handled here too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from desktop_agent.core.tooling.tools import Tool
from desktop_agent.core.types import Block, TextBlock, ToolUseBlock, ToolUseError
from desktop_agent.core.wire.stream import StreamAggregator


def format_messages(system_prompt: str | None, user_prompt: str | None,
                    history: Sequence[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """System prompt, earlier history, then the new user prompt, as OpenAI messages."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.extend(dict(m) for m in history or () if m.get("role") != "system")
    if user_prompt:
        messages.append({"role": "user", "content": user_prompt})
    return messages


def format_tools(tools: Iterable[Tool | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tools in the OpenAI ``tools`` request format (dicts pass through)."""
    return [t.to_openai_format() if isinstance(t, Tool) else dict(t) for t in tools]


def _as_dict(chunk: Any) -> dict[str, Any]:
    if isinstance(chunk, Mapping):
        return dict(chunk)
    dump = getattr(chunk, "model_dump", None)  # an openai ChatCompletionChunk
    if callable(dump):
        data = dump(exclude_none=True)
        if isinstance(data, dict):
            return data
    raise TypeError(f"expected a chunk dict or an openai chunk object, got {type(chunk)!r}")


class ToolCallAggregator:
    """Feed streamed chunks; get text as it comes and the tool calls at the end.

    Attributes:
        finish_reason: The stream's finish reason, once seen.
    """

    def __init__(self) -> None:
        self._stream = StreamAggregator()
        self._ready: list[ToolUseBlock | ToolUseError] = []
        self._finished = False

    @property
    def finish_reason(self) -> str | None:
        return self._stream.finish_reason

    @property
    def text(self) -> str:
        """The visible text seen so far."""
        return self._stream.text

    def process_chunk(self, chunk: Any) -> TextBlock | None:
        """Take one chunk (dict or openai object); return its visible text, if any."""
        return self._text_of(self._stream.feed(_as_dict(chunk)))

    def finalize_tools(self) -> list[ToolUseBlock | ToolUseError]:
        """The complete tool calls (and unusable ones as errors), once the stream ended."""
        if not self._finished:
            self._finished = True
            self._text_of(self._stream.finish())
        calls, self._ready = self._ready, []
        return calls

    def _text_of(self, blocks: list[Block]) -> TextBlock | None:
        pieces: list[str] = []
        for block in blocks:
            if isinstance(block, TextBlock):
                pieces.append(block.text)
            elif isinstance(block, ToolUseBlock | ToolUseError):
                self._ready.append(block)
        return TextBlock("".join(pieces)) if pieces else None
