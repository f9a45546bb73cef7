"""Three replies a small model gets asked again for, once each per turn.

All were seen on SmolLM2-135M under llama.cpp (BFCL's cases):

* a constrained reply cut by ``max_tokens`` in the middle of a call: the same
  request goes again once with twice the room, and the cut call's error ("cut
  off by the token limit") is shown only when the retry is cut too; a call that
  was never made is not the person's concern (the turn's metadata says
  ``asked_again: ["room"]``);
* a reply in prose that names an offered tool ("use get_weather with city
  Paris"), in either mode: the model meant to call it, so the same request
  goes again once with the reply held to calls of the offered tools;
* a constrained call that held nothing the person gave (blanks, zeros, the
  tool's own names: :func:`~desktop_agent.core.wire.call_lists.placeholder`),
  or made up a value the tool needs
  (:func:`~desktop_agent.core.wire.call_lists.invents_needed`), which is not
  kept: asked something no offered tool does, or a tool's job without the values
  it needs, the model filled a call in anyway, so the same request goes again
  once held to an answer, where the model can ask for them.

The reply that is asked again is not kept in the history; the next request is
the same one with the change.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling import tool_call_mode, tool_match

if TYPE_CHECKING:
    from desktop_agent.core.tooling.tooling_settings import ToolingSettings
    from desktop_agent.core.wire.stream import StreamAggregator

ROOM = "room"
CALLS_ONLY = "calls_only"
ANSWER_ONLY = "answer_only"


def names_a_tool(text: str, names: list[str]) -> str | None:
    """The first offered tool the text names the way a call would, or None.

    A name counts when it stands alone and either looks like an identifier
    no sentence has (``get_weather``, ``fs.read``) or is written as a call
    (``search(``), so that "read the file" does not name a tool ``read``.
    """
    for name in names:
        pattern = rf"(?<![\w.]){re.escape(name)}(?![\w])"
        for match in re.finditer(pattern, text):
            distinctive = not name.isalpha() or any(c.isupper() for c in name[1:])
            if distinctive or text[match.end():].lstrip().startswith("("):
                return name
    return None


class SecondChances:
    """Per turn: which second chance was used, and how the next request differs."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        #: The next request holds the reply to calls only.
        self.calls_only = False
        #: The next request holds the reply to an answer.
        self.answer_only = False
        #: The next request's ``max_tokens`` (None: the options').
        self.max_tokens: int | None = None

    def new_turn(self) -> None:
        """A new turn: both chances are there again."""
        self.used.clear()
        self.calls_only = False
        self.answer_only = False
        self.max_tokens = None

    def hold_to_answer(self) -> None:
        """Hold the next request to an answer, and its prose is not asked again for calls.

        The model decided no tool fits (:mod:`.tool_decision`): an answer that names
        a tool in passing is still the answer.
        """
        self.answer_only = True
        self.used.add(CALLS_ONLY)

    def after_reply(self, options: ToolingSettings, aggregator: StreamAggregator, *,
                    after_tools: bool = False,
                    history: list[dict[str, Any]] | None = None) -> str | None:
        """Whether to ask again (``ANSWER_ONLY``, ``ROOM`` or ``CALLS_ONLY``), setting it up.

        ``after_tools``: the reply answers tool results. An answer then names
        the tools it used ("read_file shows..."), so prose is only asked again
        when it answers the person's prompt. ``history``: the conversation; prose
        is not asked again for calls when the person named no tool's job
        (:func:`.tool_match.names_a_job`), where the answer was all that was allowed.
        """
        self.calls_only = False
        self.answer_only = False
        self.max_tokens = None
        if ANSWER_ONLY not in self.used and aggregator.placeholder_call:
            self.used.add(ANSWER_ONLY)
            self.answer_only = True
            return ANSWER_ONLY
        if ROOM not in self.used and aggregator.cut_call and options.max_tokens:
            self.used.add(ROOM)
            self.max_tokens = 2 * options.max_tokens
            return ROOM
        if after_tools or CALLS_ONLY in self.used or aggregator.tool_blocks or \
                aggregator.tool_errors:
            return None
        if not tool_call_mode.may_constrain(options):
            return None
        if names_a_tool(aggregator.text, [t.name for t in options.tools]) is None:
            return None
        if history is not None and not tool_match.names_a_job(
                tool_match.person_text(history), options.tools):
            return None
        self.used.add(CALLS_ONLY)
        self.calls_only = True
        return CALLS_ONLY
