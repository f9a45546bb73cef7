r"""The shape a string argument's description asks for, as a JSON Schema ``pattern``.

Tool authors often say in words the form a value must take, and leave the schema a
plain ``string``: "the city, in the format of 'City, State', such as 'Berkeley,
CA'", "the date, in the format 'YYYY-MM-DD'", "the time, in 24-hour format
'HH:MM'". A small model reads the request, not the description: SmolLM2-135M
wrote ``"London"`` where the tool wanted ``"London, UK"``. Under constrained decoding
(:mod:`~desktop_agent.core.tooling.constrained_calls`) the grammar can hold the
value to the shape the author named, and the model then fills it in (asked about
the weather "in London" with the pattern below, it wrote ``"London, UK"``).

Only shapes that are written commonly and mean one thing are read
(``bench/value_shape_counts.py`` counts them over BFCL's tool descriptions):

* a place in two parts, named by a quoted ``'City, State'``, ``'City, Country'``,
  ``'City, State/Country'`` or ``'City, State (abbr)'``: two runs without a comma
  joined by ``", "``;
* a date or time spelt with the letters people use for its fields, quoted or in
  brackets (``'YYYY-MM-DD'``, ``(HH:MM)``, ``'MM/DD/YYYY'``,
  ``'YYYY-MM-DDTHH:MM:SSZ'``): the digits of each field and the separators as
  written;
* a time "in 24-hour format" with no field letters written: ``HH:MM``.

A description that quotes anything else (another shape it also accepts, such as
``'City'`` "if the city has no state", or a word such as ``'dontcare'`` or
``'null'`` that the tool takes instead of a value) gets no pattern: the author
allows more than the one shape, and the pattern would refuse what they allow.
The same holds when the schema's own default does not fit the shape, and a schema
with a ``pattern``, ``format``, ``enum`` or ``const`` of its own is left as it is.

Measured (``bench/value_shape_counts.py``, BFCL's cases outside the held-out third):
a shape is found for 3,463 of 14,015 string parameters (counted once per case that
offers the tool), in 764 of 2,037 cases. BFCL's accepted calls give 649 of them a
value, and in 10 cases accept only a value of another shape (8 a bare city such as
``"Paris"`` where the tool asked for 'City, State', one a date in another form, one
``"dontcare"``): those a pattern loses. A place shown only by examples ("such as
'New York, NY'", no format named) gets no pattern: there BFCL accepted only the
bare city for 7 of 49 parameters. On SmolLM2-135M (``bench/bfcl.py --slice tune``)
the request changed in 3 of 20 ``live_simple`` and 13 of 20 ``live_multiple``
cases; 2 were gained ("London" became "London, UK", "San Diego" "San Diego, CA")
and none lost. The 8 changed ``live_parallel`` tuning cases stayed at 0 with the
shapes alone: the calls said "Boston, MA", but a list's later calls were dropped as
values nobody wrote ("MA"); with a place counted by its name there
(``core/wire/call_lists.py``), 4 of the 11 tuning cases are right. The one changed
``irrelevance`` case still makes none. The bench's own set (``simple``,
``multiple``, ``parallel``) offers no tool with such a description.

The patterns keep to what llama.cpp's JSON-schema-to-grammar converter accepts
(checked on the e2e tier's server): anchored with ``^`` and ``$`` (an unanchored
pattern is ignored), ``[0-9]`` for a digit (``\d`` is ignored: any string goes
through), and no ``"``, backslash or line break in a free run (a bare ``[^,]``
let the model close the JSON string early, and the reply was not JSON). A pattern
the converter cannot parse fails the whole request with a 400 that names the
schema, which :func:`.constrained_calls.refused` would take for a server without
constraints, so a pattern is made of fixed pieces only (digit runs, the separators
``-/:. T``, a ``Z``, the place's two runs), never of a description's own text.
"""

from __future__ import annotations

import re
from typing import Any

#: One part of a two-part place: no comma, no quote, backslash or line break, and
#: at most this many characters (a pattern replaces the schema's ``maxLength``, so it
#: bounds its own runs: a small model can go on inside a string until ``max_tokens``).
PLACE_PART_CAP = 60
_PART = '[^,"\\\\\\n]{1,' + str(PLACE_PART_CAP) + "}"
PLACE = f"^{_PART}, {_PART}$"
#: A time of day on the 24-hour clock, as "24-hour format" asks with no fields written.
CLOCK = "^[0-9]{2}:[0-9]{2}$"
#: The field letters of a written date or time format and how many digits each takes.
_FIELDS = {"YYYY": 4, "YY": 2, "MM": 2, "DD": 2, "HH": 2, "SS": 2}
_FIELD = "YYYY|YY|MM|DD|HH|SS"
_SEPARATORS = "-/:. T"
#: A whole quoted or bracketed date/time format: fields joined by separators, and
#: an optional ``Z`` (UTC) at the end.
_DATE_FORMAT = re.compile(rf"(?:{_FIELD})(?:[{re.escape(_SEPARATORS)}]?(?:{_FIELD}))+Z?",
                          re.IGNORECASE)
#: A format quoted as the default ("Default is 'MM-DD-YYYY'"): the parameter's value is
#: itself a format string, not a date.
_DEFAULT_QUOTE = re.compile(r"default(?:s|ed)?(?: value)?(?: is| to|:)? *['\"]", re.IGNORECASE)
_PLACE_FORMAT = re.compile(
    r"(?:City|Location), (?:State|Country|State/Country|State or Country|State \(abbr\))",
    re.IGNORECASE)
#: Text in single or double quotes; a quote next to a letter is an apostrophe
#: ("today's date"), not a quote.
_QUOTED = re.compile(r"(?<![A-Za-z])'([^']+)'(?![A-Za-z])|\"([^\"]+)\"")
#: Text in brackets, read only when it is a date or time format ("ISO format (YYYY-MM-DD)").
_BRACKETED = re.compile(r"\(([^()]+)\)")
#: Separators as the converter reads them outside a class (it takes no ``\\.``).
_LITERAL = {".": "[.]"}
#: "24-hour format", "24 hour clock": the clock, not a duration ("the last 24 hours").
_CLOCK_WORDS = re.compile(r"\b24[- ]hours? ?(?:format|clock|time|notation)\b", re.IGNORECASE)


def shape(schema: Any) -> str | None:
    """The pattern a string schema's description asks for, or None.

    None also when the schema is not a plain string, already says its own form
    (``pattern``, ``format``, ``enum``, ``const``), or its description allows
    another form beside the shape it names (see the module docstring).
    """
    if not isinstance(schema, dict) or schema.get("type") != "string" or any(
            key in schema for key in ("pattern", "format", "enum", "const")):
        return None
    description = schema.get("description")
    if not isinstance(description, str) or not description or any(
            _format_pattern(description[match.end():].split(description[match.end() - 1])[0])
            for match in _DEFAULT_QUOTE.finditer(description)):
        return None
    quoted = [next(part for part in match.groups() if part is not None).strip()
              for match in _QUOTED.finditer(description)]
    bracketed = [text.strip() for text in _BRACKETED.findall(description)
                 if _DATE_FORMAT.fullmatch(text.strip())]
    pattern = _pattern(description, quoted + bracketed)
    if pattern is None:
        return None
    compiled = re.compile(pattern)
    for text in quoted:  # every quoted text names the shape or is an example of it
        if _format_pattern(text) != pattern and not compiled.fullmatch(text):
            return None
    default = schema.get("default")
    if isinstance(default, str) and default and not compiled.fullmatch(default):
        return None
    return pattern


def _pattern(description: str, quoted: list[str]) -> str | None:
    """The one shape the quoted texts name (None: none, or more than one)."""
    named = {p for p in (_format_pattern(text) for text in quoted) if p is not None}
    if not named and _CLOCK_WORDS.search(description):
        named = {CLOCK}
    return named.pop() if len(named) == 1 else None


def _format_pattern(text: str) -> str | None:
    """The pattern of a quoted text that is itself a format (``'YYYY-MM-DD'``)."""
    if _PLACE_FORMAT.fullmatch(text):
        return PLACE
    if _DATE_FORMAT.fullmatch(text):
        out = ""
        for piece in re.findall(rf"{_FIELD}|.", text, re.IGNORECASE):
            digits = _FIELDS.get(piece.upper())
            out += f"[0-9]{{{digits}}}" if digits else _LITERAL.get(piece, piece)
        if out.endswith("Z"):  # UTC's mark; ISO 8601 leaves it out as often
            out += "?"
        return f"^{out}$"
    return None

