"""Turning the core's streamed blocks into store writes and controller signals.

This is the half of :class:`~desktop_agent.gui.conversation_controller.ConversationController`
that runs for every block of a reply: write it through the turn's
:class:`TurnRecorder` first (so nothing shown is lost), then emit the signal
the transcript listens to, and keep the status-line figures current. It is a
mixin because the signals belong to the controller; the controller decides
when turns start and end.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from desktop_agent.session.history import model_history
from desktop_agent.session.recorder import TurnRecorder

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.store import MessageRecord

    from .turn_figures import TurnFigures

log = logging.getLogger("desktop_agent.gui.conversation")


class TurnBlocksMixin:
    """Block handling for the conversation controller (needs its signals and state)."""

    _client: Client | None
    _recorder: TurnRecorder | None
    _transcript_open: bool
    _figures: TurnFigures
    _path: list[MessageRecord]
    _closed: bool
    assistant_started: Any
    assistant_finished: Any
    text_delta: Any
    thinking_delta: Any
    tool_call: Any
    tool_result: Any
    tool_input_changed: Any
    tool_error: Any
    figures_changed: Any

    def _handle(self, item: Any, recorder: TurnRecorder) -> None:
        """Write one block to the store, then tell the widgets."""
        from desktop_agent.core.types import (
            TextBlock,
            ThinkingBlock,
            ToolResultBlock,
            ToolUseBlock,
            ToolUseError,
            Usage,
        )

        if isinstance(item, TextBlock):
            self._started(recorder.text(item.text))
            self.text_delta.emit(item.text)
        elif isinstance(item, ThinkingBlock):
            self._started(recorder.thinking(item.text))
            self.thinking_delta.emit(item.text)
        elif isinstance(item, ToolUseBlock):
            self._started(recorder.tool_call(item.id, item.name, dict(item.input)))
            self.tool_call.emit(item.id, item.name, dict(item.input),
                                self._tool_source(item.name))
        elif isinstance(item, ToolResultBlock):
            recorder.tool_result(item.tool_use_id, item.content, item.is_error, item.name,
                                 item.decision, item.ran_input)
            if item.ran_input is not None:
                # The card shows what ran, not what the model asked for.
                self.tool_input_changed.emit(item.tool_use_id, dict(item.ran_input))
            if item.tool_use_id not in recorder.errors_shown:
                self.tool_result.emit(item.tool_use_id, item.content, item.is_error)
        elif isinstance(item, ToolUseError):
            self._started(recorder.tool_error(item.error, item.tool_use_id, item.name,
                                              item.raw_data))
            self.tool_error.emit(item.error, item.tool_use_id)
        elif isinstance(item, Usage):
            self._on_usage(item, recorder)

    def _started(self, message_id: str | None) -> None:
        """A new reply was opened; the transcript shows one reply per turn."""
        if message_id is not None and not self._transcript_open:
            self._transcript_open = True
            self.assistant_started.emit(message_id)

    def _checkpoint(self) -> None:
        if self._recorder is not None:
            self._recorder.flush()

    def _end_transcript_message(self, interrupted: bool) -> None:
        if self._transcript_open:
            self._transcript_open = False
            self.assistant_finished.emit(interrupted)

    def _tool_source(self, name: str) -> str | None:
        client = self._client
        if client is None:
            return None
        found = client.options.tool_named(name)
        return found.source if found is not None else None

    # -- figures ---------------------------------------------------------------

    def _on_usage(self, usage: Any, recorder: TurnRecorder) -> None:
        self._figures.tokens_per_second = usage.tokens_per_second
        self._figures.time_to_first_token = usage.time_to_first_token
        if usage.prompt_tokens is not None and usage.completion_tokens is not None:
            self._figures.context_used = usage.prompt_tokens + usage.completion_tokens
        else:
            self._figures.context_used = self._estimate_context()
        recorder.usage({
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "time_to_first_token": usage.time_to_first_token,
            "tokens_per_second": usage.tokens_per_second,
        })
        self.figures_changed.emit(self._figures)

    async def estimate_context(self) -> None:
        """Fill in "context used" for a conversation opened from the store.

        Counting tokens loads the tokenizer, so it runs in a worker thread after
        the window has painted; a turn's own figures win if one ends meanwhile.
        """
        if self._figures.context_used is not None or not self._path:
            return
        loop = asyncio.get_running_loop()
        used = await loop.run_in_executor(None, self._estimate_context)
        if used is not None and self._figures.context_used is None and not self._closed:
            self._figures.context_used = used
            self.figures_changed.emit(self._figures)

    def _estimate_context(self) -> int | None:
        try:
            from desktop_agent.core.context import estimate_tokens

            return int(estimate_tokens(model_history(self._path)))
        except Exception as exc:  # an estimate must never break a turn
            log.debug("token estimate failed: %s", exc)
            return None
