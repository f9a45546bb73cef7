"""Which way tools are offered to a model: natively, or through constrained decoding.

Measured on BFCL's own cases with SmolLM2-135M on llama.cpp, the SDK sending
``tools=`` got 0 % of calls right (the model never wrote a native call) and
the constrained mode (:mod:`.constrained_calls`) 55 % of the simple ones; a
new user only met the second by finding a checkbox. So by default
(``AgentOptions.constrained_tool_calls="auto"``) a request with tools is
constrained when the server compiles JSON schemas to a grammar and the model
is not known to call tools natively (:mod:`~desktop_agent.core.servers.tool_call_support`
asks the server once per model), and native otherwise (cloud APIs, unknown
servers, models declared tool-capable).

A server that refuses the ``response_format`` field itself is remembered per
model for the process, and the mode says so; any other error (a 500, an
overloaded server) is only that request's failure and changes nothing.

Evidence beats what a server says: once the probe (:mod:`.tool_call_probe`)
has measured a model, its winner is the automatic mode, with the measured
scores as the reason; the front ends keep probe results across runs and give
them back with :func:`remember_probe`. A llama.cpp chat template that drops
``tools`` (:mod:`~desktop_agent.core.servers.template_tools`) is named in the
reason too: native calls cannot work there, whatever the model could do.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from desktop_agent.core.servers.tool_call_support import (
    GRAMMAR_SERVERS,
    ToolCallSupport,
    tool_call_support,
)
from desktop_agent.core.tooling.probe_result import ProbeResult

if TYPE_CHECKING:
    from desktop_agent.core.tooling.tooling_settings import ToolingSettings

log = logging.getLogger("desktop_agent.core.tool_calls")

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class ToolCallMode:
    """The mode one model's requests use, and why, in words a settings page can show.

    Attributes:
        constrained: True: tools go in the system prompt and the reply is held
            to ``{"answer"}`` or ``{"tool_calls"}`` by the server's grammar.
        reason: Why, as a sentence.
        automatic: Whether the SDK chose (False: the options said).
        grammar: Whether the server may be asked for constrained replies at all
            (a reply in prose naming a tool is asked again that way).
        measured: The probe's result the mode was chosen from, if one was.
        template_ignores_tools: The server's chat template drops ``tools``.
    """

    constrained: bool
    reason: str
    automatic: bool = True
    grammar: bool = False
    measured: ProbeResult | None = None
    template_ignores_tools: bool = False


_DECIDED: dict[Key, ToolCallMode] = {}
_ASKING: dict[Key, asyncio.Task[ToolCallSupport]] = {}
"""The question in flight per server and model: turns starting together wait for one answer."""
_REFUSED: dict[Key, str] = {}
_MEASURED: dict[Key, ProbeResult] = {}
_SERVERS: dict[str, str] = {}
"""The kind of server at each base URL, as its own endpoints said (``llama.cpp``...)."""
_KIND_ASKED: set[str] = set()
"""Base URLs whose endpoints answered the question, whether or not they named a kind:
a server of no known kind was asked its five endpoints again at every turn."""


def _key(options: ToolingSettings) -> Key:
    return (options.base_url.rstrip("/"), options.model)


def refusal(base_url: str, model: str) -> str | None:
    """Why the server refused ``response_format`` for this model, if it did in this process."""
    return _REFUSED.get((base_url.rstrip("/"), model))


def remember_refusal(options: ToolingSettings, detail: str) -> None:
    """The server refused the field for this model: later requests go natively."""
    key = _key(options)
    _REFUSED[key] = detail
    log.warning("%s refused response_format for %s (%s); tool calls go natively for this "
                "model from now on", key[0], key[1], detail)


def remember_probe(base_url: str, model: str, result: ProbeResult) -> None:
    """The probe measured this model: its winner is the automatic mode from now on."""
    key = (base_url.rstrip("/"), model)
    _MEASURED[key] = result
    _DECIDED.pop(key, None)


def measured(base_url: str, model: str) -> ProbeResult | None:
    """The probe's result for this server and model, if it ran (or was given back)."""
    return _MEASURED.get((base_url.rstrip("/"), model))


def forget(base_url: str | None = None) -> None:
    """Forget decisions, refusals, measurements and questions in flight (one server's, or all).

    After a server restart, and in tests.
    """
    for table in (_DECIDED, _REFUSED, _ASKING, _MEASURED):
        for key in [k for k in table if base_url is None or k[0] == base_url.rstrip("/")]:
            del table[key]
    for url in [u for u in _SERVERS if base_url is None or u == base_url.rstrip("/")]:
        del _SERVERS[url]
    _KIND_ASKED.difference_update(
        [u for u in _KIND_ASKED if base_url is None or u == base_url.rstrip("/")])


def server_kind(base_url: str) -> str | None:
    """The kind of server at ``base_url`` once a turn with tools asked it (else None)."""
    return _SERVERS.get(base_url.rstrip("/"))


def decided(options: ToolingSettings) -> ToolCallMode | None:
    """The mode for these options if it is known without asking the server."""
    setting = options.constrained_tool_calls
    key = _key(options)
    refused = _REFUSED.get(key)
    automatic = setting == "auto"
    if setting is False:
        return ToolCallMode(False, "Native tool calls: chosen in the settings.", False)
    if refused is not None:
        return ToolCallMode(False, "Native tool calls: the server refused constrained "
                                   f"decoding for this model ({refused}).", automatic)
    if setting is True:
        return ToolCallMode(True, "Constrained tool calls: chosen in the settings.", False, True)
    probe = _MEASURED.get(key)
    if probe is not None and probe.error is None:
        return from_probe(probe)
    return _DECIDED.get(key)


def from_probe(probe: ProbeResult) -> ToolCallMode:
    """The automatic mode the probe's measurement gives."""
    grammar = bool(probe.constrained)
    template = bool(probe.template_ignores_tools)
    if probe.constrained_wins:
        return ToolCallMode(True, f"Constrained tool calls: measured on this model "
                                  f"({probe.summary}).", grammar=True, measured=probe,
                            template_ignores_tools=template)
    return ToolCallMode(False, f"Native tool calls: measured on this model ({probe.summary}).",
                        grammar=grammar, measured=probe, template_ignores_tools=template)


def choose(support: ToolCallSupport) -> ToolCallMode:
    """The automatic mode for what the server said."""
    server = support.server
    if not support.reached:
        return ToolCallMode(False, "Native tool calls for now: the server did not answer; it "
                                   "is asked again at the next message.")
    grammar = bool(support.grammar) and server in GRAMMAR_SERVERS
    if support.native:
        return ToolCallMode(False, f"Native tool calls: {server} says the model calls tools "
                                   "itself.", grammar=grammar)
    if grammar and support.template_ignores_tools:
        return ToolCallMode(True, "Constrained tool calls: this model's chat template has no "
                                  f"place for tools ({server} drops them without an error, so "
                                  "the model would never see them).", grammar=True,
                            template_ignores_tools=True)
    if grammar:
        return ToolCallMode(True, f"Constrained tool calls: {server} can hold replies to a "
                                  "grammar and the model is not known to call tools "
                                  "natively.", grammar=True)
    if server is not None:
        return ToolCallMode(False, f"Native tool calls: {server} does not say it can "
                                   "constrain replies.")
    return ToolCallMode(False, "Native tool calls: the server did not say it can constrain "
                               "replies (not llama.cpp, LM Studio, Ollama or vLLM).")


async def resolve(options: ToolingSettings) -> ToolCallMode:
    """The mode for these options, asking the server once per model when automatic."""
    known = decided(options)
    if known is not None and (options.base_url.rstrip("/") in _KIND_ASKED
                              or options.constrained_tool_calls != "auto"):
        return known
    support = await _asked_once(options)  # also when measured: which server kind it is
    if support.server is not None:
        _SERVERS[_key(options)[0]] = support.server
    if support.reached:  # a server that is down is asked again at the next turn
        _KIND_ASKED.add(_key(options)[0])
    if known is not None:
        return known
    key = _key(options)
    mode = choose(support)
    if support.reached:  # a server that is down is asked again at the next turn
        _DECIDED[key] = mode
    log.info("%s %s: %s", key[0], key[1], mode.reason)
    return mode


async def _asked_once(options: ToolingSettings) -> ToolCallSupport:
    """The server's answer, asked once however many turns want it at the same time.

    Why: when fifty conversations start at once (a REST client fanning out,
    a replica's first minute), each asked the server's five endpoints itself:
    250 requests where 5 do, about a seventh of a replica's Python time in a
    run of 150 two-piece turns (``py-spy --gil`` on a replica during
    ``bench/server_load.py --tokens 2``; gone with one question). One turn's
    cancelling does not cancel the question the others wait for.
    """
    key = _key(options)
    loop = asyncio.get_running_loop()
    asking = _ASKING.get(key)
    if asking is None or asking.get_loop() is not loop:
        asking = loop.create_task(tool_call_support(
            options.base_url, options.model, options.api_key,
            timeout=min(options.timeout, 3.0), pool=options.connection_pool))
        _ASKING[key] = asking
        asking.add_done_callback(lambda done: _ASKING.pop(key, None)
                                 if _ASKING.get(key) is done else None)
    return await asyncio.shield(asking)


def constrained(options: ToolingSettings) -> bool:
    """Whether requests with these options ask for constrained calls (sync: the request builder).

    Automatic options whose mode was never resolved go natively.
    """
    if not options.tools or options.output_type is not None:
        return False
    mode = decided(options)
    return mode is not None and mode.constrained


def may_constrain(options: ToolingSettings) -> bool:
    """Whether a constrained request may be sent at all (asking a prose reply again)."""
    mode = decided(options)
    return mode is not None and mode.grammar and options.output_type is None \
        and bool(options.tools)
