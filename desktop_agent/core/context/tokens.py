"""Context utilities: count tokens offline and trim history safely.

The tokenizer file (cl100k_base) ships inside the app, because tiktoken's own
loader downloads it on first use and this app must work offline. cl100k is not
every local model's tokenizer, but it is within a few percent for English
text and code, which is what a context gauge needs.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger("desktop_agent.context")

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
}
# Per-message framing tokens in the ChatML-style formats most chat templates use.
TOKENS_PER_MESSAGE = 4


def _tokenizer_file() -> Path:
    override = os.environ.get("DESKTOP_AGENT_TOKENIZER_FILE")
    if override:
        return Path(override)
    from desktop_agent.appdata.resource_files import resource_path

    return resource_path("cl100k_base.tiktoken")


@cache
def _encoding() -> Any:
    """The shipped cl100k_base encoding, or None when it cannot be loaded."""
    path = _tokenizer_file()
    try:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe
    except ImportError:  # the SDK installed alone: tiktoken is the `tokenizer` extra
        log.info("tiktoken is not installed (pip install 'desktop-agent[tokenizer]' counts "
                 "exactly); estimating tokens as characters/4")
        return None
    try:
        ranks = load_tiktoken_bpe(str(path), expected_hash=CL100K_SHA256)
        return tiktoken.Encoding(name="cl100k_base", pat_str=_CL100K_PATTERN,
                                 mergeable_ranks=ranks, special_tokens=_SPECIAL_TOKENS)
    except Exception as exc:  # noqa: BLE001 - missing file, bad hash, no tiktoken: count characters
        log.warning("tokenizer unavailable (%s); estimating tokens as characters/4", exc)
        return None


def message_text(message: dict[str, Any]) -> str:
    """The text of a message that costs tokens: content parts, tool calls, name."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        parts.append(str(function.get("name", "")))
        parts.append(str(function.get("arguments", "")))
    if message.get("name"):
        parts.append(str(message["name"]))
    return "\n".join(parts)


def count_text_tokens(text: str) -> int:
    """Tokens in one string (characters/4 when no tokenizer is available)."""
    encoding = _encoding()
    if encoding is None:
        return (len(text) + 3) // 4
    return len(encoding.encode(text, disallowed_special=()))


def estimate_tokens(messages: Iterable[dict[str, Any]] | str, model: str | None = None,
                    tools: Sequence[Any] | None = None) -> int:
    """Estimate the prompt tokens of ``messages`` (and tool schemas, if given).

    Args:
        messages: OpenAI message dicts, or one string.
        model: Accepted for API compatibility; every model is counted with cl100k.
        tools: Tools (``Tool`` or OpenAI dicts) whose schemas are sent too.
    """
    del model  # one shipped tokenizer serves every local model as an estimate
    if isinstance(messages, str):
        return count_text_tokens(messages)
    return prompt_tokens(messages, tools, count_text_tokens)


def prompt_tokens(messages: Iterable[dict[str, Any]], tools: Sequence[Any] | None,
                  count_text: Callable[[str], int]) -> int:
    """A request's tokens with ``count_text`` for each piece of text.

    One layout of the per-message and per-request overhead, whichever counter
    (the tokenizer, or the quick guess that needs none) measures the text.
    """
    total = 0
    count = 0
    for message in messages:
        count += 1
        total += TOKENS_PER_MESSAGE + count_text(message_text(message))
    for tool in tools or ():
        schema = tool.to_openai_format() if hasattr(tool, "to_openai_format") else tool
        total += count_text(schema_json(schema))
    return total + (3 if count else 0)


def schema_json(schema: Any) -> str:
    """A tool schema as the request carries it (the compact JSON httpx sends).

    A server's chat template may re-render it with spaces, which costs about
    a quarter more; compaction's retry on the server's refusal covers that.
    """
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def truncate_messages(messages: Sequence[dict[str, Any]], keep: int = 10,
                      preserve_system: bool = True) -> list[dict[str, Any]]:
    """Keep the last ``keep`` messages (plus the system message) as a new list.

    Never leaves a ``tool`` message without the assistant ``tool_calls`` that
    it answers, nor an assistant ``tool_calls`` without all its results: a
    chain that would be cut is dropped whole, so the result may hold fewer
    than ``keep`` messages.
    """
    if keep < 0:
        raise ValueError("keep must be 0 or more")
    system = [m for m in messages if m.get("role") == "system"][:1] if preserve_system else []
    rest = [m for m in messages if not (preserve_system and m.get("role") == "system")]
    tail = list(rest[len(rest) - keep:]) if keep else []
    # drop leading tool results whose assistant message was cut away
    while tail and tail[0].get("role") == "tool":
        tail.pop(0)
    # drop assistant tool_calls whose results are not all present
    cleaned: list[dict[str, Any]] = []
    i = 0
    while i < len(tail):
        message = tail[i]
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls:
            wanted = {c.get("id") for c in calls}
            j = i + 1
            found: set[Any] = set()
            while j < len(tail) and tail[j].get("role") == "tool":
                found.add(tail[j].get("tool_call_id"))
                j += 1
            if wanted <= found:
                cleaned.extend(tail[i:j])
            i = j
            continue
        if message.get("role") == "tool":
            i += 1  # an orphan result in the middle: its call was dropped above
            continue
        cleaned.append(message)
        i += 1
    return [dict(m) for m in system] + [dict(m) for m in cleaned]
