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
    schemas = [t.to_openai_format() if hasattr(t, "to_openai_format") else t for t in tools]
    return sum(_schema_tokens(schema_json(s)) for s in schemas)


@lru_cache(maxsize=1024)
def _schema_tokens(text: str) -> int:
    return count_text_tokens(text)
