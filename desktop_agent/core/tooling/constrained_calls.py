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
which :mod:`~desktop_agent.core.wire.call_lists` drops. On the first 20 cases of each category
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

When no tool fits, the person gets an answer. Offered a call, a small model
takes it: on BFCL's ``irrelevance`` cases (requests none of the offered tools
does) SmolLM2 made a call for each of the bench's 30 (8 unusable), although the
``{"answer"}`` branch was open. Three rules follow from how requests are
written, not from the cases (``bench/bfcl.py`` holds a third of each category
out of tuning):

* a conversation that names no tool's job (shares no word with any tool, and
  names no file for a tool taking one nor instructs a tool that runs commands;
  a request that only asks questions needs a word of a tool's name or two of the
  rest) is held to an answer (``answer_only``), and otherwise the first reply may
  call only the tools named (:func:`~desktop_agent.core.tooling.tool_match.offered`);
* a call that holds nothing the person gave (blanks, numbers nobody wrote, the
  tool's own names, words nobody wrote in any form) is not run and the request
  goes again held to an answer
  (:func:`~desktop_agent.core.wire.call_lists.placeholder`,
  :mod:`.second_chances`);
* the calls the grammar allows are the tools named, most likely meant first
  (:func:`.tool_match.by_request`). The instructions in the system prompt list
  every tool in one fixed order all the same: a list that changed with each
  request would make every server process the whole prompt again (its prefix
  cache reuses work only up to the first byte that differs).

And what a call holds is what the person gave: optional arguments whose value
nobody wrote are left out, so the tool's default applies
(:meth:`~desktop_agent.core.wire.call_lists.Said.without_unsaid_options`).

This module makes the request (the schema, the instructions) and decides when
it applies; the wire reads the reply
(:class:`~desktop_agent.core.wire.constrained_reply.ConstrainedReplyParser`).
The answer's text still streams (the parser decodes the JSON string as it
arrives); calls become the same
:class:`~desktop_agent.core.types.ToolUseBlock` s as native ones, and the
history keeps native ``tool_calls``. A reply that is not JSON after all (a
server that ignores ``response_format``) is read as ordinary text, calls
written as text included; a server that refuses the field is asked again
without it, and that is remembered for the model (:func:`refused`).
"""

from __future__ import annotations

import copy
import json
import re
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling import tool_call_mode, value_shapes
from desktop_agent.core.wire.constrained_reply import ANSWER_KEY, ARGUMENTS_KEY, NAME_KEY

if TYPE_CHECKING:
    from desktop_agent.core.errors import APIError
    from desktop_agent.core.tooling.tooling_settings import ToolingSettings

#: Calls one constrained reply may hold. BFCL's parallel cases ask for 2 to 4
#: (a handful more); a small model given an open list repeats its last call
#: until ``max_tokens``, so the grammar closes the list here instead.
MAX_CALLS = 4
#: Longest string argument when the tool's schema sets no ``maxLength``, enum or
#: pattern: a small model can repeat words inside a string until ``max_tokens``.
#: Measured on llama.cpp: a cap up to 4,000 costs nothing noticeable per token.
STRING_CAP = 4000
_STRING_FLOOR = 64
#: Fewest digits an integer argument may have when the person wrote no longer number
#: (:func:`digit_cap`): room for a year, a count, a price, an id of a few digits.
DIGIT_FLOOR = 6
_DIGIT_RUN = re.compile(r"\d+")
_THOUSANDS = re.compile(r"(?<=\d)[,_'\u00a0\u202f](?=\d{3}(?!\d))")
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


def applies(options: ToolingSettings) -> bool:
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


def digit_cap(written: str) -> int:
    """The most digits an integer argument may have, given what the person and tools wrote.

    Held to a schema, a small model sometimes runs on inside a number until the
    grammar's own limit (llama.cpp allows 16 digits): SmolLM2-135M asked to start
    an air conditioner "in 1 hour and 30 minutes" wrote ``relativeMinuteToStart:
    1000000000000000``, and the run-on took the tokens the other arguments needed.
    An integer has at most as many digits as the longest number written (thousands
    separators left out: "20,000") and at least :data:`DIGIT_FLOOR`, so values the
    model rightly derives (minutes from hours, a year) still fit.
    """
    runs = _DIGIT_RUN.findall(_THOUSANDS.sub("", written))
    return max([DIGIT_FLOOR, *(len(run.lstrip("0") or "0") for run in runs)])


def reply_schema(tools: list[Any], *, calls_only: bool = False, answer_only: bool = False,
                 max_tokens: int | None = None, digits: int | None = None) -> dict[str, Any]:
    """The JSON schema of a reply: an answer, or a call of one of these tools.

    Each tool's call is its own branch, ``name`` first (a ``const``), so the
    grammar holds the arguments to the schema of the tool just named, given
    once as an object or 2 to :data:`MAX_CALLS` times as a list.

    Args:
        tools: The offered tools.
        calls_only: Leave the answer out (asking again after a reply in prose
            that named a tool).
        answer_only: Leave the calls out: the person named no tool's job
            (:func:`~desktop_agent.core.tooling.tool_match.names_a_job`).
        max_tokens: The reply's limit, which bounds string arguments.
        digits: The most digits an integer argument may have (:func:`digit_cap`);
            None leaves integers to the server's own limit.
    """
    answer = {"type": "object", "properties": {ANSWER_KEY: {"type": "string"}},
              "required": [ANSWER_KEY], "additionalProperties": False}
    if answer_only and not calls_only:
        return {"anyOf": [answer]}
    cap = string_cap(max_tokens)
    calls: list[dict[str, Any]] = []
    for t in tools:
        arguments = tightened(t.input_schema, cap, digits)
        calls.append({"type": "object",
                      "properties": {NAME_KEY: {"const": t.name},
                                     ARGUMENTS_KEY: {"anyOf": [arguments, {
                                         "type": "array", "minItems": 2,
                                         "maxItems": MAX_CALLS, "items": arguments}]}},
                      "required": [NAME_KEY, ARGUMENTS_KEY], "additionalProperties": False})
    if calls_only:
        return {"anyOf": calls}
    return {"anyOf": [answer, *calls]}


def tightened(schema: Any, cap: int, digits: int | None = None) -> Any:
    """A copy of a tool's schema with what the run showed small models abuse ruled out.

    Required arrays get ``minItems: 1`` (an empty list satisfied a required
    argument that needs content), free strings the shape their description names
    (a ``pattern`` from :func:`.value_shapes.shape`: "London" where the tool asked
    for 'City, Country') or else a ``maxLength`` of ``cap`` and,
    with ``digits``, integers without a bound of their own at most that many
    digits either way (:func:`digit_cap`; llama.cpp turns integer bounds into
    its grammar, other servers may only check them). Numbers with a fraction
    keep the server's limit: JSON Schema has no bound on their digits alone.
    """
    if not isinstance(schema, dict):
        return schema
    out = copy.copy(schema)
    kind = out.get("type")
    if kind == "string" and not any(k in out for k in ("maxLength", "enum", "const",
                                                        "pattern", "format")):
        pattern = value_shapes.shape(out)
        if pattern is not None:
            out["pattern"] = pattern  # bounds its own runs: llama.cpp drops maxLength
        else:
            out["maxLength"] = cap
    if kind == "integer" and digits is not None and "enum" not in out and "const" not in out:
        largest = 10 ** digits - 1
        low, high = out.get("minimum"), out.get("maximum")
        if high is None:  # never below a minimum of the schema's own
            out["maximum"] = max(largest, low) if isinstance(low, int | float) else largest
        if low is None:
            out["minimum"] = min(-largest, high) if isinstance(high, int | float) else -largest
    properties = out.get("properties")
    if isinstance(properties, dict):
        listed = out.get("required")
        required: list[Any] = listed if isinstance(listed, list) else []
        out["properties"] = {name: _required_array(tightened(value, cap, digits),
                                                     name in required)
                             for name, value in properties.items()}
    if isinstance(out.get("items"), dict):
        out["items"] = tightened(out["items"], cap, digits)
    for combiner in ("anyOf", "oneOf", "allOf"):
        if isinstance(out.get(combiner), list):
            out[combiner] = [tightened(part, cap, digits) for part in out[combiner]]
    return out


def _required_array(schema: Any, required: bool) -> Any:
    if required and isinstance(schema, dict) and schema.get("type") == "array" \
            and "minItems" not in schema:
        schema["minItems"] = 1
    return schema


def response_format(tools: list[Any], *, calls_only: bool = False, answer_only: bool = False,
                    max_tokens: int | None = None, digits: int | None = None
                    ) -> dict[str, Any]:
    """The request's ``response_format`` field for :func:`reply_schema`."""
    return {"type": "json_schema",
            "json_schema": {"name": "reply", "strict": True,
                            "schema": reply_schema(tools, calls_only=calls_only,
                                                   answer_only=answer_only,
                                                   max_tokens=max_tokens,
                                                   digits=digits)}}


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


def refused(exc: APIError, options: ToolingSettings, content_arrived: bool,
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
