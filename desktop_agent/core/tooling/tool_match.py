"""Which offered tools the person's words name the job of.

A person who wants a tool run names its job: the things and actions of its
name, its description or its arguments ("the weather in Paris" for
``get_current_weather``, "sort these numbers" for ``sort_array``), a file for a
tool that takes one ("open notes.txt"), or, for a tool that runs what it is
given (a shell command, code, a query), anything they instruct ("install
numpy"); questions and greetings instruct nothing (:func:`named`). Three
decisions of a constrained request follow (:func:`offered`):

* **Whether any tool is meant at all.** A conversation that names no tool's
  job ("hello", "who won the World Cup in 2010?" offered a stock-ticker tool)
  asks for an answer, and a small model offered a call takes it: on BFCL's
  ``irrelevance`` cases SmolLM2-135M made a call for each of the 30 of
  ``bench/bfcl.py``'s run (8 of them unusable). A request written mostly in
  another script than the tools' Latin one (Chinese or Russian asked of English
  tools) cannot be judged this way and counts as naming every tool; one without
  a letter names none (:func:`_judged_by_words`). A request that only asks questions
  needs a word of the tool's name or two of the rest: over the BFCL cases
  outside the bench's held-out third, that left 152 of 230 ``irrelevance``
  requests with no tool against 132, and the right tool out of 56 of the 2,037
  cases of the other categories against 42. A shared word qualified as another
  kind of thing ("a pet store" offered a grocery-store finder) and a question of
  what a kind of thing is ("what is a holy book?") name no tool: 157 of those
  230 with no tool, for the right tool out of 3 more of the 2,037. Questions
  whose wording asks for what a tool of their words does not give (advice, the
  first of a ranking, a person of a calculator, another quantity than the one a
  calculator works out: :mod:`.request_kinds`) name none either: 177 of the 230,
  the right tool out of one more case and back in one
  (``bench/no_tool_counts.py`` counts them). People's own requests (BFCL's
  ``live_irrelevance``, often several tools offered) add remarks and lone words
  that instruct nothing (:func:`.request_kinds.remarks`), requests without a
  letter, "if" shared with a tool's text by chance, and instructions for
  another job than a search tool's: 464 of the 854 requests outside the untouched
  picks with no tool against 431, the right tool out of 2 more of the 2,037.
* **Which tools.** The first reply offers only the tools named: on the BFCL
  cases tuned on, the right tool never was one sharing no word while another
  did, and the others are only wrong picks for a small model. When some tools'
  names hold a thing the request names, only those (:func:`by_thing`). After a
  tool's result all are offered again (a next step may need one nobody named).
* **Order** (:func:`by_request`). A small model reading a list of tools leans
  to the first one listed: with SmolLM2-135M on BFCL's ``multiple`` cases most
  wrong picks were the first tool, and listing the tools by the words they
  share with the request put the right one first in 47 of the 53 cases tuned on
  (22 in the order given). Words of the name count before words of the rest;
  ties keep the order the tools were given in.

Words are compared by their first :data:`STEM` letters, so "restaurants" meets
"restaurant" and "temperatura" meets "temperature"; words that name no job
("get", "calculate", "the", "specific", "within") and the endings of ordinal
numbers ("19th") are left out (:data:`_VAGUE`). A
request for an agent's generic tools that names neither a word, a file nor an
instruction ("why does the test fail?") gets an answer: the limit of judging
by words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import Any, Protocol, TypeVar

from desktop_agent.core.tooling import request_kinds

#: Letters two words must share at their start to count as one (5: "calcu", "tempe").
STEM = 5
_WORD = re.compile(r"[^\W\d_]+")
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
#: Words that say how, not what: any tool's name or description may hold them (the
#: prepositions among them too). "If" is one: people write it to add a condition
#: ("...if she is okay", "if any", "if available") and tool authors to say when an
#: argument may be left out ("if not given, today"), so the two meet by chance; a
#: check ("tell me if it rains") is named by what it checks. On BFCL's cases
#: outside the held-out third, 8 more of the 854 ``live_irrelevance`` requests get
#: an answer, against one right tool lost, which only "if" had named.
_VAGUE_WORDS = """
a an the and or of to in on at by for from with into as is are be been was it its this that
these those what which who whom how when where there here some any all each every my your our
their me you we they he she do does did can could would should will may might please want
need like if get gets set find calculate calculates compute computes determine determines
retrieve retrieves fetch fetches return returns give gives show shows make makes run runs
check checks list lists search searches look use uses using used based given specific
specified provided certain particular new current info information detail details data value
values result results number function tool method request response api call perform performs
about also than then such other only more most much many one two type types name names
has have had under after before within against between without through over per via vs
versus upon onto across toward towards during beyond behind beneath below above
"""
_VAGUE = frozenset(_VAGUE_WORDS.split())
#: Actions a tool's name may say, cut to :data:`STEM` letters (:func:`by_thing`).
_NAME_ACTION_WORDS = """
play book buy reserve rent generate translate add share create update delete remove send
lookup find search check get set make schedule order cancel open close start stop post put
patch list view show
"""
_NAME_ACTIONS = frozenset(word[:STEM] for word in _NAME_ACTION_WORDS.split())
#: A file name or path as people write one: ``notes.txt``, ``src/app.py``, ``~/x``.
_FILE = re.compile(r"[\w-]+\.[A-Za-z][\w]{0,5}\b|(?:^|\s)[~.]?/[\w.-]+|[\w.-]+/[\w.-]+")
#: Argument names of a tool that takes a file, and of one that runs what it is given.
_FILE_ARGUMENTS = frozenset({"path", "file", "filename", "filepath", "folder", "directory",
                             "dir"})
_RUN_ARGUMENTS = frozenset({"command", "cmd", "code", "script", "shell", "program", "sql",
                            "expression"})
#: The argument of a tool that searches by what it is given, and the words of an
#: instruction to search (:func:`_searches`, :func:`named`).
_QUERY_ARGUMENTS = frozenset({"query", "q", "keyword", "keywords"})
_SEARCHING = frozenset({"search", "searches", "searching", "find", "finds", "look", "looks",
                        "looking", "lookup", "seek", "seeking", "google", "browse", "research",
                        "query"})
#: Words that qualify a thing by amount, order or rank, not by kind: "the total area"
#: and "four different DNA sequences" still ask for an area and a DNA sequence.
_AMOUNT_WORDS = """
first second third fourth fifth last next previous latest recent top best worst major minor
total combined average overall another different same similar other following full whole
new old own single double three four five six seven eight nine ten several few many all
both each every any no some
"""
_AMOUNT = frozenset(_AMOUNT_WORDS.split())
#: The ending of an ordinal number ("the 19th century"): not a word.
_ORDINAL_ENDING = re.compile(r"(?<=\d)(?:st|nd|rd|th)\b", re.IGNORECASE)
#: The verbs a tool that works a quantity out is named or first described by.
_CALCULATING = frozenset({"calculate", "calculates", "calc", "compute", "computes"})


class _Offered(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...


ToolT = TypeVar("ToolT", bound=_Offered)


def stems(text: str) -> set[str]:
    """The words of ``text`` that may name a job, cut to their first :data:`STEM` letters."""
    return {word[:STEM] for word in (w.lower() for w in _WORD.findall(
        _ORDINAL_ENDING.sub(" ", text))) if len(word) > 1 and word not in _VAGUE}


def _name_words(name: str) -> str:
    """A tool's or argument's name as words: ``get_currentWeather`` -> get current Weather."""
    return " ".join(_NAME_PART.findall(name))


def overlap(request: set[str], tool: _Offered) -> tuple[int, int]:
    """How many of the request's words the tool's name, then the rest of it, share."""
    rest = stems(" ".join([tool.description or "", *_argument_texts(tool.input_schema)]))
    return len(request & stems(_name_words(tool.name))), len(request & rest)


def by_request(tools: Sequence[ToolT], request: str) -> list[ToolT]:
    """The tools most likely meant first; ties (and a request with no words) keep the order."""
    wanted = stems(request)
    if not wanted or len(tools) < 2:
        return list(tools)
    return sorted(tools, key=lambda tool: overlap(wanted, tool), reverse=True)


def offered(history: list[dict[str, Any]], tools: Sequence[ToolT]) -> list[ToolT]:
    """The tools a constrained reply may call, most likely meant first; [] for an answer.

    The first reply to the person offers the tools whose job the conversation named
    (:func:`named`): none named asks for an answer, and the others would only be
    wrong picks (on BFCL's cases tuned on, the right tool was never among them).
    After a tool's result every tool is offered again: a task's next step may need
    one nobody named (a place looked up before its weather).
    """
    request = last_request(history)
    said = person_text(history)
    if not tools or not _judged_by_words(said) or (
            history and history[-1].get("role") == "tool"):
        return by_request(tools, request)
    return by_request(by_thing(said, named(said, tools)), request)


def by_thing(request: str, tools: Sequence[ToolT]) -> list[ToolT]:
    """Of the tools named, the ones whose name holds a thing the request names, if any.

    A tool's name says the thing it works on ("Music", "Movies", "Car"), and a person
    names the thing they want ("some music", "rent a car"); a word shared only with a
    description or an argument ("album", "city", "date") is what tools of several
    jobs take. So when some tools' names hold a word of the request, the others are
    only wrong picks for a small model and are left out of the first reply (after a
    tool's result all are offered again). Actions in a name (:data:`_NAME_ACTIONS`:
    "Play", "Book", "Find") do not count: sibling tools share them (``PlayMovie``,
    ``PlayMedia``) and people write the action in other words (hear, listen, reserve).
    A tool that runs what it is given or takes a file (an agent's ``bash``,
    ``read_file``) stays: its job is whatever is asked, not a thing of its name.

    Over BFCL's cases outside the held-out third it offers fewer tools to 26
    ``multiple`` and 233 ``live_multiple`` cases, the right tool kept in 25 and 222
    (``bench/narrow_counts.py``), and leaves the right tool out of 12 more of the
    2,037 (73; 11 of them ``live_multiple``, 5 of those one tool set where "product"
    names ``get_product_details`` and the answer is ``inventory_management``); with
    SmolLM2-135M the changed ``multiple`` picks went from 3 to 6 of 16 tuned on and
    2 to 4 of 9 held out, the changed untouched ``live_relevance`` picks from 1 to 2
    of 3, none lost.
    """
    wanted = {_singular(word) for word in stems(request)}
    things = [bool(wanted & {_singular(word) for word in stems(_name_words(tool.name))
                             if word not in _NAME_ACTIONS}) for tool in tools]
    if not any(things):
        return list(tools)
    return [tool for tool, thing in zip(tools, things, strict=True)
            if thing or _takes(tool, _RUN_ARGUMENTS | _FILE_ARGUMENTS)]


def _singular(stem: str) -> str:
    """A short stem without its plural "s" ("cars" meets "car"); longer ones are cut before it."""
    return stem[:-1] if len(stem) in (4, STEM - 1) and stem.endswith("s") else stem


def names_a_job(request: str, tools: Sequence[_Offered]) -> bool:
    """Whether the request names any tool's job (or cannot be judged by words)."""
    if not tools or not _judged_by_words(request):
        return True
    return bool(named(request, tools))


def named(request: str, tools: Sequence[ToolT]) -> list[ToolT]:
    """The tools whose job the request names, in the order given.

    A tool is named by a word it shares with the request; a tool that takes a file
    by a file name or path written in it ("open notes.txt"); and a tool that runs
    what it is given (a shell command, code, a query) by any instruction, since its
    job is whatever is asked ("commit my changes", "install numpy"), and by a remark
    on how things are ("The build is broken."), which to such an agent is the task.
    Questions and greetings ("hello", "who won the World Cup?") instruct nothing. A tool whose job
    is searching (its name or its description's first word says search, find,
    look up) by a free query is the exception: it does only what a search does, so
    an instruction names it by asking to search ("search flight prices...", "find
    me...", "I'm looking for...") or by its words, and not by asking for something
    else ("Book me a ticket to Delhi", "Add vaccine to my agenda" of a web search).
    Over BFCL's cases outside the held-out third that held 7 more of the 854
    ``live_irrelevance`` requests to an answer, for one right tool lost (asked for
    by "seacrh", a typo).

    A request that only asks questions asks for knowledge unless it names a tool's
    job plainly: a word of the tool's name, or two of the rest of it. One word of a
    description is what a question shares with a tool of its field in passing
    ("what is the mass of an electron?" and a tool whose description says
    "electric current"); an instruction ("find...", "can you...") asks for an action
    and one shared word names it.

    Some questions ask for what no tool gives by running, whatever words they share
    with it (:mod:`.request_kinds`): what a kind of thing is ("what is a holy
    book?": a tool searching holy books finds passages, it does not say what they
    are) and how the person could do something ("how can I sell my guitar?": a
    guitar-tuning tool tunes, it does not advise) name no tool by their words. A
    question for the one that ranks first ("the highest grossing movie", "the best
    month to visit") names a tool only if the tool says that rank itself (a
    top-scorer tool "with most goals"), and a question of who names no tool that
    calculates (a person is not a quantity). A tool that calculates works out what
    its name or description says: asked for another quantity ("calculate the area
    of a triangle" of a body-mass-index calculator), the words they share are only
    its inputs (a height), and it is not named (:func:`_works_out`).

    A word shared as the head of another compound names another thing: "a pet store"
    is not the "grocery store" of ``grocery_store_locate_nearby``, and "the external
    rate of return" is not the internal one (:func:`_names_another_kind`).
    """
    lines = [line for line in request.splitlines() if line.strip()]
    wanted = set() if request_kinds.asks_what_a_kind_is(request) or \
        request_kinds.asks_for_a_method(request) else stems(request)
    files = any(_FILE.search(line) for line in lines)
    instructs = any(not request_kinds.asks_or_greets(line) for line in lines)
    # To an agent that runs what it is given, "The build is broken." is the task.
    tells = instructs or any(not request_kinds.asks_or_greets(line, remarking=False)
                             for line in lines)
    ranks = request_kinds.ranks_asked(request)
    searches = bool(_SEARCHING & {word.lower() for word in _WORD.findall(request)})
    who = request_kinds.asks_who(request)
    quantities = {word[:STEM] for word in request_kinds.quantities_asked(request)
                  if word not in _VAGUE and word.rstrip("s") not in _VAGUE
                  and word not in _AMOUNT}
    return [tool for tool in tools if (_shares_job(overlap(wanted, tool), instructs)
                                       and not _names_another_kind(request, tool)
                                       and (not ranks or _says_rank(tool, ranks))
                                       and not (who and _calculates(tool))
                                       and _works_out(tool, quantities))
            or (files and _takes(tool, _FILE_ARGUMENTS))
            or (tells and _takes(tool, _RUN_ARGUMENTS))
            or (instructs and (searches or not _searches(tool))
                and _takes(tool, _QUERY_ARGUMENTS))]


def _searches(tool: _Offered) -> bool:
    """Whether the tool's job is searching: its name or its description's first word says so."""
    first = _WORD.findall(tool.description or "")[:1]
    return bool({part.lower() for part in _NAME_PART.findall(tool.name)} & _SEARCHING) \
        or bool(first and first[0].lower() in _SEARCHING)


def _says_rank(tool: _Offered, ranks: set[str]) -> bool:
    """Whether the tool's name, description or arguments say one of ``ranks`` itself."""
    text = " ".join([_name_words(tool.name), tool.description or "",
                     *_argument_texts(tool.input_schema)])
    return bool(ranks & {word.lower() for word in _WORD.findall(text)})


def _works_out(tool: _Offered, quantities: set[str]) -> bool:
    """Whether a tool that calculates says it works out one of the ``quantities`` asked.

    A tool that does not calculate, or a request that asks for no quantity (or for
    one in vague words: "the result of"), is not judged by it.
    """
    if not quantities or not _calculates(tool):
        return True
    return bool(quantities & stems(" ".join([_name_words(tool.name),
                                             tool.description or ""])))


def _calculates(tool: _Offered) -> bool:
    """Whether the tool works a quantity out: its name or first word says it calculates."""
    first = _WORD.findall(tool.description or "")[:1]
    return bool({part.lower() for part in _NAME_PART.findall(tool.name)} & _CALCULATING) \
        or bool(first and first[0].lower() in _CALCULATING)


def _shares_job(shared: tuple[int, int], instructs: bool) -> bool:
    """Whether words shared (with the name, with the rest) name the tool's job."""
    in_name, in_rest = shared
    return bool(in_name or in_rest) if instructs else bool(in_name or in_rest >= 2)


def _names_another_kind(request: str, tool: _Offered) -> bool:
    """Whether the request qualifies a word of the tool's name as another kind of thing.

    The tool's name holds a compound its description repeats word for word
    ("grocery store" in ``grocery_store_locate_nearby``, "Find grocery stores
    nearby"), so its first word says which kind; the request writes the same head
    after another word ("a pet store") that the tool's words nowhere hold, and not
    the tool's compound itself ("the grocery store next to the pet store"). Words of
    amount or rank ("the total area"), names ("the Hilton hotel") and the tool's
    word abbreviated ("application" for "app") qualify no kind. A verb before the
    name's word ("close_project") is not a compound: the description then says
    "close a project", not "close project".
    """
    name = [part.lower() for part in _NAME_PART.findall(tool.name)]
    described = [word.lower()[:STEM] for word in _WORD.findall(tool.description or "")]
    compounds = {(first[:STEM], head[:STEM]) for first, head in pairwise(name)
                 if first not in _VAGUE and first not in _AMOUNT and head not in _VAGUE
                 and first[:STEM] != head[:STEM]}
    compounds &= set(pairwise(described))
    if not compounds:
        return False
    tool_words = stems(" ".join([_name_words(tool.name), tool.description or "",
                                 *_argument_texts(tool.input_schema)]))
    words = _WORD.findall(request)
    if compounds & {(a.lower()[:STEM], b.lower()[:STEM]) for a, b in pairwise(words)}:
        return False  # the tool's own compound is written too
    for position, (before, head) in enumerate(pairwise(words)):
        qualifier = before.lower()
        if before.isupper() or (before[0].isupper() and position > 0) or \
                len(qualifier) < 3 or qualifier in _VAGUE or qualifier in _AMOUNT:
            continue
        for first, tool_head in compounds:
            if head.lower()[:STEM] == tool_head and qualifier[:STEM] != first and \
                    not qualifier.startswith(first) and qualifier[:STEM] not in tool_words:
                return True
    return False


def _takes(tool: _Offered, kinds: frozenset[str]) -> bool:
    """Whether the tool has a free string argument whose name holds one of ``kinds``."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return False
    return any(isinstance(value, dict) and value.get("type") == "string"
               and "enum" not in value
               and any(part.lower() in kinds for part in _NAME_PART.findall(str(name)))
               for name, value in properties.items())


def person_text(history: list[dict[str, Any]]) -> str:
    """What the person wrote in the conversation ("yes, do it" leans on what came before)."""
    return "\n".join(_content_text(m.get("content")) for m in history if m.get("role") == "user")


def last_request(history: list[dict[str, Any]]) -> str:
    """The text of the person's last message ("" when there is none)."""
    for message in reversed(history):
        if message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _judged_by_words(request: str) -> bool:
    """Whether the request can be judged by its words: most of its letters are Latin ones.

    The stems and the wording rules (:mod:`.request_kinds`) read English and the
    Latin-script languages near it; a request in another script ("Какая погода в
    Москве?", "北京的天气怎么样？") asked of tools described in English shares no
    word with them whether or not it means one, so it counts as naming every tool
    and the model decides. On BFCL's ``live_irrelevance`` requests, judging
    Cyrillic and Arabic ones by their words would have held 12 more of the 854 to an
    answer with no right tool lost there, but it would also hold "запусти тесты"
    ("run the tests") away from a shell tool: the file's labels are not what a
    person writing in Russian expects. A request without a letter ("", "9:45",
    "/") names no job: nothing in it asks for a tool.
    """
    letters = [c for c in request if c.isalpha()]
    if not letters:
        return True  # judged, and no word names a tool
    latin = sum(1 for c in letters if c.isascii() or "\u00c0" <= c <= "\u024f")
    return latin * 2 > len(letters)


def _argument_texts(schema: Any) -> Iterator[str]:
    """The names, descriptions and allowed values of a schema's arguments, nested ones too."""
    if not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, value in properties.items():
            yield _name_words(str(name))
            yield from _argument_texts(value)
    if isinstance(schema.get("description"), str):
        yield schema["description"]
    if isinstance(schema.get("enum"), list):
        yield " ".join(str(v) for v in schema["enum"])
    if isinstance(schema.get("items"), dict):
        yield from _argument_texts(schema["items"])


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if isinstance(part, dict)
                         and isinstance(part.get("text"), str))
    return ""
