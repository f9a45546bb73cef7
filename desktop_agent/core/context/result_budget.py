"""Tool results within a token budget, in the request only.

One ``read_file`` of a big file or one chatty command can fill a small
model's whole context. The model gets the head of such a result and a note
saying how much was cut and how to read on; ``Client.history``, the store and
the tool card keep the full text, because the cut is made in the request view
(:func:`budget_tool_messages`) and not in the history.

The cut is deterministic, so the same history always gives the same request
and the server's prompt cache keeps matching.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from desktop_agent.core.context.tokens import count_text_tokens

#: The budget when the context window is unknown.
DEFAULT_RESULT_BUDGET = 4000
#: A quarter of the context window when it is known.
CONTEXT_SHARE = 4
_MIN_BUDGET = 64
#: Cuts remembered (the newest): one per big result in the conversations under way.
_CUTS_KEPT = 256


def result_budget(context_length: int | None, configured: int | None = None) -> int:
    """Tokens one tool result may take in a request."""
    if configured is not None:
        return max(_MIN_BUDGET, configured)
    if context_length:
        return max(_MIN_BUDGET, context_length // CONTEXT_SHARE)
    return DEFAULT_RESULT_BUDGET


def cut_result(content: str, budget: int, name: str | None = None,
               arguments: dict[str, Any] | None = None) -> str:
    """``content`` as the model gets it: whole, or its head plus a note.

    Args:
        content: The full tool result.
        budget: Tokens the result (note included) may take.
        name: The tool's name, to say how to read further.
        arguments: The call's arguments (``read_file``'s offset).
    """
    offset = arguments.get("offset") if arguments else None
    return _cut(content, budget, name, offset if isinstance(offset, int) else None)


class _Cuts:
    """The cuts made lately: the same big result is cut again for every request.

    Keyed by the result's length and hash rather than its text, and a result
    kept whole is remembered as such: a cache holding the texts kept the last
    results of every conversation (command outputs of up to 30,000 characters)
    in memory long after their turns had let the history go.
    """

    def __init__(self, kept: int) -> None:
        self._kept = kept
        self._cuts: OrderedDict[tuple[Any, ...], str | None] = OrderedDict()
        self._lock = threading.Lock()  # requests are built on worker threads too

    def get(self, content: str, budget: int, name: str | None, offset: int | None) -> str:
        key = (len(content), hash(content), budget, name, offset)
        with self._lock:
            if key in self._cuts:
                self._cuts.move_to_end(key)
                cut = self._cuts[key]
                return content if cut is None else cut
        cut = _cut_now(content, budget, name, offset)
        with self._lock:
            self._cuts[key] = None if cut is content else cut
            while len(self._cuts) > self._kept:
                self._cuts.popitem(last=False)
        return cut


_CUTS = _Cuts(_CUTS_KEPT)


def _cut(content: str, budget: int, name: str | None, offset: int | None) -> str:
    return _CUTS.get(content, budget, name, offset)


def _cut_now(content: str, budget: int, name: str | None, offset: int | None) -> str:
    total = count_text_tokens(content)
    if total <= budget:
        return content
    keep_tokens = max(16, budget - 60)  # room for the note
    head = head_within(content, keep_tokens)
    shown_lines = head.count("\n")
    note = (f"\n[Result truncated to fit the context: showing {count_text_tokens(head)} of "
            f"{total} tokens ({len(head):,} of {len(content):,} characters). "
            f"{_how_to_read_on(name, offset, shown_lines)}]")
    return head + note


def _how_to_read_on(name: str | None, offset: int | None, shown_lines: int) -> str:
    if name == "read_file":
        start = max(1, offset or 1)
        return (f"Call read_file again with offset={start + shown_lines} (and a smaller limit) "
                "to read on.")
    if name in ("bash", "grep", "glob", "list_dir"):
        return "Narrow the request (a tighter pattern, or pipe through head/tail) to see the rest."
    return "Ask for a smaller part of it to see the rest."


def head_within(text: str, tokens: int) -> str:
    """The longest prefix of ``text`` (cut at a line end when one is near) within ``tokens``."""
    # a token is rarely more than ~10 characters: no need to encode the whole text
    low, high = 0, min(len(text), tokens * 10)
    while low < high:
        mid = (low + high + 1) // 2
        if count_text_tokens(text[:mid]) <= tokens:
            low = mid
        else:
            high = mid - 1
    head = text[:low]
    newline = head.rfind("\n")
    if newline > len(head) * 0.8:
        head = head[:newline + 1]
    return head


def budget_tool_messages(messages: Sequence[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """``messages`` with every over-budget ``tool`` result cut (a new list; inputs untouched)."""
    arguments_of: dict[str, tuple[str | None, dict[str, Any] | None]] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                arguments_of[str(call.get("id"))] = (function.get("name"),
                                                     _arguments(function.get("arguments")))
        content = message.get("content")
        # a cheap length test first: a string under budget*1 chars is under budget tokens
        if role == "tool" and isinstance(content, str) and len(content) > budget:
            name, arguments = arguments_of.get(str(message.get("tool_call_id")),
                                               (message.get("name"), None))
            cut = cut_result(content, budget, name or message.get("name"), arguments)
            if cut != content:
                message = {**message, "content": cut}
        out.append(message)
    return out


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None
