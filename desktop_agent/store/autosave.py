"""Checkpointing a reply while it streams, so a crash loses at most a moment.

The GUI's controller (or the REST server) creates one writer per reply, feeds
it the text and thinking deltas as they arrive, and calls :meth:`finish` with
the final message. The writer saves the partial reply whenever at least
``interval`` seconds passed since the last save, so the cost is one small
write per interval whatever the token rate, and ``kill -9`` loses at most the
last interval of text.
"""

from __future__ import annotations

import time
from typing import Any

from desktop_agent.store.records import MessageRecord
from desktop_agent.store.store import Store


class StreamingReplyWriter:
    """Accumulates one streaming reply and saves it as it grows.

    Attributes:
        record: The stored message (status "streaming" until finished).
        text: The reply text so far.
        thinking: The reasoning text so far ("" when the model shows none).
        saved_chars: How much of ``text`` is on disk (for a "saved" indicator).
    """

    def __init__(
        self,
        store: Store,
        conversation_id: str,
        *,
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        interval: float = 0.5,
        role: str = "assistant",
    ) -> None:
        self._store = store
        self._interval = interval
        self._role = role
        self.text = ""
        self.thinking = ""
        self.saved_chars = 0
        self._dirty = False
        self._finished = False
        self.record: MessageRecord = store.add_message(
            conversation_id,
            {"role": role, "content": ""},
            parent_id=parent_id,
            metadata=metadata,
            status="streaming",
        )
        self._last_save = time.monotonic()

    @property
    def message_id(self) -> str:
        """The stored message's id."""
        return self.record.id

    def append_text(self, delta: str) -> None:
        """Add streamed reply text; saves if the interval has passed."""
        self.text += delta
        self._changed()

    def append_thinking(self, delta: str) -> None:
        """Add streamed reasoning text; saves if the interval has passed."""
        self.thinking += delta
        self._changed()

    def flush(self) -> None:
        """Save the partial reply now (e.g. before a tool call blocks for approval)."""
        if self._dirty and not self._finished:
            self._store.checkpoint_message(self.record.id, self.text, self.thinking or None)
            self._dirty = False
            self.saved_chars = len(self.text)
        self._last_save = time.monotonic()

    def finish(
        self,
        message: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        status: str = "complete",
    ) -> MessageRecord:
        """Write the final reply (by default the accumulated text) and stop saving.

        Args:
            message: The final OpenAI-format message (e.g. with ``tool_calls``);
                default ``{"role": ..., "content": <accumulated text>}``.
            metadata: Merged into the stored metadata (usage, model, approvals).
                The accumulated thinking is added as ``thinking`` unless given.
            status: ``"complete"``, or ``"interrupted"`` when the person pressed
                Stop, or ``"error"`` when the stream failed.
        """
        final_meta = dict(metadata or {})
        if self.thinking and "thinking" not in final_meta:
            final_meta["thinking"] = self.thinking
        final = message if message is not None else {"role": self._role, "content": self.text}
        self.record = self._store.complete_message(self.record.id, final, final_meta, status)
        self._finished = True
        self.saved_chars = len(self.text)
        return self.record

    def _changed(self) -> None:
        self._dirty = True
        if time.monotonic() - self._last_save >= self._interval:
            self.flush()
