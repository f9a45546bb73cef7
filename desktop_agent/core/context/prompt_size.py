"""The size of a request in tokens, counted once per distinct message.

Compaction checks the prompt before every request of a long agent run; the
history grows by a few messages each time, so counts are cached by message
content and only the new messages are tokenised.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from desktop_agent.core.context.tokens import (
    TOKENS_PER_MESSAGE,
    count_text_tokens,
    message_text,
    schema_json,
)

#: Tokens the server adds around the whole prompt (the assistant header).
_PROMPT_FRAME = 3


def _fingerprint(text: str | None) -> tuple[int, int] | None:
    """``text`` told apart by its length and hash, without holding on to it."""
    return None if text is None else (len(text), hash(text))


class TokenCounter:
    """Counts messages and tool schemas, remembering what it has counted.

    The cache is keyed by each message's fingerprint, not its text: a counter
    lives as long as its conversation's client, and keys holding the texts kept
    every message of the conversation in memory between turns (up to the limit),
    after the history itself was let go. Two texts of one length with one hash
    would share a count: an estimate off, never a message changed.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._cache: dict[tuple[Any, ...], int] = {}
        self._limit = limit

    def message(self, message: dict[str, Any]) -> int:
        """Tokens of one message, framing included."""
        content = message.get("content")
        calls = message.get("tool_calls")
        key = (message.get("role"),
               _fingerprint(content if isinstance(content, str | None) else repr(content)),
               _fingerprint(repr(calls)) if calls else None, message.get("name"))
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= self._limit:
                self._cache.clear()
            found = TOKENS_PER_MESSAGE + count_text_tokens(message_text(message))
            self._cache[key] = found
        return found

    def messages(self, messages: Sequence[dict[str, Any]]) -> int:
        """Tokens of a message list as a prompt (without tools)."""
        if not messages:
            return 0
        return sum(self.message(m) for m in messages) + _PROMPT_FRAME

    def request(self, messages: Sequence[dict[str, Any]], tools: Sequence[Any] = ()) -> int:
        """Tokens of a request: its messages and the tool schemas sent with it."""
        return self.messages(messages) + tools_tokens(tools)


def tools_tokens(tools: Sequence[Any]) -> int:
    """Tokens of the tool schemas (``Tool`` objects or OpenAI dicts) as sent."""
    if not tools:
        return 0
    return sum(_tool_tokens(t) for t in tools)


_TOOL_TOKENS: dict[tuple[str, str, int], tuple[Any, int]] = {}
"""Tokens of a tool by its name, description and schema object (kept, so its id stays its own).

A turn's start counts its tools several times (the context check, the doctor,
compaction before the request), each time serializing every schema again; the
schemas are shared between the turns of every conversation (built-in tools keep
theirs, MCP tools are listed once), so each is serialized once. A schema is
read-only once made: one changed in place would keep its old count (an
estimate off, nothing sent changed)."""


def _tool_tokens(tool: Any) -> int:
    if hasattr(tool, "to_openai_format"):
        name, description, schema = tool.name, tool.description, tool.input_schema
        as_sent = tool.to_openai_format
    else:
        function = tool.get("function") if isinstance(tool, dict) and \
            tool.keys() == {"type", "function"} else None
        if not isinstance(function, dict) or \
                function.keys() != {"name", "description", "parameters"}:
            return _schema_tokens(schema_json(tool))
        name, description, schema = (function["name"], function["description"],
                                     function["parameters"])

        def as_sent() -> Any:
            return tool
    if not isinstance(name, str) or not isinstance(description, str):
        return _schema_tokens(schema_json(as_sent()))
    key = (name, description, id(schema))
    known = _TOOL_TOKENS.get(key)
    if known is not None and known[0] is schema:
        return known[1]
    count = _schema_tokens(schema_json(as_sent()))
    if len(_TOOL_TOKENS) >= 1024:
        _TOOL_TOKENS.clear()
    _TOOL_TOKENS[key] = (schema, count)
    return count


@lru_cache(maxsize=1024)
def _schema_tokens(text: str) -> int:
    return count_text_tokens(text)
