"""The loop guard: the repeats small models make, caught before they burn a turn.

A model that is stuck rarely repeats itself byte for byte. What small models
do in practice is the same call with arguments that differ only in form
(``"a.txt"`` / ``" a.txt "``, ``2`` / ``"2"`` / ``2.0``, a ``null`` argument
added), or two calls taking turns (read, list, read, list...). Letter case is
not set aside: ``AA``/``Aa``/``aa`` are three genotypes, and file names differ
by case on most systems. Three rules,
checked on the calls of one turn in the order they were made:

* ``identical``: the same call ``threshold`` times in a row;
* ``near-identical``: the same tool ``threshold`` times in a row with
  arguments equal once spacing, number formatting and empty values are set
  aside (:func:`normalized`);
* ``alternating``: two different calls taking turns, A/B/A/B.

The first time a rule matches, the calls are not run: the model gets a
corrective tool result saying what it did and what to do instead, and may
change course. If a rule matches again in the same turn (the same call once
more is enough: the window is not reset), the turn stops and the stop names
the rule, so the person sees why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from desktop_agent.core.types import ToolUseBlock

LoopRule = Literal["identical", "near-identical", "alternating"]

#: Calls in an A/B/A/B run before the alternation counts as a loop.
ALTERNATION_LENGTH = 4

_SPACES = re.compile(r"\s+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True, slots=True)
class LoopVerdict:
    """What the guard decided about the latest calls.

    Attributes:
        rule: The rule that matched.
        stop: True: end the turn; False: answer the calls with ``correction``.
        correction: The tool result the model gets instead of running the calls.
        message: The stop's sentence for the person ("Stopped: ..."), naming the rule.
    """

    rule: LoopRule
    stop: bool
    correction: str
    message: str


def normalized(value: Any) -> Any:
    """Arguments with their trivial differences set aside.

    Strings have runs of spaces collapsed and ends stripped (case is kept);
    numbers (and strings that are only a number) become floats; ``None``,
    empty strings, lists and objects are dropped from objects, so a model that
    adds ``"limit": null`` has not made a new call.
    """
    if isinstance(value, dict):
        out = {str(k).strip(): normalized(v) for k, v in value.items()}
        return {k: v for k, v in sorted(out.items()) if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = _SPACES.sub(" ", value).strip()
        return float(text) if _NUMBER.fullmatch(text) else text
    return str(value)


def _exact(call: ToolUseBlock) -> str:
    return call.name + "\x00" + json.dumps(call.input, sort_keys=True, default=str)


def _loose(call: ToolUseBlock) -> str:
    return call.name + "\x00" + json.dumps(normalized(call.input), sort_keys=True, default=str)


@dataclass(slots=True)
class LoopGuard:
    """Watches one turn's calls; one instance per turn.

    Args:
        threshold: Calls in a row that make a repeat (0 turns the guard off).
    """

    threshold: int = 3
    _exact: list[str] = field(default_factory=list)
    _loose: list[str] = field(default_factory=list)
    _names: list[str] = field(default_factory=list)
    _corrected: bool = False

    def observe(self, calls: list[ToolUseBlock]) -> LoopVerdict | None:
        """Take a round's calls; a verdict when they make a loop, else None."""
        if not self.threshold or not calls:
            return None
        for call in calls:
            self._exact.append(_exact(call))
            self._loose.append(_loose(call))
            self._names.append(call.name)
        rule = self._rule()
        if rule is None:
            return None
        stop, self._corrected = self._corrected, True
        return _verdict(rule, stop, calls[-1].name, self.threshold, self._names)

    def _rule(self) -> LoopRule | None:
        n = self.threshold
        if len(self._exact) >= n and len(set(self._exact[-n:])) == 1:
            return "identical"
        if len(self._loose) >= n and len(set(self._loose[-n:])) == 1:
            return "near-identical"
        tail = self._loose[-ALTERNATION_LENGTH:]
        if len(tail) == ALTERNATION_LENGTH and tail[0] != tail[1] and all(
                tail[i] == tail[i % 2] for i in range(ALTERNATION_LENGTH)):
            return "alternating"
        return None


def _verdict(rule: LoopRule, stop: bool, name: str, threshold: int,
             names: list[str]) -> LoopVerdict:
    if rule == "alternating":
        pair = " and ".join(dict.fromkeys(names[-2:])) if len(names) >= 2 else name
        what = f"You are alternating between the same calls ({pair}) without progress"
        said = f"{pair} alternated with the same arguments ({rule} calls)"
    elif rule == "near-identical":
        what = (f"You called {name} {threshold} times with arguments that differ only in "
                "spacing, number format or empty values")
        said = (f"{name} was called {threshold} times in a row with nearly the same arguments "
                f"({rule} calls)")
    else:
        what = f"You called {name} with the same arguments {threshold} times"
        said = f"{name} was called {threshold} times in a row with the same arguments " \
               f"({rule} calls)"
    correction = (f"Not executed: {what}; the result will not change. Use the results you "
                  "already have, try a different tool or different arguments, or answer the "
                  "person with what you know.")
    return LoopVerdict(rule, stop, correction,
                       f"Stopped by the loop guard: {said}, again after being told.")
