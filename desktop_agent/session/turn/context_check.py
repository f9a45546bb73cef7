"""Before a turn: does the conversation fit the window its server applies? Say so, with the fix.

The core sizes every request by the window the server applies
(:mod:`desktop_agent.core.servers.applied_context`) and compacts the rest; a
person still needs to know when that happens, because a model that sees a
summary instead of the messages answers differently, and because Ollama cuts
an over-long prompt without a word when compaction is off. So before each
turn the session asks the server's window (an answer younger than 30 s is
reused) and counts what the next request needs whole: the system prompt with
``AGENTS.md``, the tool schemas, the history, the new message and the reply's
reserve. When that is more than the window, the front ends get the sentence
and the fix (:class:`ContextCheck`): one click on Ollama (a copy of the model
with a larger ``num_ctx``), the exact setting elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desktop_agent.core.context.prompt_size import TokenCounter, tools_tokens
from desktop_agent.core.servers.context_window import OLLAMA, ContextWindow
from desktop_agent.core.servers.window_fix import WindowFix, larger_window_fix
from desktop_agent.session.events import ContextWindowChecked

if TYPE_CHECKING:
    from desktop_agent.core.options import AgentOptions

#: Tokens kept for the reply when the settings name no ``max_tokens`` (never over a quarter
#: of the window, as the core keeps it).
REPLY_RESERVE = 1024
#: Past this share of the window, the part sent every time leaves compaction no room.
FIXED_SHARE = 0.75


@dataclass(frozen=True, slots=True)
class ContextCheck:
    """What the next request needs against the window the server applies.

    Attributes:
        model: The model the window is of.
        window: The window, its trained length and where the figure came from.
        needed: Tokens the next request needs whole: system prompt (with
            ``AGENTS.md``), tool schemas, history, the new message, the reply.
        fixed: Of those, what every request carries (system prompt and schemas).
        compaction: The conversation's compaction setting.
        fix: How to give the model a larger window; None when it fits.
        reply: Of ``needed``, what is kept for the reply (named in the warning:
            a server's refusal counts the prompt alone, and the two figures
            must not look like a contradiction).
    """

    model: str
    window: ContextWindow
    needed: int
    fixed: int
    compaction: str
    fix: WindowFix | None = None
    reply: int = 0

    @property
    def limit(self) -> int | None:
        """The window the conversation is sized by (None: unknown)."""
        return self.window.applied

    @property
    def short(self) -> bool:
        """Whether the conversation needs more than the window."""
        return self.limit is not None and self.needed > self.limit

    @property
    def warning(self) -> str | None:
        """The sentence a front end shows before sending, with the fix; None when it fits.

        Where the window's figure came from is not in it (front ends show
        ``window.source`` beside it: a tooltip, Conversation settings, a REST field).
        """
        limit = self.limit
        if limit is None or not self.short:
            return None
        server = self.window.server or "the server"
        reply = f" ({self.reply:,} of them for the reply)" if self.reply else ""
        parts = [f"This conversation needs about {self.needed:,} tokens{reply}; {server} "
                 f"runs {self.model} with a {limit:,}-token window."]
        if self.fixed > limit * FIXED_SHARE:
            parts.append(f"The system prompt, AGENTS.md and tool schemas alone take "
                         f"{self.fixed:,}: compaction cannot make room.")
        elif self.compaction == "off" and self.window.server == OLLAMA:
            parts.append("With compaction off, Ollama cuts the oldest messages without "
                         "saying so.")
        elif self.compaction == "off":
            parts.append("With compaction off, the server will refuse the request.")
        else:
            parts.append("Older messages are summarised to fit: the model does not see "
                         "them whole.")
        if self.fix is not None:
            parts.append(self.fix.text)
        return " ".join(parts)

    def event(self) -> ContextWindowChecked:
        """The check as the session reports it to front ends."""
        return ContextWindowChecked(self.model, self.window, self.needed, self.fixed,
                                    self.warning, self.fix, self.reply)


class ContextChecker:
    """Checks a conversation against its server's window before each turn.

    Keeps one token counter for the conversation, so a turn counts only the
    messages it has not seen before.
    """

    def __init__(self) -> None:
        self._counter = TokenCounter()

    async def check(self, options: AgentOptions, history: Sequence[dict[str, Any]],
                    prompt: Any, earlier: int = 0) -> ContextCheck:
        """The check for the request a turn with ``options`` is about to send; never raises.

        ``earlier``: the estimated tokens of messages before ``history`` that the
        turn did not read (a compaction covers them), so the figure is still
        what the conversation needs whole.
        """
        # the asking module loads the openai SDK: not before the window has painted
        from desktop_agent.core.servers.applied_context import applied_context

        window = await applied_context(options.base_url, options.model, options.api_key,
                                       timeout=min(options.timeout, 3.0),
                                       pool=options.connection_pool)
        if options.context_length is not None and (
                window.applied is None or options.context_length < window.applied):
            window = window.learned(options.context_length,
                                    "the context length in the conversation's settings")
        system: list[dict[str, Any]] = [{"role": "system", "content": options.system_prompt}] \
            if options.system_prompt else []
        schemas = tools_tokens(options.tools)
        fixed = self._counter.messages(system) + schemas
        messages = [*system, *history] + ([{"role": "user", "content": prompt}] if prompt
                                           else [])
        reserve = options.max_tokens or REPLY_RESERVE
        if window.applied is not None:  # as the core keeps it: at most a quarter
            reserve = min(reserve, window.applied // 4)
        needed = self._counter.messages(messages) + schemas + reserve + earlier
        check = ContextCheck(options.model, window, needed, fixed, options.compaction,
                             reply=reserve)
        if check.short:
            fix = larger_window_fix(window, options.model, needed)
            check = ContextCheck(options.model, window, needed, fixed, options.compaction, fix,
                                 reply=reserve)
        return check


async def context_window_for(settings: Mapping[str, Any]) -> ContextWindow | None:
    """The window the conversation's server applies to its model; None without a model.

    For Conversation settings and the REST model info: the figure and where it
    came from. Asks the server at most every 30 s (as a turn does).
    """
    import asyncio

    from desktop_agent.core.servers.applied_context import applied_context
    from desktop_agent.session.settings import defaults
    from desktop_agent.session.turn.options import MissingApiKeyError, stored_api_key

    base_url, model = str(settings.get("base_url") or ""), str(settings.get("model") or "")
    if not base_url or not model:
        return None
    try:
        api_key = await asyncio.to_thread(stored_api_key, settings)
    except MissingApiKeyError:
        api_key = defaults.NO_API_KEY
    return await applied_context(base_url, model, api_key)
