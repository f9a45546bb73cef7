"""Which calls of a constrained list the model meant, and which it ran on into.

A constrained reply may call one tool several times, ``{"name": ..., "arguments":
[{...}, {...}]}`` (:mod:`.constrained_calls`). Once inside the list a small model
often goes on past what was asked, up to the grammar's cap. Seen with
SmolLM2-135M on BFCL's cases (``bench/bfcl.py``), the extra calls are of three
kinds: the same call again (``5``, ``5``); the same values in another order
(``a=2, b=5`` then ``a=5, b=2``); and values nobody wrote (the factorial of
``5`` asked, then of ``1``, ``2``, ``3``). Calls the person asked for differ
from the first call by values the person wrote ("Taylor Swift and Maroon 5",
"for 10, 20 and 30 years").

So a call after the first is kept only when it is not a repeat or a reordering
of a kept one, and each of its values that differs from the first call's can
be found in what was said (the person's messages and the tools' results).
The first call is always kept: this only judges the model's continuation.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

_NUMBER = re.compile(r"\d+(?:\.\d+)?%?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_WORD = re.compile(r"\w+")


class Said:
    """What a list's later calls may draw their values from, indexed on first use.

    Built for every constrained request but needed only when a reply lists more
    than one call, so the history is read then, not on every round.

    Args:
        history: The conversation's messages; the person's and the tools' count.
    """

    def __init__(self, history: list[dict[str, Any]]) -> None:
        self._history = list(history)  # the messages so far, not later appends

    @functools.cached_property
    def text(self) -> str:
        """The person's messages and the tools' results, joined, lower-cased.

        The system prompt is left out: it holds the tools' descriptions and the
        example in :func:`.constrained_calls.instructions`, which no call should
        draw values from.
        """
        parts: list[str] = []
        for message in self._history:
            if message.get("role") not in ("user", "tool"):
                continue
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(part["text"] for part in content if isinstance(part, dict)
                             and isinstance(part.get("text"), str))
        return "\n".join(parts).lower()

    @functools.cached_property
    def words(self) -> set[str]:
        """The words said."""
        return set(_WORD.findall(self.text))

    @functools.cached_property
    def numbers(self) -> set[float]:
        """The numbers said, as written and "5%" also as 0.05."""
        numbers: set[float] = set()
        for match in _NUMBER.finditer(_THOUSANDS.sub("", self.text)):
            token = match.group(0)
            value = float(token.rstrip("%"))
            numbers.add(value)
            if token.endswith("%"):  # "5%" is also written 0.05
                numbers.add(value / 100)
        return numbers

    def holds(self, value: Any) -> bool:
        """Whether ``value`` (any JSON value) can be found in what was said."""
        if value is None or isinstance(value, bool):
            return True  # a flag is a choice, not a value someone writes
        if isinstance(value, int | float):
            return any(math.isclose(abs(value), n, rel_tol=1e-9, abs_tol=1e-12)
                       for n in self.numbers)
        if isinstance(value, str):
            wanted = value.strip().lower()
            words = _WORD.findall(wanted)
            return not wanted or wanted in self.text or (
                bool(words) and all(w in self.words for w in words))
        if isinstance(value, list):
            return all(self.holds(v) for v in value)
        if isinstance(value, dict):
            return all(self.holds(v) for v in value.values())
        return True


def meant(calls: list[Any], said: Said | None) -> list[Any]:
    """The calls of one list the model meant: the first, then those that pass the rules above.

    Args:
        calls: The list's argument objects, in the order written.
        said: What was said; None judges repeats and reorderings only.
    """
    if not calls:
        return []
    first = calls[0]
    kept = [first]
    seen = {_exact(first)}
    shuffles = {_values(first)}
    for call in calls[1:]:
        exact = _exact(call)
        if exact in seen:
            continue
        if isinstance(call, dict) and isinstance(first, dict):
            if _values(call) in shuffles:
                continue
            if said is not None and not all(
                    said.holds(value) for key, value in call.items()
                    if first.get(key) != value):
                continue
        seen.add(exact)
        shuffles.add(_values(call))
        kept.append(call)
    return kept


def _exact(call: Any) -> str:
    return json.dumps(call, sort_keys=True, ensure_ascii=False)


def _values(call: Any) -> str:
    """The call's values without their names: equal for two orderings of the same values."""
    if not isinstance(call, dict):
        return _exact(call)
    return json.dumps(sorted(_exact(v) for v in call.values()), ensure_ascii=False)
