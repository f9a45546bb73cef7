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
    key = (hash(content), len(content), budget, name,
           offset if isinstance(offset, int) else None)
    with _CUTS_LOCK:
        known = key in _CUTS
        cut = _CUTS.get(key)
        if known:
            _CUTS.move_to_end(key)
    if not known:
        cut = _cut(content, budget, name, key[4])
        with _CUTS_LOCK:
            _CUTS[key] = cut
            if len(_CUTS) > _CUTS_KEPT:
                _CUTS.popitem(last=False)
    return content if cut is None else cut


#: Cuts remembered: the same big result is cut again for every request of a
#: conversation. Keyed by the result's hash and length, and a result that fits is
#: remembered as None: a cache holding the results themselves kept the last 256
#: big outputs of every conversation in memory (a 2,000-line build log each), long
#: after their conversations had let them go. A collision (about one chance in
#: 2**64 for texts of the same length) would send another result's cut.
_CUTS: OrderedDict[tuple[int, int, int, str | None, int | None], str | None] = OrderedDict()
_CUTS_KEPT = 256
_CUTS_LOCK = threading.Lock()  # requests may be built on several threads at once


def _cut(content: str, budget: int, name: str | None, offset: int | None) -> str | None:
    """The head of ``content`` within ``budget`` and a note; None when it fits whole."""
    total = count_text_tokens(content)
    if total <= budget:
        return None
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
