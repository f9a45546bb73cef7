"""The tool-call probe: which way of calling tools really works for one model, measured.

The automatic mode (:mod:`.tool_call_mode`) first decides from what a server
*says* (its capabilities, its template). What a model *does* can differ: a
model listed as tool-capable may never write a call, and a small model under a
tool-aware template may write calls as text. The probe asks a handful of short
questions (temperature 0, a small token limit), each twice:

* natively, with ``tools=``: scored once for the server's own ``tool_calls``
  (``native``) and once counting calls the model wrote as text in the same
  reply (``text``: the native mode reads those too);
* constrained (:mod:`.constrained_calls`): tools in the system prompt, the
  reply held to a call or an answer by the server's grammar.

The cases: one tool offered, several tools offered (two different ones
asked), and a question that needs no tool (right when nothing is called). The
winner is what the automatic mode uses from then on for this server and model
(:func:`.tool_call_mode.remember_probe`); the front ends keep the result.

Requests go through the server's ``AsyncOpenAI`` like every other request; one
probe per server and model runs at a time in a process (:func:`probe_once`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import openai

from desktop_agent.core.servers.model_details import get_json, request_errors
from desktop_agent.core.servers.template_tools import template_tools
from desktop_agent.core.tooling import constrained_calls
from desktop_agent.core.tooling.probe_result import ProbeResult
from desktop_agent.core.tooling.tools import Tool
from desktop_agent.core.wire.constrained_reply import ConstrainedReplyParser
from desktop_agent.core.wire.text_tool_calls import TextCall, TextToolCallParser, call_from

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool

log = logging.getLogger("desktop_agent.core.tool_calls")

_FAILURES: tuple[type[BaseException], ...] = (*request_errors(), OSError)

#: Tokens a probe reply may take: a call or a short answer fits.
PROBE_MAX_TOKENS = 96


def _noop(args: dict[str, Any]) -> str:
    return ""


def _tool(name: str, description: str, properties: dict[str, Any]) -> Tool:
    return Tool(name, description, {"type": "object", "properties": properties,
                                    "required": list(properties)}, _noop)


_WEATHER = _tool("get_weather", "Get the current weather in a city.",
                 {"city": {"type": "string", "description": "The city's name"}})
_TIME = _tool("get_time", "Get the current local time in a city.",
              {"city": {"type": "string", "description": "The city's name"}})
_ADD = _tool("add", "Add two numbers.", {"a": {"type": "number"}, "b": {"type": "number"}})

Check = Callable[[list[TextCall]], bool]


@dataclass(frozen=True, slots=True)
class ProbeCase:
    """One question, the tools offered with it, and what a right reply does."""

    prompt: str
    tools: tuple[Tool, ...]
    right: Check


def _called(name: str, **expected: Any) -> Check:
    def right(calls: list[TextCall]) -> bool:
        if len(calls) != 1 or calls[0].name != name or calls[0].arguments is None:
            return False
        arguments = calls[0].arguments
        return all(_same(arguments.get(key), value) for key, value in expected.items())
    return right


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, str):
        return isinstance(got, str) and want.casefold() in got.casefold()
    try:
        return float(got) == float(want)
    except (TypeError, ValueError):
        return False


def _nothing(calls: list[TextCall]) -> bool:
    return not calls


CASES: tuple[ProbeCase, ...] = (
    ProbeCase("What is the weather in Paris?", (_WEATHER,), _called("get_weather", city="Paris")),
    ProbeCase("What time is it in Tokyo?", (_WEATHER, _TIME, _ADD),
              _called("get_time", city="Tokyo")),
    ProbeCase("Use the add tool to add 2 and 3.", (_WEATHER, _TIME, _ADD),
              _called("add", a=2, b=3)),
    ProbeCase("Say hello in French.", (_WEATHER, _TIME, _ADD), _nothing),
)


class ProbeFailed(Exception):
    """A probe request failed for a reason other than the constrained field being refused."""


async def _ask(http: openai.AsyncOpenAI, url: str, body: dict[str, Any],
               timeout: float) -> dict[str, Any]:
    reply = await get_json(http, url, timeout, body=body)
    choices = reply.get("choices") if isinstance(reply, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices else None
    return message if isinstance(message, dict) else {}


def _native_calls(message: dict[str, Any]) -> list[TextCall]:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append(call_from(function, str(function)))
    return calls


def _text_calls(content: Any, parser: TextToolCallParser | ConstrainedReplyParser,
                ) -> list[TextCall]:
    if isinstance(content, str) and content:
        parser.feed(content)
    parser.finish()
    return list(parser.calls)


async def probe_tool_calls(base_url: str, model: str, api_key: str | None = None, *,
                           timeout: float = 120.0, pool: ConnectionPool | None = None,
                           cases: tuple[ProbeCase, ...] = CASES) -> ProbeResult:
    """Measure native, text-format and constrained calls of ``model`` on its server.

    Never raises for a server's failure: the result's ``error`` says it, and
    its scores count the cases done so far.
    """
    from desktop_agent.core.servers.discovery import server_client

    url = base_url.rstrip("/") + "/chat/completions"
    native = text = constrained = 0
    refused = False
    error: str | None = None
    template = await template_tools(base_url, api_key, timeout=min(timeout, 5.0), pool=pool)
    try:
        async with server_client(base_url, api_key, pool) as http:
            for case in cases:
                common = {"model": model, "temperature": 0, "max_tokens": PROBE_MAX_TOKENS,
                          "stream": False}
                user = {"role": "user", "content": case.prompt}
                message = await _ask(http, url, {
                    **common, "messages": [user],
                    "tools": [t.to_openai_format() for t in case.tools]}, timeout)
                said = _native_calls(message)
                native += case.right(said)
                text += case.right(said or _text_calls(message.get("content"),
                                                       TextToolCallParser()))
                if refused:
                    continue
                try:
                    message = await _ask(http, url, {
                        **common, "messages": [
                            {"role": "system",
                             "content": constrained_calls.instructions(case.tools)}, user],
                        "response_format": constrained_calls.response_format(
                            list(case.tools), max_tokens=PROBE_MAX_TOKENS)}, timeout)
                except openai.BadRequestError as exc:
                    refused = True  # the field itself refused: no constrained calls here
                    log.info("%s refused constrained decoding for %s: %s", base_url, model, exc)
                    continue
                constrained += case.right(_text_calls(message.get("content"),
                                                      ConstrainedReplyParser()))
    except _FAILURES as exc:
        error = f"The server stopped answering during the probe ({type(exc).__name__}: " \
                f"{str(exc)[:160]})."
    result = ProbeResult(len(cases), native, text, None if refused else constrained,
                         template.ignored, error)
    log.info("%s %s probe: %s", base_url, model, result.summary)
    return result


_RUNNING: dict[tuple[str, str], asyncio.Task[ProbeResult]] = {}


async def probe_once(base_url: str, model: str, api_key: str | None = None, *,
                     timeout: float = 120.0, pool: ConnectionPool | None = None) -> ProbeResult:
    """The probe of this server and model, run once however many ask for it at the same time.

    A second caller (a *Test this model* click while the background probe of a
    first conversation runs) waits for the same run; its cancelling does not
    cancel the run the others wait for.
    """
    key = (base_url.rstrip("/"), model)
    loop = asyncio.get_running_loop()
    running = _RUNNING.get(key)
    if running is None or running.get_loop() is not loop:
        running = loop.create_task(probe_tool_calls(base_url, model, api_key, timeout=timeout,
                                                    pool=pool))
        _RUNNING[key] = running
        running.add_done_callback(lambda done: _finished(key, done))
    return await asyncio.shield(running)


def _finished(key: tuple[str, str], done: asyncio.Task[ProbeResult]) -> None:
    if _RUNNING.get(key) is done:
        del _RUNNING[key]
    if not done.cancelled() and done.exception() is not None:  # its waiters may all be gone
        log.warning("the tool-call probe of %s %s failed: %s", *key, done.exception())


def running(base_url: str, model: str) -> bool:
    """Whether a probe of this server and model is under way in this process."""
    task = _RUNNING.get((base_url.rstrip("/"), model))
    return task is not None and not task.done()


def cancel(base_url: str, model: str) -> bool:
    """Stop the probe of this server and model under way (a turn needs the server now)."""
    task = _RUNNING.get((base_url.rstrip("/"), model))
    if task is None or task.done():
        return False
    task.cancel()
    return True
