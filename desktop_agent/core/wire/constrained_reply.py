"""Reading the reply of a constrained request as it streams: the answer's text, or calls.

Under constrained tool calls
(:mod:`~desktop_agent.core.tooling.constrained_calls` builds the request and
says why) every reply is one JSON object: ``{"answer": "..."}``, or ``{"name":
..., "arguments": {...}}``, or the same with a list of argument objects.
:class:`ConstrainedReplyParser` shows the answer's text while it streams and
turns calls into the same
:class:`~desktop_agent.core.wire.text_tool_calls.TextCall` s as calls written as
text, so the stream aggregator treats both alike; of a list of calls it keeps
the ones the model meant (:mod:`.call_lists`), less a call of placeholders or of
a needed value nobody gave, and less optional values nobody gave. A list cut by
the token limit keeps the calls it closed before the cut: a small model inside a
list runs on until the limit, and asking again with more room cost a second
request for calls already whole. A reply that is not JSON after all (a server
that ignores ``response_format``) is read as ordinary text, calls written as
text included (Mistral's ``[TOOL_CALLS]...`` too, which also starts with ``[``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from desktop_agent.core.wire.call_lists import (
    Said,
    invents_needed,
    keyed_scalars,
    meant,
    placeholder,
)
from desktop_agent.core.wire.text_tool_calls import (
    TextCall,
    TextToolCallParser,
    call_from,
    parse_arguments,
)

ANSWER_KEY = "answer"
CALLS_KEY = "tool_calls"
NAME_KEY = "name"
ARGUMENTS_KEY = "arguments"

#: One piece of 2 to 40 characters written at least four times in a row, to the end.
_LOOP = re.compile(r"(.{2,40}?)\1{3,}(?=.{0,40}\Z)", re.DOTALL)
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t"}


class ConstrainedReplyParser:
    """Reads a constrained reply as it streams: the answer's text, or the calls at the end.

    The same interface as :class:`~desktop_agent.core.wire.text_tool_calls.TextToolCallParser`
    (``feed``, ``finish``, ``calls``), so the stream aggregator uses either.

    Args:
        said: What the person and the tools said, which a list's later calls
            must draw their new values from (:mod:`.call_lists`); None judges
            repeats and reorderings only.
    """

    def __init__(self, said: Said | None = None) -> None:
        self.calls: list[TextCall] = []
        self._said = said
        self._buffer = ""
        self._state = "start"  # start, key, string, after, held, plain
        self._at = 0  # where reading continues in the buffer
        self._fallback: TextToolCallParser | None = None
        #: Whether the reply was whole JSON as sent (False: repaired, cut, or not JSON).
        self.complete = False
        #: The reply was a call of blanks and copied names only, or one that made up a
        #: value the tool needs (:func:`.call_lists.placeholder`,
        #: :func:`.call_lists.invents_needed`), which is not kept: the person gave the
        #: tool nothing, or not what it needs, and is asked instead.
        self.placeholder_call = False

    def feed(self, piece: str) -> str:
        """Take a piece of the reply; return the answer text that can be shown now."""
        if self._fallback is not None:
            return self._fallback.feed(piece)
        self._buffer += piece
        return self._advance()

    def finish(self) -> str:
        """The stream ended: settle the calls; return text still held back."""
        if self._fallback is not None:
            shown = self._fallback.finish()
            self.calls = self._fallback.calls
            return shown
        if self._state in ("string", "after"):
            return ""  # the answer was shown as it came (an unclosed one is kept as is)
        try:
            json.loads(self._buffer)
            self.complete = True
        except json.JSONDecodeError:
            self.complete = False
            whole = _whole_calls_of_cut_list(self._buffer)
            if whole is not None:  # the calls closed before the cut are what was meant
                self.complete = True
                self._add_calls(_call_items(whole, self._said) or [])
                return ""
            cut = _looped_call(self._buffer) or _cut_call(self._buffer)
            if cut is not None and self._said is not None and keyed_scalars(
                    cut.get(ARGUMENTS_KEY)) and _unasked(
                    cut[NAME_KEY], cut.get(ARGUMENTS_KEY), self._said):
                self.placeholder_call = True  # a loop or a start of nothing the person gave
                return ""
        value, error = parse_arguments(self._buffer)
        items = _call_items(value, self._said)
        if error is not None or (items is None and not isinstance(value, dict)):
            if self._buffer.strip():
                self.calls.append(TextCall(None, None, self._buffer,
                                           error or "The reply is not a JSON object."))
            return ""
        answer = value.get(ANSWER_KEY) if isinstance(value, dict) else None
        self._add_calls(items or [])
        return answer if isinstance(answer, str) else ""

    def _add_calls(self, items: list[Any]) -> None:
        if self._said is not None and items:
            meant_calls = [item for item in items if not (
                isinstance(item, dict) and isinstance(item.get(NAME_KEY), str)
                and _unasked(item[NAME_KEY], item.get(ARGUMENTS_KEY), self._said))]
            self.placeholder_call = not meant_calls
            items = meant_calls
        seen: set[str] = set()
        for item in items:  # a small model repeats its call until the list is full
            raw = json.dumps(item, sort_keys=True, ensure_ascii=False)
            if raw not in seen:
                seen.add(raw)
                self.calls.append(call_from(item, raw))

    def _advance(self) -> str:
        shown: list[str] = []
        buffer = self._buffer
        while self._at < len(buffer):
            if self._state == "start":
                stripped = buffer[self._at:].lstrip()
                if not stripped:
                    return ""
                if stripped.startswith("["):
                    after = stripped[1:].lstrip()
                    if not after:
                        return ""  # "[": a list, or markup such as [TOOL_CALLS]
                    if after[0] in "{]":  # a list of calls: parsed whole at the end
                        self._state = "held"
                        return ""
                if not stripped.startswith("{"):  # not constrained after all: plain text
                    self._fallback = TextToolCallParser()
                    return self._fallback.feed(buffer)
                self._at = len(buffer) - len(stripped) + 1
                self._state = "key"
            elif self._state == "key":
                rest = buffer[self._at:]
                colon = rest.find(":")
                if colon < 0:
                    return ""
                key = rest[:colon].strip().strip('"')
                if key != ANSWER_KEY:
                    self._state = "held"  # calls: parsed whole at the end
                    return ""
                value = rest[colon + 1:].lstrip()
                if not value:
                    return ""
                if not value.startswith('"'):
                    self._state = "held"
                    return ""
                self._at = len(buffer) - len(value) + 1
                self._state = "string"
            elif self._state == "string":
                text, done = self._string_part(buffer)
                shown.append(text)
                if not done:
                    break
                self._state = "after"
            else:  # after the answer, or held for the end
                break
        return "".join(shown)

    def _string_part(self, buffer: str) -> tuple[str, bool]:
        """Decode the answer string from ``self._at``; (text, whether it closed)."""
        out: list[str] = []
        at = self._at
        while at < len(buffer):
            char = buffer[at]
            if char == '"':
                self._at = at + 1
                return "".join(out), True
            if char != "\\":
                out.append(char)
                at += 1
                continue
            if at + 1 >= len(buffer):
                break  # an escape split across pieces: wait for the rest
            code = buffer[at + 1]
            if code == "u":
                if at + 6 > len(buffer):
                    break
                out.append(_unicode(buffer, at))
                at += 6
                if 0xD800 <= ord(out[-1]) < 0xDC00:  # a surrogate pair: join its halves
                    if at + 6 > len(buffer):
                        out.pop()
                        at -= 6
                        break
                    if buffer.startswith("\\u", at):
                        out[-1] = (out[-1] + _unicode(buffer, at)).encode(
                            "utf-16", "surrogatepass").decode("utf-16")
                        at += 6
            else:
                out.append(_ESCAPES.get(code, code))
                at += 2
        self._at = at
        return "".join(out), False


def _unasked(name: str, arguments: Any, said: Said) -> bool:
    """Whether a call is not what the person asked for: placeholders, or a needed value made up."""
    return placeholder(name, arguments, said) or invents_needed(name, arguments, said)


def _call_items(value: Any, said: Said | None = None) -> list[Any] | None:
    """The calls a reply holds, one item per call, or None when it holds none.

    ``{"name": ..., "arguments": {...}}`` is one call and ``"arguments": [...]``
    one call per object the model meant (:func:`.call_lists.meant`). A list of
    calls and ``{"tool_calls": [...]}`` (this mode's earlier shape, and what a
    server that ignores the schema may still get) are read too.
    """
    if isinstance(value, dict) and isinstance(value.get(NAME_KEY), str):
        name = value[NAME_KEY]
        listed = value.get(ARGUMENTS_KEY)
        if isinstance(listed, list) and listed:
            return [{NAME_KEY: name, ARGUMENTS_KEY: one}
                    for one in meant([_pruned(name, one, said) for one in listed], said)]
        if ARGUMENTS_KEY in value:
            return [{**value, ARGUMENTS_KEY: _pruned(name, listed, said)}]
        return [value]
    if isinstance(value, dict):
        value = value.get(CALLS_KEY)
    if not isinstance(value, list):
        return None
    out: list[Any] = []
    for item in value:
        out.extend(_call_items(item, said) or [item])
    return out


_LIST_START = re.compile(r'\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*\[')


def _pruned(name: str, arguments: Any, said: Said | None) -> Any:
    """The arguments less the optional ones nobody gave; a call of placeholders stays whole.

    (It is judged whole, :func:`.call_lists.placeholder`, and then not run.)
    """
    if said is None or placeholder(name, arguments, said):
        return arguments
    return said.without_unsaid_options(name, arguments)


def _looped_call(buffer: str) -> dict[str, Any] | None:
    """The call a reply cut inside a repetition loop holds, the loop cut back to one piece.

    A small model writing a string it has nothing for can repeat one piece until
    the token limit (SmolLM2-135M asked "is there any class at University in
    Sydney in May?" of a concert tool: ``"artist": "cronite_cronite_cronite_...``).
    Asking again with more room only lengthens the loop, since a greedy reply
    starts the same; so the call is judged by what it holds with the loop written
    once (:func:`.call_lists.placeholder`). None when the reply does not end in a
    loop or is no call.
    """
    loop = _LOOP.search(buffer)
    if loop is None:
        return None
    piece = loop.group(1)
    if not piece.startswith(buffer[loop.end():]):
        return None  # the loop stopped before the cut: a long value, not a loop
    return _closed_call(buffer[:loop.start()] + piece)


def _cut_call(buffer: str) -> dict[str, Any] | None:
    """The call a cut reply holds so far, its last string and brackets closed, or None.

    Judged like a whole call (:func:`_unasked`): when what the model wrote before the
    cut already holds nothing the person gave, or makes up a value the tool needs
    (SmolLM2-135M asked "I want to see some sort of Play movie" wrote
    ``"movie_name": "Movie_1_GetTiem_2_GetTiem_3_...`` to the limit), more room would
    only finish a call that is not run; the request goes again held to an answer.
    """
    value = _closed_call(buffer)
    if value is not None:
        arguments = value.get(ARGUMENTS_KEY)
        if isinstance(arguments, list) and len(arguments) == 1:  # one call of a list so far
            value = {**value, ARGUMENTS_KEY: arguments[0]}
    return value


def _closed_call(text: str) -> dict[str, Any] | None:
    """A cut call with its last string and its brackets closed, or None when it is no call."""
    for closing in ('"', ""):  # cut inside a string, or elsewhere
        value, error = parse_arguments(text + closing)
        if error is None and isinstance(value, dict) and isinstance(value.get(NAME_KEY), str):
            return value
    return None


def _whole_calls_of_cut_list(buffer: str) -> dict[str, Any] | None:
    """The call with the argument objects that closed before the reply was cut, or None.

    A small model inside a list of calls often runs on until the token limit cuts
    it; the objects it closed before are whole calls (which :mod:`.call_lists`
    then judges), only the last one is cut. None when no object closed, or the
    reply is not a list of calls.
    """
    start = _LIST_START.match(buffer.lstrip())
    if start is None:
        return None
    text = buffer.lstrip()
    name = json.loads(start.group(1))
    decoder = json.JSONDecoder()
    at = start.end()
    whole: list[Any] = []
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        try:
            item, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            break
        if not isinstance(item, dict):
            return None
        whole.append(item)
    if not whole:
        return None
    return {NAME_KEY: name, ARGUMENTS_KEY: whole}


def _unicode(buffer: str, at: int) -> str:
    try:
        return chr(int(buffer[at + 2:at + 6], 16))
    except ValueError:
        return buffer[at:at + 6]
