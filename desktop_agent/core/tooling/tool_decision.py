"""Whether a tool is wanted at all, asked of the model before the call grammar applies.

Held to a call grammar that also allows an answer, a small model still takes a call:
the choice between ``{"answer"`` and ``{"name"`` is made with the whole system prompt
of tool shapes behind it. Asked the plain question instead ("does one of these tools
do what the request asks? Yes or No") in a short request of its own, it answers by
habit, not by meaning: SmolLM2-135M greedily said "No" to every BFCL case tried, and
under other wordings "Yes" to every one, or took whichever option was listed first.

The habit is measured and taken out (contextual calibration, Zhao et al. 2021,
"Calibrate Before Use"): the same question is asked about a request that says
nothing ("N/A"), and the model's leaning towards "Yes" or "No" there is subtracted
from its leaning on the real request. "No" then wins only when the request pulls
the model towards "No" more than an empty one does. Both requests ask for one token
and read the server's log-probabilities of its options (OpenAI's ``logprobs`` and
``top_logprobs``; llama.cpp and vLLM give the probabilities before any grammar); a
server that gives none, or refuses the fields, leaves the turn as it was.

The question is its own short prompt (the offered tools' names and descriptions and
the person's request), not the turn's prompt with a question added: asked after the
turn's full prompt (the call shapes, every tool's arguments), SmolLM2 leaned to "No"
for half the BFCL requests that want a call.

Only the first reply to the person's message is decided, and only when the word
rules of :mod:`.tool_match` left some tool offered: after a tool's result the model
goes on with a task already begun.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling import tool_match
from desktop_agent.core.wire.side_request import first_token_logprobs

if TYPE_CHECKING:
    from collections.abc import Sequence

    from desktop_agent.core.tooling.tools import Tool
    from desktop_agent.core.wire.wire_settings import WireSettings

#: What the calibration request says in place of the person's request.
BLANK = "N/A"
#: Options of the first token the server is asked for: "Yes" and "No" are among them
#: even when the model would rather start another way ("The", "To").
TOP_LOGPROBS = 20
_YES = frozenset({"yes"})
_NO = frozenset({"no"})


def question(tools: Sequence[Tool], request: str) -> str:
    """The decision's one user message: the tools (names and descriptions) and the request."""
    lines = "\n".join(f"- {t.name}: {t.description}" for t in tools)
    return (f"Tools:\n{lines}\n\nRequest: {request}\n\n"
            "Does one of these tools do what the request asks? Reply Yes or No.")


def decision_body(turn_request: dict[str, Any], system: str | None, tools: Sequence[Tool],
                  request: str) -> dict[str, Any]:
    """The decision request, made from the turn's: its model, sampling and ``extra_body``.

    ``system`` is the person's own system prompt (without the call shapes the turn's
    request adds to it): it can say what the tools are for.
    """
    body: dict[str, Any] = {k: v for k, v in turn_request.items()
                            if k in ("model", "temperature", "extra_body", "stream",
                                     "stream_options")}
    body["messages"] = [*([{"role": "system", "content": system}] if system else []),
                        {"role": "user", "content": question(tools, request)}]
    body.update(max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS)
    return body


def leaning(top: dict[str, float] | None) -> tuple[float, float] | None:
    """Log-probabilities of "Yes" and of "No" among a first token's options, or None.

    Spellings of one word ("Yes", " yes") are added up; None when either is missing.
    """
    if not top:
        return None
    yes = sum(math.exp(p) for token, p in top.items() if token.strip().lower() in _YES)
    no = sum(math.exp(p) for token, p in top.items() if token.strip().lower() in _NO)
    if yes <= 0 or no <= 0:
        return None
    return math.log(yes), math.log(no)


def wants_tool(asked: tuple[float, float], blank: tuple[float, float]) -> bool:
    """Whether the calibrated leaning is "Yes": the request pulls to "No" less than "N/A" does."""
    return asked[0] - blank[0] > asked[1] - blank[1]


class ToolDecision:
    """Asks, per turn, whether a tool is wanted; remembers what a server cannot answer.

    One per Client. The calibration depends only on the system prompt and the tools
    offered, so it is asked once for each and kept.
    """

    def __init__(self) -> None:
        self._blanks: dict[tuple[str, ...], tuple[float, float] | None] = {}
        self._unanswered: set[tuple[str, str]] = set()

    def applies(self, history: list[dict[str, Any]], tools: Sequence[Tool],
                options: WireSettings, model: str) -> list[Tool]:
        """The tools to ask about ([] when the decision is not made for this request)."""
        if not history or history[-1].get("role") != "user" or \
                (options.base_url, model) in self._unanswered:
            return []
        return tool_match.offered(history, tools)

    async def no_tool_fits(self, http: Any, options: WireSettings,
                           turn_request: dict[str, Any], system: str | None,
                           tools: Sequence[Tool], request: str) -> bool:
        """True when the model's calibrated decision is that no tool fits the request.

        False when it is "Yes", and when the server cannot answer: the turn then goes
        on as it would without the decision, and nothing of it reaches the person. A
        server that refuses the request or sends no log-probabilities is not asked
        again (for this Client); "Yes" or "No" missing from the options only skips
        this decision.
        """
        from desktop_agent.core.errors import APIError

        model = str(turn_request.get("model"))
        key = (system or "", *(f"{t.name}\n{t.description}" for t in tools))
        try:
            if key not in self._blanks:
                top = await first_token_logprobs(
                    http, decision_body(turn_request, system, tools, BLANK), options)
                if top is None:
                    self._unanswered.add((options.base_url, model))
                    return False
                self._blanks[key] = leaning(top)
            blank = self._blanks[key]
            if blank is None:
                return False
            asked = leaning(await first_token_logprobs(
                http, decision_body(turn_request, system, tools, request), options))
        except APIError:
            self._unanswered.add((options.base_url, model))
            return False
        return asked is not None and not wants_tool(asked, blank)
