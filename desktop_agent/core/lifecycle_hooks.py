"""claude-agent-sdk's lifecycle hooks as a Client runs them: one part, one job.

SessionStart and SessionEnd around a Client's life, Stop (a subagent's: SubagentStop)
when a reply would end the turn, PreCompact before the context keeper compacts. The
Client owns the turn; this part owns what the hooks are told and how often a Stop hook
may send the model on in one turn.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from desktop_agent.core.options import AgentOptions
from desktop_agent.core.tooling.hooks import (
    HOOK_PRE_COMPACT,
    HOOK_SESSION_END,
    HOOK_SESSION_START,
    HOOK_STOP,
    HOOK_SUBAGENT_STOP,
    PreCompactEvent,
    SessionEndEvent,
    SessionStartEvent,
    StopEvent,
    SubagentStopEvent,
    run_hooks,
    stamped,
    tell_hooks,
)

log = logging.getLogger("desktop_agent.core")


class LifecycleHooks:
    """The lifecycle hooks of one Client.

    Args:
        options: The Client's current options (read at each event: they may switch).
        stored_session_id: The id of the stored conversation the Client continues, if any.
    """

    def __init__(self, options: Callable[[], AgentOptions],
                 stored_session_id: Callable[[], str | None]) -> None:
        self._options = options
        self._stored_session_id = stored_session_id
        self._started = False  # SessionStart told (SessionEnd is told on close)
        self._stop_blocks = 0  # this turn's Stop hook refusals

    def settings(self) -> AgentOptions:
        """The options hooks are stamped from, with the session's id when they name none."""
        options = self._options()
        if options.session_id is None:
            stored_id = self._stored_session_id()
            if stored_id is not None:
                return dataclasses.replace(options, session_id=stored_id)
        return options

    async def start(self, resumed: bool) -> None:
        """Tell SessionStart once (never for a subagent)."""
        options = self._options()
        if self._started or options.agent_name is not None:
            return
        self._started = True
        await tell_hooks(options.hooks, HOOK_SESSION_START, stamped(
            SessionStartEvent("resume" if resumed else "startup"), self.settings()))

    async def end(self) -> None:
        """Tell SessionEnd, if SessionStart was told."""
        if self._started:
            self._started = False
            await tell_hooks(self._options().hooks, HOOK_SESSION_END,
                             stamped(SessionEndEvent(), self.settings()))

    def new_turn(self) -> None:
        self._stop_blocks = 0

    async def stop_refusal(self, answer: str, history: list[dict[str, Any]],
                           requests: int) -> str | None:
        """Run the Stop (a subagent's: SubagentStop) hooks; the reason when one refuses.

        The reason is what the model is told before it answers again. The turn's
        request limits still hold, and ``stop_hook_active`` tells a hook that it
        already refused once in this turn.
        """
        options = self._options()
        settings = self.settings()
        active = self._stop_blocks > 0
        if options.agent_name is not None:
            decision = await run_hooks(options.hooks, HOOK_SUBAGENT_STOP, stamped(
                SubagentStopEvent(options.agent_name, options.agent_id or "", active, answer,
                                  history), settings))
        else:
            decision = await run_hooks(options.hooks, HOOK_STOP, stamped(
                StopEvent(active, answer, history), settings))
        if decision is None or decision.continue_:
            return None
        if self._stop_blocks >= max(1, options.max_tool_iterations) or (
                options.max_turns is not None and requests >= options.max_turns):
            log.info("a Stop hook refused again; the turn ends at its limit")
            return None
        self._stop_blocks += 1
        return decision.reason or "A hook asked you to continue."

    async def pre_compact(self, messages: int, tokens: int) -> None:
        """The context keeper is about to compact: tell the PreCompact hooks."""
        await tell_hooks(self._options().hooks, HOOK_PRE_COMPACT, stamped(PreCompactEvent(
            "auto", None, messages, tokens), self.settings()))
