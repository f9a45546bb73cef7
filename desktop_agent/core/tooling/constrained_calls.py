"""Constrained tool calls: the server may only produce a valid call or an answer.

Small local models often write a call with a wrong tool name, a missing
argument or broken JSON. Servers with constrained decoding (llama.cpp, LM
Studio, vLLM, Ollama: OpenAI's ``response_format`` with a JSON schema, which
they compile to a grammar) can rule that out: under this mode (the default
where :mod:`.tool_call_mode` finds such a server and a model not known to call
natively, or ``AgentOptions(constrained_tool_calls=True)``) every reply must be

    {"answer": "text for the person"}
    {"name": "<one of the tools>", "arguments": {<its schema>}}
    {"name": "<one of the tools>", "arguments": [{<its schema>}, ...]}

the last one calling the same tool once per object (2 to :data:`MAX_CALLS`
times). The tool's name is the call's first decision and the grammar then
holds the arguments to that tool's own schema. Several different tools are
called over successive replies (the loop sends each result back).

Why this shape, measured with ``bench/bfcl.py`` (BFCL's own cases and AST
checker, SmolLM2-135M on llama.cpp with one thread, ``--max-tokens 128``,
each request read afresh; the commands are in the bench's docstring). The
earlier shape ``{"tool_calls": [{"name", "arguments"}, ...]}`` got 66.7 % of
the first 12 ``simple`` cases (8/12), 15 % of 40 ``multiple`` (6/40) and 20 %
of 20 ``parallel`` (4/20), constrained; once inside the list the model went
on past its one call, to the same call or to a different tool (a wrong
count), or it answered in prose. This shape gets 83.3 % (10/12), 32.5 %
(13/40) and 15 % (3/20): the choice of tool is better, one parallel case
fewer.

Told only the shapes, the model rarely opened the list: on all 39
``parallel`` cases 4 were right, 21 missed by their count, mostly one call
where two to four were asked (``math_factorial(number=5)`` for "the factorial
of 5, 10 and 15"). The instructions end with an example of a list
(:data:`LIST_EXAMPLES`); the model then opens it far more often, and once
inside goes on to the cap with repeats, reorderings and values nobody wrote,
which :mod:`.call_lists` drops. On the first 20 cases of each category
(simple / multiple / parallel): before 14 / 6 / 3, with both 12 / 9 / 7; the
example alone 9 / 5 / (7 of 13); an example of one call and one of a list
13 / 5 / 4 (a single call shown first pulled the lists back to one object);
the list named first in the words ("to call a tool for each of several
things asked", no example) 10 / 4 / (7 of 13). The two simple cases lost
are lists of one call repeated whose values changed (``"unit": "cm"`` where
the person wrote "units"). The full runs are in the bench's docstring.

Other shapes tried (earlier runs with llama.cpp's prompt cache on, so a
little noisier; first 20 ``multiple`` / 10 ``parallel`` cases unless said):
one ``{"name", "arguments"}`` object (the shape such models learn
calls in) or a list of such objects, 40 % / 0 % (the model never opened the
list); naming the two forms ``{"tool_call"}`` / ``{"tool_calls"}``, 20 % /
10 %; ``arguments`` always a list, 58 % of 12 ``simple`` against 83 %, 40 %
of 10 ``multiple``, 3 of 8 ``parallel``; the tools listed as signatures, 5 %
of ``multiple`` (one request each); saying "to call it once for each of
several things asked" for the list, 26.7 % / 15 % on the 30 / 20 cases
(noise), and the model then answered "the area of a circle of radius 3" in
prose instead of calling ``circle_area``.

The answer's text still streams (:class:`ConstrainedReplyParser` decodes the
JSON string as it arrives); calls become the same
:class:`~desktop_agent.core.types.ToolUseBlock` s as native ones, and the
history keeps native ``tool_calls``. A reply that is not JSON after all (a
server that ignores ``response_format``) is read as ordinary text, calls
written as text included; a server that refuses the field is asked again
without it, and that is remembered for the model (:func:`refused`).
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.tooling.call_lists import Said, meant
from desktop_agent.core.wire.text_tool_calls import (
    TextCall,
    TextToolCallParser,
    call_from,
    parse_arguments,
)

if TYPE_CHECKING:
    from desktop_agent.core.errors import APIError
    from desktop_agent.core.options import AgentOptions

ANSWER_KEY = "answer"
CALLS_KEY = "tool_calls"
NAME_KEY = "name"
ARGUMENTS_KEY = "arguments"

#: Calls one constrained reply may hold. BFCL's parallel cases ask for 2 to 4
#: (a handful more); a small model given an open list repeats its last call
#: until ``max_tokens``, so the grammar closes the list here instead.
MAX_CALLS = 4
#: Longest string argument when the tool's schema sets no ``maxLength``, enum or
#: pattern: a small model can repeat words inside a string until ``max_tokens``.
#: Measured on llama.cpp: a cap up to 4,000 costs nothing noticeable per token.
STRING_CAP = 4000
_STRING_FLOOR = 64
#: Shown after the shapes: without it a small model almost never opened the list
#: (see the module docstring for what it changed). Its tool is made up, and the first
#: whose name no offered tool has is shown: a small model copies an example it can
#: follow, and with a weather example and a ``get_weather`` tool offered, SmolLM2
#: answered "Convert 300 degrees to kelvin" with ``get_weather(city="Paris")``
#: (``tests/e2e/llama/test_llama_constrained.py``).
LIST_EXAMPLES = (
    ('define_word', 'For example, asked "what do ferret and lynx mean", reply '
     '{"name": "define_word", "arguments": [{"word": "ferret"}, {"word": "lynx"}]}.'),
    ('spell_out', 'For example, asked "spell out 12 and 40", reply '
     '{"name": "spell_out", "arguments": [{"number": 12}, {"number": 40}]}.'),
)

# Words a server's error uses when it is the response_format field it refuses
# (OpenAI, vLLM without guided decoding, llama.cpp's schema-to-grammar, LiteLLM).
_FIELD_MARKERS = ("response_format", "json_schema", "schema", "grammar", "structured output",
                  "guided")


def applies(options: AgentOptions) -> bool:
    """Whether requests with these options constrain the reply."""
    return tool_call_mode.constrained(options)


def string_cap(max_tokens: int | None) -> int:
    """The longest string argument for a reply of ``max_tokens``.

    About two characters a token: a string longer than that could not close
    (with the JSON around it) before the reply's token limit anyway.
    """
    if max_tokens is None:
        return STRING_CAP
    return max(_STRING_FLOOR, min(STRING_CAP, 2 * max_tokens))


def reply_schema(tools: list[Any], *, calls_only: bool = False,
                 max_tokens: int | None = None) -> dict[str, Any]:
    """The JSON schema of a reply: an answer, or a call of one of these tools.

    Each tool's call is its own branch, ``name`` first (a ``const``), so the
    grammar holds the arguments to the schema of the tool just named, given
    once as an object or 2 to :data:`MAX_CALLS` times as a list.

    Args:
        tools: The offered tools.
        calls_only: Leave the answer out (asking again after a reply in prose
            that named a tool).
        max_tokens: The reply's limit, which bounds string arguments.
    """
    cap = string_cap(max_tokens)
    calls: list[dict[str, Any]] = []
    for t in tools:
        arguments = tightened(t.input_schema, cap)
        calls.append({"type": "object",
                      "properties": {NAME_KEY: {"const": t.name},
                                     ARGUMENTS_KEY: {"anyOf": [arguments, {
                                         "type": "array", "minItems": 2,
                                         "maxItems": MAX_CALLS, "items": arguments}]}},
                      "required": [NAME_KEY, ARGUMENTS_KEY], "additionalProperties": False})
    if calls_only:
        return {"anyOf": calls}
    return {"anyOf": [
        {"type": "object", "properties": {ANSWER_KEY: {"type": "string"}},
         "required": [ANSWER_KEY], "additionalProperties": False},
        *calls,
    ]}


def tightened(schema: Any, cap: int) -> Any:
    """A copy of a tool's schema with what the run showed small models abuse ruled out.

    Required arrays get ``minItems: 1`` (an empty list satisfied a required
    argument that needs content) and free strings a ``maxLength`` of ``cap``.
    """
    if not isinstance(schema, dict):
        return schema
    out = copy.copy(schema)
    kind = out.get("type")
    if kind == "string" and not any(k in out for k in ("maxLength", "enum", "const",
                                                        "pattern", "format")):
        out["maxLength"] = cap
    properties = out.get("properties")
    if isinstance(properties, dict):
        listed = out.get("required")
        required: list[Any] = listed if isinstance(listed, list) else []
        out["properties"] = {name: _required_array(tightened(value, cap), name in required)
                             for name, value in properties.items()}
    if isinstance(out.get("items"), dict):
        out["items"] = tightened(out["items"], cap)
    for combiner in ("anyOf", "oneOf", "allOf"):
        if isinstance(out.get(combiner), list):
            out[combiner] = [tightened(part, cap) for part in out[combiner]]
    return out


def _required_array(schema: Any, required: bool) -> Any:
    if required and isinstance(schema, dict) and schema.get("type") == "array" \
            and "minItems" not in schema:
        schema["minItems"] = 1
    return schema


def response_format(tools: list[Any], *, calls_only: bool = False,
                    max_tokens: int | None = None) -> dict[str, Any]:
    """The request's ``response_format`` field for :func:`reply_schema`."""
    return {"type": "json_schema",
            "json_schema": {"name": "reply", "strict": True,
                            "schema": reply_schema(tools, calls_only=calls_only,
                                                   max_tokens=max_tokens)}}


def instructions(tools: Any) -> str:
    """The system prompt's part that says how to reply and what each tool does.

    With constrained decoding the model never sees the schema, only the
    grammar's effect, so it is told the shapes and the tools in words.
    It is not asked for compact JSON, nor held to it by a grammar: measured
    on BFCL's first ten simple cases with SmolLM2-135M, the model opens a call
    with ``{`` and an indented line, and held to ``{"`` it answered in prose
    instead (0 of 10 calls right against 6 of 10); asked in words for
    compact JSON it got 4 of 10.
    """
    lines = ["Tools you can call:"]
    for tool in tools:
        params = json.dumps(tool.input_schema.get("properties", {}), ensure_ascii=False,
                            separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description} Arguments: {params}")
    lines.append('To call a tool reply {"name": ..., "arguments": {...}}; to call it several '
                 'times reply {"name": ..., "arguments": [{...}, {...}]} (at most '
                 f'{MAX_CALLS}); otherwise reply {{"answer": "..."}}.')
    offered = {tool.name for tool in tools}
    lines += [example for name, example in LIST_EXAMPLES if name not in offered][:1]
    return "\n".join(lines)


def refused(exc: APIError, options: AgentOptions, content_arrived: bool,
            constrained: bool) -> bool:
    """The server refused the field itself: remember it for the model, ask again without it.

    Any other error (a 500, an overloaded server, a bad key) is only that
    request's failure: it must not switch constraints off for every later one.
    ``constrained`` says whether the failed request asked for constraints.
    """
    from desktop_agent.core.errors import (
        AuthenticationError,
        ContextTooLongError,
        ModelNotFoundError,
        RateLimitError,
    )

    if content_arrived or not constrained or isinstance(
            exc, AuthenticationError | ContextTooLongError | ModelNotFoundError |
            RateLimitError):
        return False
    status = getattr(exc, "status", None)
    if not isinstance(status, int) or not 400 <= status < 600:
        return False
    said = f"{getattr(exc, 'body', '') or ''} {exc}".lower()
    if not any(marker in said for marker in _FIELD_MARKERS):
        return False
    tool_call_mode.remember_refusal(options, f"HTTP {status}: {str(exc)[:160]}")
    return True


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
        value, error = parse_arguments(self._buffer)
        items = _call_items(value, self._said)
        if error is not None or (items is None and not isinstance(value, dict)):
            if self._buffer.strip():
                self.calls.append(TextCall(None, None, self._buffer,
                                           error or "The reply is not a JSON object."))
            return ""
        answer = value.get(ANSWER_KEY) if isinstance(value, dict) else None
        if items:
            seen: set[str] = set()
            for item in items:  # a small model repeats its call until the list is full
                raw = json.dumps(item, sort_keys=True, ensure_ascii=False)
                if raw not in seen:
                    seen.add(raw)
                    self.calls.append(call_from(item, raw))
        return answer if isinstance(answer, str) else ""

    def _advance(self) -> str:
        shown: list[str] = []
        buffer = self._buffer
        while self._at < len(buffer):
            if self._state == "start":
                stripped = buffer[self._at:].lstrip()
                if not stripped:
                    return ""
                if stripped.startswith("["):  # a list of calls: parsed whole at the end
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


def _call_items(value: Any, said: Said | None = None) -> list[Any] | None:
    """The calls a reply holds, one item per call, or None when it holds none.

    ``{"name": ..., "arguments": {...}}`` is one call and ``"arguments": [...]``
    one call per object the model meant (:func:`.call_lists.meant`). A list of
    calls and ``{"tool_calls": [...]}`` (this mode's earlier shape, and what a
    server that ignores the schema may still get) are read too.
    """
    if isinstance(value, dict) and isinstance(value.get(NAME_KEY), str):
        listed = value.get(ARGUMENTS_KEY)
        if isinstance(listed, list) and listed:
            return [{NAME_KEY: value[NAME_KEY], ARGUMENTS_KEY: one}
                    for one in meant(listed, said)]
        return [value]
    if isinstance(value, dict):
        value = value.get(CALLS_KEY)
    if not isinstance(value, list):
        return None
    out: list[Any] = []
    for item in value:
        out.extend(_call_items(item, said) or [item])
    return out


def _unicode(buffer: str, at: int) -> str:
    try:
        return chr(int(buffer[at + 2:at + 6], 16))
    except ValueError:
        return buffer[at:at + 6]
