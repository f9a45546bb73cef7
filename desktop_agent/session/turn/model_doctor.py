"""The model doctor of one conversation: what it learnt of the model, said and kept.

After each turn it looks at what the core measured and tells the person, once
per model, what would otherwise stay invisible:

* the server's chat template drops ``tools`` (llama.cpp; constrained calls are
  used instead);
* the fixed part of the prompt (system prompt, instructions, tool schemas)
  takes over five seconds to process on this server, with what helps.

It also runs the tool-call probe (:mod:`desktop_agent.core.tooling.tool_call_probe`):
on demand (*Test this model*, the REST route), and once in the background after
the first turn with a model it has no result for, on a server that can constrain
replies (elsewhere there is nothing to choose between). Results are kept per
server and model in the store's app settings, so every conversation and
process uses them, and handed to the core's automatic mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from desktop_agent.core.servers import prompt_speed
from desktop_agent.core.servers.tool_call_support import GRAMMAR_SERVERS
from desktop_agent.core.tooling import tool_call_mode
from desktop_agent.core.tooling.probe_result import ProbeResult
from desktop_agent.core.tooling.tool_call_probe import cancel, probe_once, running
from desktop_agent.session.events import DoctorNotice, SessionEvent, ToolCallProbed

if TYPE_CHECKING:
    from desktop_agent.core.options import AgentOptions
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.session.model_doctor")

#: App setting holding the probe results: ``{"<base_url>|<model>": ProbeResult dict}``.
PROBES_KEY = "tool_call_probes"


def _key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')}|{model}"


def stored_probe(store: Store, base_url: str, model: str) -> ProbeResult | None:
    """The probe result kept for this server and model, if any."""
    table = store.get_setting(PROBES_KEY, {})
    return ProbeResult.from_dict(table.get(_key(base_url, model))) \
        if isinstance(table, dict) else None


def save_probe(store: Store, base_url: str, model: str, result: ProbeResult) -> None:
    """Keep a probe result for every conversation and process (read again, then written)."""
    table = store.get_setting(PROBES_KEY, {})
    table = dict(table) if isinstance(table, dict) else {}
    table[_key(base_url, model)] = result.to_dict()
    store.set_setting(PROBES_KEY, table)


def load_into_core(store: Store, base_url: str, model: str) -> ProbeResult | None:
    """Give the core's automatic mode the kept result (a new process knows none)."""
    if not base_url or not model:
        return None
    known = tool_call_mode.measured(base_url, model)
    if known is not None:
        return known
    result = stored_probe(store, base_url, model)
    if result is not None:
        tool_call_mode.remember_probe(base_url, model, result)
    return result


def fixed_prefix_tokens(options: AgentOptions, constrained: bool) -> tuple[int, int]:
    """Tokens of the prompt's fixed part (system prompt, tool schemas), and the schemas' share."""
    from desktop_agent.core.context.prompt_size import tools_tokens
    from desktop_agent.core.context.tokens import estimate_tokens
    from desktop_agent.core.tooling import constrained_calls

    tools = list(options.tools)
    if constrained:
        schemas = estimate_tokens(constrained_calls.instructions(tools))
    else:
        schemas = tools_tokens(tools)
    system = estimate_tokens(options.system_prompt) if options.system_prompt else 0
    return system + schemas, schemas


class ModelDoctor:
    """One conversation's doctor: notices after turns, the probe on demand and in background.

    Args:
        store: Where probe results are kept (app settings).
        emit: Reports a session event.
    """

    def __init__(self, store: Store, emit: Callable[[SessionEvent], None]) -> None:
        self._store = store
        self._emit = emit
        self._said: set[tuple[str, str, str]] = set()  # (kind, base_url, model) told
        self._background: asyncio.Task[ProbeResult] | None = None
        self._probing: tuple[str, str] | None = None  # the background probe's server and model

    def before_turn(self, options: AgentOptions) -> None:
        """The kept probe result goes to the core before it decides the turn's mode.

        A background probe still running is stopped: on a server with one slot
        the person's message would wait behind it. It runs again after this turn.
        """
        self._stop_background()
        load_into_core(self._store, options.base_url, options.model)

    def _stop_background(self) -> asyncio.Task[ProbeResult] | None:
        background, self._background = self._background, None
        if background is not None and not background.done():
            if self._probing is not None:
                cancel(*self._probing)  # the run itself, not only this wait for it
            background.cancel()
        return background

    def after_turn(self, options: AgentOptions) -> None:
        """Say what the turn showed (once per model), and probe a new model in the background."""
        if not options.tools:
            return
        mode = tool_call_mode.decided(options)
        if mode is not None and mode.template_ignores_tools:
            self._say("template_without_tools", options, (
                "This model's chat template has no place for tools: the server drops them "
                "without an error, so the model would never see them. Tool calls go through "
                "constrained decoding instead."), ())
        server = tool_call_mode.server_kind(options.base_url)
        fixed, schemas = fixed_prefix_tokens(options, bool(mode and mode.constrained))
        warning = prompt_speed.slow_prompt(
            fixed, schemas, prompt_speed.speed(options.base_url, options.model), server=server,
            tool_count=len(options.tools), constrained=bool(mode and mode.constrained))
        if warning is not None:
            self._say("slow_prompt", options, warning.sentence, warning.offers)
        if (options.constrained_tool_calls == "auto" and server in GRAMMAR_SERVERS
                and self._background is None
                and load_into_core(self._store, options.base_url, options.model) is None
                and not running(options.base_url, options.model)):
            self._probing = (options.base_url, options.model)
            self._background = asyncio.ensure_future(self.test_model(options))

    async def test_model(self, options: AgentOptions) -> ProbeResult:
        """Run the probe for the options' server and model (shared with a run under way)."""
        result = await probe_once(options.base_url, options.model, options.api_key,
                                  pool=options.connection_pool)
        if result.error is None:
            await asyncio.to_thread(save_probe, self._store, options.base_url, options.model,
                                    result)
            tool_call_mode.remember_probe(options.base_url, options.model, result)
        self._emit(ToolCallProbed(options.base_url, options.model, result,
                                  tool_call_mode.from_probe(result).reason))
        return result

    async def aclose(self) -> None:
        """Stop a background probe (the conversation is closing)."""
        task = self._stop_background()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _say(self, kind: str, options: AgentOptions, text: str,
             offers: tuple[tuple[str, str], ...]) -> None:
        said = (kind, options.base_url.rstrip("/"), options.model)
        if said in self._said:
            return
        self._said.add(said)
        log.info("%s %s: %s", options.base_url, options.model, text)
        self._emit(DoctorNotice(kind, text, offers))  # type: ignore[arg-type]


def probe_summary(settings: Mapping[str, Any], store: Store) -> ProbeResult | None:
    """The kept probe result of a conversation's server and model (for settings pages)."""
    return stored_probe(store, str(settings.get("base_url") or ""),
                        str(settings.get("model") or ""))
