"""The status line's figures for one conversation, and the window they are measured against.

The figures (:class:`TurnFigures`) are the reply's speed while it streams,
then the server's; the context the conversation takes; and the window the
server applies to the model, which is learned three ways: the check before a
turn, a prompt the server cut, or Ollama's one-click copy of the model with a
larger window. The controller hands this part the session's events that bear
on them; the part tells each change through ``changed`` (the controller's
``figures_changed`` signal), so widgets only draw what they are given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from desktop_agent.gui.conversation.turn_figures import LiveRate, TurnFigures
from desktop_agent.session import SessionError, context_after_reply, context_when_opened

if TYPE_CHECKING:
    from desktop_agent.core.types import PromptCutBlock
    from desktop_agent.session import ContextWindowChecked, ConversationSession, UsageReported


class ContextMeter:
    """The figures of one conversation's status line (no Qt: it is told, and tells).

    Args:
        session: The conversation's session (its settings, its context estimates).
        changed: Called with :attr:`figures` each time they change.
        window_fixed: Called when the one-click fix ended: the model now used (None
            when it failed) and the problem in words (None when it worked).

    Attributes:
        figures: What the status line shows now.
    """

    def __init__(self, session: ConversationSession, changed: Callable[[TurnFigures], None],
                 window_fixed: Callable[[str | None, str | None], None]) -> None:
        self._session = session
        self._changed = changed
        self._window_fixed = window_fixed
        settings = session.settings
        self.figures = TurnFigures(model=str(settings.get("model") or ""),
                                   context_length=settings.get("context_length"))
        self._live_rate = LiveRate()
        self._applied: tuple[str, int | None, str] | None = None  # (model, window, source)
        self._cut_sent: int | None = None  # this turn's prompt was cut: about this many sent
        self._fix_task: asyncio.Future[None] | None = None

    def settings_changed(self, settings: Mapping[str, Any]) -> None:
        """The conversation's model or window setting may have changed."""
        self.figures.model = str(settings.get("model") or "")
        self._show_window(settings.get("context_length"))
        self._changed(self.figures)

    def window_checked(self, event: ContextWindowChecked) -> None:
        """The check before a turn learned the window the server applies."""
        window = event.window
        self._learned(event.model, window.applied, window.source)

    def prompt_cut(self, block: PromptCutBlock) -> None:
        """The server cut the prompt: the meter shows the window learned from it at once."""
        self._cut_sent = block.sent
        self._learned(self.figures.model, block.window, "learned from a cut prompt")

    def reply_started(self) -> None:
        """A reply begins: time spent running tools is not the model's speed."""
        self._live_rate.reset()

    def streamed_piece(self) -> None:
        """Show the speed of the reply as it streams (a few times a second)."""
        rate = self._live_rate.piece()
        if rate is not None:
            self.figures.tokens_per_second = rate
            self.figures.live = True
            self._changed(self.figures)

    def usage(self, event: UsageReported) -> None:
        """The reply ended with the server's figures."""
        usage = event.usage
        figures = self.figures
        figures.live = False
        figures.tokens_per_second = usage.tokens_per_second
        figures.time_to_first_token = usage.time_to_first_token
        figures.context_used = context_after_reply(self._session, usage)
        if self._cut_sent is not None:
            # the server's count is of what it kept: the conversation takes what was sent
            figures.context_used = self._cut_sent + (usage.completion_tokens or 0)
            self._cut_sent = None
        self._changed(figures)

    async def estimate(self) -> None:
        """Fill in "context used" for a conversation opened from the store.

        The session counts (:mod:`desktop_agent.session.branch.context_estimate`), in a
        worker thread after the window has painted; a turn's own figures win if
        one ends meanwhile.
        """
        if self.figures.context_used is not None or self._session.last_message() is None:
            return
        used = await context_when_opened(self._session)
        if used is not None and self.figures.context_used is None:
            self.figures.context_used = used
            self._changed(self.figures)

    def make_larger_window(self, tokens: int) -> None:
        """Run Ollama's one-click fix (a copy of the model with ``tokens``), once at a time."""
        if self._fix_task is None or self._fix_task.done():
            self._fix_task = asyncio.ensure_future(self._make_larger_window(tokens))

    def cancel(self) -> None:
        """Stop a fix under way (the conversation closes)."""
        if self._fix_task is not None:
            self._fix_task.cancel()

    async def _make_larger_window(self, tokens: int) -> None:
        from desktop_agent.core.errors import AgentError

        try:
            made = await self._session.make_larger_window(tokens)
        except (SessionError, AgentError) as exc:
            self._window_fixed(None, str(exc))
            return
        self._window_fixed(made, None)
        await self._show_window_of(made)

    async def _show_window_of(self, model: str) -> None:
        """Size the meter by the window Ollama now applies to ``model`` (asked, not assumed)."""
        from desktop_agent.session import context_window_for

        window = await context_window_for(self._session.settings)
        if window is None or window.applied is None or self.figures.model != model:
            return
        self._learned(model, window.applied, window.source)

    def _learned(self, model: str, applied: int | None, source: str) -> None:
        self._applied = (model, applied, source)
        self._show_window(self._session.settings.get("context_length"))
        self._changed(self.figures)

    def _show_window(self, setting: int | None) -> None:
        """The meter's window: what the server applies to the model in use, else the setting."""
        applied = self._applied
        figures = self.figures
        if applied is None or applied[0] != figures.model or applied[1] is None:
            figures.context_length, figures.context_source = setting, None
            return
        length = applied[1] if setting is None else min(setting, applied[1])
        figures.context_length, figures.context_source = length, applied[2]
