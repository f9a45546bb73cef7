"""Which calls of a constrained list the model meant, and which it ran on into.

A constrained reply may call one tool several times, ``{"name": ..., "arguments":
[{...}, {...}]}`` (:mod:`~desktop_agent.core.tooling.constrained_calls`); it is
read here, by the wire's :mod:`.constrained_reply`. Once inside the list a small
model often goes on past what was asked, up to the grammar's cap. Seen with
SmolLM2-135M on BFCL's cases (``bench/bfcl.py``), the extra calls are of three
kinds: the same call again (``5``, ``5``); the same values in another order
(``a=2, b=5`` then ``a=5, b=2``); and values nobody wrote (the factorial of
``5`` asked, then of ``1``, ``2``, ``3``). Calls the person asked for differ
from the first call by values the person wrote ("Taylor Swift and Maroon 5",
"for 10, 20 and 30 years").

So a call after the first is kept only when it is not a repeat or a reordering
of a kept one, and each of its values that differs from the first call's can
be found in what was said (the person's messages and the tools' results); a
place counts by its name when the model added its region in the form the tool
asks for ("San Diego, CA" for "San Diego": :meth:`Said.holds`).
The first call is always kept: this only judges the model's continuation.

Three more kinds of run-on passed those rules on BFCL's ``simple`` cases, where
one call was asked (a full run of 80 had 10 lists there, from the model going on
past its call). Each is judged by what a person asking for several calls writes:

* a value that differs from the first call's only by letter case (``"Aa"`` after
  ``"AA"``): kept only when written with that case ("AA, Aa and aa");
* a flag flipped (``isothermal: false`` after ``true``): a flag is a choice, not a
  value someone writes, so it is kept only when the person named the flag (a word
  of its name: "is the process isothermal? what if it is not");
* the first call's own values moved to other arguments (a route from San
  Francisco to Los Angeles by Santa Barbara, then from Santa Barbara to Santa
  Barbara): a call is kept only when it brings at least one value the first
  call did not already hold.

And a request that lists nothing gets one call: asking for several things takes
a list, written with a comma, a semicolon or a word such as "and", "or", "also",
"then", "both", "each" or "the same" (:data:`_LISTING`). Each of BFCL's 200
``parallel`` requests has one; of its 400 ``simple`` ones, 206 have none.
("How much will I weigh on Mars if my weight on Earth is 70 kg?" got Mars, then
Earth.) A request in a language whose words are not listed, and with no comma,
gets its first call only; the model still sees the result and may call again.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

_NUMBER = re.compile(r"\d+(?:\.\d+)?%?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_WORD = re.compile(r"\w+")
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
#: How a request lists several things: punctuation, or a word that joins or repeats
#: (English, French, German, Spanish, Italian, Portuguese, Chinese, Japanese). Single
#: letters ("y", "e") are left out: they are variables in the requests tools serve.
_LISTING = re.compile(
    r"[,;&+/\uff0c\u3001\uff1b]|\b(?:and|or|also|then|plus|both|each|same|again|repeat|"
    r"versus|vs|et|ou|puis|aussi|und|oder|auch|dann|también|também|anche|poi)\b"
    r"|[和及与或]|\u3068", re.IGNORECASE)
#: Numbers a person may write in words ("the factorial of five"), for :func:`placeholder`.
_SMALL_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve "
                  "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty")
_NUMBER_WORDS: dict[str, float] = {
    **{word: float(n) for n, word in enumerate(_SMALL_NUMBERS.split())},
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100, "thousand": 1000, "million": 1e6, "dozen": 12,
    "half": 0.5, "twice": 2, "double": 2, "triple": 3}
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
#: The region after a place's comma: "CA", "UK", "New South Wales".
_REGION = re.compile(r"[A-Z]{2,3}|[A-Z][a-z]+(?: [A-Z][a-z]+){0,2}")
#: Letters two words must share at their start to count as one ("restaurants", "restaurant").
_STEM = 5
#: Words that join others: sharing them says nothing of what a value is about.
_JOINING_WORDS = ("a an the of in on at to for and or by with from is are be as it its this "
                  "that de la le el")
_JOINING = frozenset(_JOINING_WORDS.split())
#: Arguments whose value the model may rightly derive from a request in other words:
#: a command for "list my files", a path, a URL, a query or an expression.
_DERIVED = frozenset({"command", "cmd", "code", "script", "shell", "program", "sql", "query",
                      "expression", "path", "file", "filename", "filepath", "folder",
                      "directory", "dir", "url", "uri", "link", "pattern", "regex", "q"})
_MONTHS = tuple(frozenset({name, name[:3]}) for name in (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december"))
#: Words of a flag's name that do not say which flag it is ("include_details").
_FLAG_VERBS = frozenset({"include", "enable", "allow", "use", "show", "with", "get", "has",
                         "is", "do", "should", "return", "flag"})


class Said:
    """What a list's later calls may draw their values from, indexed on first use.

    Built for every constrained request but needed only when a reply lists more
    than one call, so the history is read then, not on every round.

    Args:
        history: The conversation's messages; the person's and the tools' count.
        tools: The offered tools (``name`` and ``input_schema``), whose optional
            arguments a call keeps only with a value the person gave
            (:meth:`without_unsaid_options`).
    """

    def __init__(self, history: list[dict[str, Any]], tools: Sequence[Any] = ()) -> None:
        self._history = list(history)  # the messages so far, not later appends
        self._schemas = {getattr(t, "name", None): getattr(t, "input_schema", None)
                         for t in tools}

    @functools.cached_property
    def text(self) -> str:
        """The person's messages and the tools' results, joined, lower-cased."""
        return self.written.lower()

    @functools.cached_property
    def written(self) -> str:
        """The person's messages and the tools' results, joined, as written.

        The system prompt is left out: it holds the tools' descriptions and the
        example in :func:`~desktop_agent.core.tooling.constrained_calls.instructions`,
        which no call should draw values from.
        """
        return "\n".join(_content_text(message.get("content")) for message in self._history
                         if message.get("role") in ("user", "tool"))

    @functools.cached_property
    def latin(self) -> bool:
        """Whether every letter said is a Latin one: a value then is in the person's words.

        Asked in Chinese or Korean, a model rightly writes "Shanghai, China" for 上海.
        """
        return all(not c.isalpha() or ord(c) < 0x250 for c in self.written)

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

    @functools.cached_property
    def lists(self) -> bool:
        """Whether the person's last message lists several things (:data:`_LISTING`)."""
        for message in reversed(self._history):
            if message.get("role") == "user":
                return bool(_LISTING.search(_content_text(message.get("content"))))
        return True  # nothing the person said to judge by: the model's list stands

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
            return not wanted or self._written_whole(wanted) or (
                bool(words) and all(w in self.words for w in words)) or self._placed(value)
        if isinstance(value, list):
            return all(self.holds(v) for v in value)
        if isinstance(value, dict):
            return all(self.holds(v) for v in value.values())
        return True

    def _placed(self, value: str) -> bool:
        """Whether ``value`` is a place the person named, with the region the model added.

        A tool asking for 'City, State' gets "San Diego, CA" for "in San Diego" (the
        grammar holds such arguments to that shape, ``core/tooling/value_shapes.py``):
        the city was said, the state code is the form the tool wants, not a value
        nobody gave. Only a region's usual forms count after the comma, a code of
        two or three capitals or one to three capitalised words, and the part before
        it must have been said.
        """
        head, comma, region = value.strip().partition(", ")
        return bool(comma) and bool(head) and _REGION.fullmatch(region) is not None \
            and self.holds(head)

    def _written_whole(self, wanted: str) -> bool:
        """Whether ``wanted`` was written as it is, starting and ending where words do.

        "CA" is not in "California": a value found only inside a longer word was not
        written (the model filling ``county: "CA"`` nobody gave).
        """
        edge_start = r"(?<!\w)" if wanted[:1].isalnum() else ""
        edge_end = r"(?!\w)" if wanted[-1:].isalnum() else ""
        return re.search(edge_start + re.escape(wanted) + edge_end, self.text) is not None

    @functools.cached_property
    def _stems(self) -> set[str]:
        return {word[:_STEM] for word in self.words if len(word) >= _STEM}

    @functools.cached_property
    def _initials(self) -> set[str]:
        """The first letters of each run of two to four words said ("usd", "ny")."""
        words = [w for w in _WORD.findall(self.text) if not w.isdigit()]
        return {"".join(w[0] for w in words[i:i + n]) for n in (2, 3, 4)
                for i in range(len(words) - n + 1)}

    def wrote_any(self, value: str) -> bool:
        """Whether the person wrote any word of ``value``, in some form.

        A word counts as written as it is, by its first :data:`_STEM` letters
        ("restaurants" for "restaurant"), as an abbreviation of one written word or
        the initials of several ("CA" for California, "USD" for "United States
        dollar"), and a word with digits by its numbers ("5kg"). Words that join
        others ("the", "of") say nothing of what was meant and do not count.
        """
        for word in _WORD.findall(value.lower()):
            if word in _JOINING:
                continue
            digits = _DIGITS.findall(word)
            if digits and all(float(d) in self.numbers for d in digits):
                return True
            if word in self.words or (len(word) >= _STEM and word[:_STEM] in self._stems):
                return True
            if word.isalpha() and 2 <= len(word) <= 4 and (word in self._initials or any(
                    said.startswith(word) for said in self.words)):
                return True
        return False

    def schema(self, name: str) -> Any:
        """The input schema of the offered tool ``name`` (None when not offered)."""
        return self._schemas.get(name)

    def proposed(self, value: str) -> bool:
        """Whether an earlier reply of the model's offered the value ("shall I book Dune?").

        A person who answers "yes, do it" gives the value by agreeing to it. Only the
        needed-value rule asks this: a list's later calls and placeholders are judged by
        what the person and the tools said.
        """
        return self._replies.wrote_any(value)

    @functools.cached_property
    def _replies(self) -> Said:
        return Said([{"role": "user", "content": message.get("content")}
                     for message in self._history if message.get("role") == "assistant"])

    def initialled(self, value: str) -> bool:
        """Whether the person wrote a name of several words by its initials ("LA", "SF").

        Only the part before a comma counts: "Los Angeles, CA" is "LA" with its state.
        """
        words = _WORD.findall(value.partition(",")[0].lower())
        return len(words) >= 2 and "".join(w[0] for w in words) in self.words

    def choices(self, name: str) -> set[str]:
        """The arguments of tool ``name`` (nested ones too) whose schema lists the values."""
        return set(_choice_names(self._schemas.get(name)))

    def names(self, argument: str) -> bool:
        """Whether the person named the flag ``argument``: a word of its name, or its stem.

        ``include_human_impact`` is named by "human impact", ``formatted`` by
        "format"; words such as "include" or "allow" say nothing of which flag.
        """
        parts = [p.lower() for p in _NAME_PART.findall(argument)]
        wanted = [p for p in parts if p not in _FLAG_VERBS and len(p) > 2] or parts
        return any(word in self.words or (len(word) >= 6 and any(
            said.startswith(word[:6]) for said in self.words)) for word in wanted)

    def without_unsaid_options(self, name: str, arguments: Any) -> Any:
        """The call's arguments less the optional ones whose value the person never gave.

        A small model held to a schema fills optional arguments in with values of its
        own (``unit: "cm"`` for "a radius of 5 units", ``formatted: false`` nobody asked
        for, ``gravity: 9.81``); left out, the tool's own default applies, which is
        what a person who did not mention them expects. A value counts as given as
        for a list's later calls (:meth:`holds`); a flag, or a choice among a
        schema's listed values, also when the person named the argument ("free" for
        ``free_entry``). Required arguments, and calls of tools not offered, are kept
        whole. Values the model rightly derived in another form (a date written
        "the 5th of March") are lost with the rest: the tool's default is the cost.
        """
        schema = self._schemas.get(name)
        if not isinstance(arguments, dict) or not isinstance(schema, dict):
            return arguments
        required = schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        properties = schema.get("properties")
        kinds = properties if isinstance(properties, dict) else {}
        return {key: value for key, value in arguments.items()
                if key in needed or self._given(key, value, kinds.get(key))}

    def _given(self, argument: str, value: Any, schema: Any = None) -> bool:
        if value is None:
            return False
        choice = isinstance(schema, dict) and "enum" in schema
        if isinstance(value, bool) or (choice and isinstance(value, str)):
            # a flag or a choice among listed values: given when the person named it
            # ("free entry" for free_entry: "True"), or wrote the value itself
            return self.names(argument) or (not isinstance(value, bool)
                                             and self.holds(value))
        if isinstance(value, int | float) and any(
                _NUMBER_WORDS.get(word) == value for word in self.words):
            return True
        if isinstance(value, str) and self._numbers_given(value):
            return True
        if isinstance(value, str | int | float) or value:
            return self.holds(value)
        return False  # an empty list or object: nothing given

    def _numbers_given(self, value: str) -> bool:
        """A value of numbers only (a date, a time), each written, a month also by name.

        "2023-04-05" for "April 5th, 2023": the person gave it in another form.
        """
        numbers = _DIGITS.findall(value)
        if not numbers or any(c.isalpha() for c in value):
            return False
        months = {n + 1 for n, names in enumerate(_MONTHS) if names & self.words}
        return all(float(n) in self.numbers or int(float(n)) in months for n in numbers)

    def changed(self, argument: str, value: Any, before: Any) -> bool:
        """Whether a later call's ``value``, where the first had ``before``, was said.

        A flag counts only when named, and a string that differs from ``before``
        only by letter case only when written with that case.
        """
        if isinstance(value, bool) or isinstance(before, bool):
            return self.names(argument)
        if isinstance(value, str) and isinstance(before, str) \
                and value.strip().lower() == before.strip().lower():
            return value.strip() in self.written
        return self.holds(value)


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
    if said is not None and not said.lists:
        return kept
    seen = {_exact(first)}
    shuffles = {_values(first)}
    for call in calls[1:]:
        exact = _exact(call)
        if exact in seen:
            continue
        if isinstance(call, dict) and isinstance(first, dict):
            if _values(call) in shuffles:
                continue
            changes = {key: value for key, value in call.items() if first.get(key) != value}
            if said is not None and not all(
                    said.changed(key, value, first.get(key)) for key, value in changes.items()):
                continue
            if changes and all(_held_by(value, first) for value in changes.values()):
                continue  # the first call's values moved between arguments
        seen.add(exact)
        shuffles.add(_values(call))
        kept.append(call)
    return kept


def placeholder(name: str, arguments: Any, said: Said | None) -> bool:
    """Whether a call holds nothing the person gave: blanks, numbers nobody wrote, names copied.

    Held to a tool's schema, a small model asked something no offered tool does still
    writes a call, and fills it with what the grammar allows when nothing fits: ``""``,
    numbers of its own, the tool's and arguments' own names
    (``stock_ticker(company_name="stock_ticker")`` for "who won the World Cup in
    2010?", ``calculate_current(voltage=100, resistance=100)`` for "what's the mass of
    an electron?"), or words of its own (``sculpture_create(design="sustainability")``
    for "what rock suits a garden sculpture?"). A call the person meant carries at
    least one value they gave: a number they wrote, or a string sharing a word with
    what they wrote, in some form (:meth:`Said.wrote_any`). Some values are rightly
    the model's own words and count as given: a command, a path, a URL or a query
    derived from the request ("list my files" is ``ls``), and a choice among the
    values the tool's schema lists. Flags are choices, not values, and a call with
    no values at all (a tool without arguments) is not judged.
    """
    if not isinstance(arguments, dict):
        return False
    copied = _copied_words(name, arguments)
    values = keyed_scalars(arguments)
    if not values:
        return not _has_flag(arguments) and bool(arguments)  # only empty lists and objects
    choices = said.choices(name) if said is not None else set()
    return all(_blank(key, value, copied, said, choices) for key, value in values)


def invents_needed(name: str, arguments: Any, said: Said) -> bool:
    """Whether a call fills an argument the tool needs with a value nobody gave.

    "I want to see a movie at 8:30 pm" names no movie; held to a ticket tool's
    schema, a small model still writes ``movie_name`` (the tool's own name, or a
    film of its choosing) and a ``show_date`` of its own. That call is not what the
    person asked for: a person who asks a tool's job without the values it needs
    expects to be asked for them, as a shop assistant would. So a call is not kept
    when a required argument's value is blank by :func:`placeholder`'s measure (no
    word of it written, in any form, or only the tool's own names), though others
    were given; the request then goes again held to an answer, where a model that
    can ask back does. Not judged: flags, choices among listed values, values a
    model rightly derives (commands, paths, URLs, queries), and tools whose schema
    names no required argument.
    """
    schema = said.schema(name)
    if not isinstance(arguments, dict) or not isinstance(schema, dict) or not said.latin:
        return False
    required = schema.get("required")
    if not isinstance(required, list) or _name_words(name) & _MAKING:
        return False
    copied = _copied_words(name, arguments)
    choices = said.choices(name)
    for key in required:
        if key not in arguments or key in choices or _derived(str(key)) \
                or _name_words(str(key)) & _COMPOSED:
            continue
        described = _property(schema, str(key))
        if isinstance(described, dict) and described.get("default") == arguments[key]:
            continue  # the tool's own default, which the model may always give
        strings = [value for value in _scalars(arguments[key]) if isinstance(value, str)]
        offered = json.dumps(described, ensure_ascii=False).lower()
        if strings and all(_made_up(str(key), value, offered, copied, said, choices)
                           for value in strings):
            return True
    return False


def _made_up(key: str, value: str, offered: str, copied: set[str], said: Said,
             choices: set[str]) -> bool:
    """Whether a needed string value came from nowhere: not said, proposed or derivable."""
    return _judged(value, offered) and not said.initialled(value) \
        and not said.proposed(value) and _blank(key, value, copied, said, choices)


#: Words of a tool's name that say it makes or sends something: what it is given is the
#: model's own writing ("create_issue" with a title the model chose), not a value to ask for.
_MAKING = frozenset({"create", "add", "new", "write", "post", "send", "compose", "draft",
                     "generate", "make", "save", "commit", "log", "edit", "update", "reply",
                     "set", "plan", "todo", "task", "agent", "spawn", "delegate"})
#: Words of an argument's name that say it takes text the model composes.
_COMPOSED = frozenset({"content", "contents", "string", "text", "body", "message", "prompt",
                       "instructions", "summary", "answer", "reason", "explanation",
                       "comment", "note", "notes", "description", "subject", "purpose",
                       "label", "goal", "step", "steps", "thought", "input", "patch", "diff"})


def _name_words(name: str) -> set[str]:
    return {part.lower() for part in _NAME_PART.findall(name)}


def _copied_words(name: str, arguments: Any) -> set[str]:
    """The words of the tool's name and its arguments' names, which a value may copy."""
    return {word for part in (name, *_keys(arguments)) for word in _name_words(part)}


#: A code a model writes for a name the person gave ("USD", "GB", "JFK", "AAPL").
_CODE = re.compile(r"[A-Z]{2,5}")


def _judged(value: str, described: str) -> bool:
    """Whether a value can be judged invented by the words said.

    Not judged: a value without letters (a date or a time in the form the tool
    wants, "23:00" for "11 PM"), a code of capitals, and a word the tool's own
    description of the argument names ("dontcare", "any"): those are forms a model
    derives or the tool offers, not values it made up.
    """
    stripped = value.strip()
    return any(c.isalpha() for c in stripped) and _CODE.fullmatch(stripped) is None \
        and not (" " not in stripped and (f"'{stripped.lower()}'" in described
                                          or f'\\"{stripped.lower()}\\"' in described))


def _blank(key: str, value: Any, copied: set[str], said: Said | None,
           choices: set[str]) -> bool:
    if isinstance(value, str):  # "", or only words of the tool's and arguments' names
        parts = _NAME_PART.findall(value)
        if "".join(parts) == re.sub(r"[\W_]+", "", value) and all(
                part.lower() in copied for part in parts):
            return True
        if _mostly_copied(value, parts, copied) and not (
                said is not None and said.holds(value)):
            return True
        return said is not None and key not in choices and not _derived(key) \
            and not said.wrote_any(value)
    if said is None:
        return bool(value == 0)
    return not said.holds(value) and not any(
        _NUMBER_WORDS.get(word) == value for word in said.words)


def _mostly_copied(value: str, parts: list[str], copied: set[str]) -> bool:
    """Whether an identifier is the tool's own name with a slip ("Movies_1_GetTimesFoerMovie").

    A value of one word joined by underscores or capitals, of three parts or more,
    more than half of whose lettered parts are words of the tool's and arguments'
    names: a small model copying the name it just wrote, misspelt on the way.
    """
    if " " in value.strip() or len(parts) < 3:
        return False
    lettered = [part.lower() for part in parts if not part.isdigit()]
    return bool(lettered) and 2 * sum(part in copied for part in lettered) > len(lettered)


def _derived(key: str) -> bool:
    """Whether an argument of this name takes a command, a path, a URL or a query."""
    return any(part.lower() in _DERIVED for part in _NAME_PART.findall(key))


def keyed_scalars(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """The strings and numbers inside a JSON value, each with the name it was given under."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in keyed_scalars(v, str(k))]
    if isinstance(value, list):
        return [pair for v in value for pair in keyed_scalars(v, key)]
    return [(key, scalar) for scalar in _scalars(value)]


def _choice_names(schema: Any) -> Iterator[str]:
    if not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, value in properties.items():
            if isinstance(value, dict) and ("enum" in value or "const" in value or (
                    isinstance(value.get("items"), dict) and "enum" in value["items"])):
                yield str(key)
            yield from _choice_names(value)
    yield from _choice_names(schema.get("items"))


def _property(schema: dict[str, Any], key: str) -> Any:
    properties = schema.get("properties")
    return properties.get(key) if isinstance(properties, dict) else None


def _keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [str(k) for k in value] + [k for v in value.values() for k in _keys(v)]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


def _has_flag(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_flag(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_flag(v) for v in value)
    return isinstance(value, bool)


def _exact(call: Any) -> str:
    return json.dumps(call, sort_keys=True, ensure_ascii=False)


def _values(call: Any) -> str:
    """The call's values without their names: equal for two orderings of the same values."""
    if not isinstance(call, dict):
        return _exact(call)
    return json.dumps(sorted(_exact(v) for v in call.values()), ensure_ascii=False)


def _content_text(content: Any) -> str:
    """A message's text, whether a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if isinstance(part, dict)
                         and isinstance(part.get("text"), str))
    return ""


def _scalars(value: Any) -> list[Any]:
    """The strings and numbers inside a JSON value.

    Strings keep their case: a value that differs only by case and passed
    :meth:`Said.changed` was written both ways, so it is new.
    """
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, str):
        return [value.strip()]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [float(value)]
    return []


def _held_by(value: Any, first: dict[str, Any]) -> bool:
    """Whether a changed value brings nothing new: all of it is among the first call's values.

    A flag is never "held": whether flipping it was asked is :meth:`Said.changed`'s call.
    """
    if isinstance(value, bool) or value is None:
        return False
    inside = _scalars(value)
    known = _scalars(first)
    return bool(inside) and all(v in known for v in inside)
