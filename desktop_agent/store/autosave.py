"""Checkpointing a reply while it streams, so a crash loses at most a moment.

The GUI's controller (or the REST server) creates one writer per reply, feeds
it the text and thinking deltas as they arrive, and calls :meth:`finish` with
the final message. The writer saves the partial reply whenever at least
``interval`` seconds passed since the last save, so the cost is one small
write per interval whatever the token rate.

A delta that arrives just after a save and is followed by silence (the model
pauses, a tool call waits for approval) would otherwise stay unsaved until
the next delta; a shared background thread saves such a writer once its
interval is up. So ``kill -9`` loses at most the last interval of text, always.

On SQLite a save costs tens of microseconds and is made by whoever feeds the
delta that finds the interval up (the event loop, in the window and the
server). On PostgreSQL it is a few round trips to the database server, which
on a busy replica took milliseconds each, and the loop feeding 50 replies
stopped for every one (measured with ``bench/server_load.py --database``): there
every periodic save is left to the background thread. Either way a save never
holds up the deltas: the text is copied under the writer's lock and written
outside it, one save at a time per writer.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from typing import Any, Literal

from desktop_agent.store.errors import StoreClosedError
from desktop_agent.store.message_writes import UNCHECKED, _Unchecked
from desktop_agent.store.records import MessageRecord
from desktop_agent.store.store import Store

logger = logging.getLogger("desktop_agent.store.autosave")


class _DeadlineSaver:
    """One daemon thread that saves writers left unsaved past their interval.

    Waking a sleeping thread is a context switch (about half a millisecond
    of the event loop's time, measured on a server pinned to one CPU with 50
    replies streaming), so a writer's deadline wakes the thread only when it
    falls before the one the thread already sleeps until: with many replies
    streaming, nearly every deadline is later and costs nothing.
    """

    def __init__(self) -> None:
        self._due: weakref.WeakKeyDictionary[StreamingReplyWriter, float] = (
            weakref.WeakKeyDictionary()
        )
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        # When the thread next looks at the deadlines: -inf while it is awake (or
        # not yet started) and will look anyway, +inf while it waits for a notify.
        self._looks_at = -math.inf

    def schedule(self, writer: StreamingReplyWriter, at: float) -> None:
        with self._wake:
            if writer not in self._due:
                self._due[writer] = at
                if at < self._looks_at:
                    self._wake.notify()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="reply-autosave", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                ready = [w for w, at in list(self._due.items()) if at <= now]
                for writer in ready:
                    del self._due[writer]
                if not ready:
                    upcoming = min(list(self._due.values()), default=None)
                    self._looks_at = math.inf if upcoming is None else upcoming
                    self._wake.wait(None if upcoming is None else max(upcoming - now, 0.001))
                    self._looks_at = -math.inf
                    continue
            for writer in ready:  # outside the condition: saving takes the store's lock
                writer._save_if_pending()


_saver = _DeadlineSaver()


class StreamingReplyWriter:
    """Accumulates one streaming reply and saves it as it grows.

    Safe to feed from one thread while the background saver runs.

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
        expected_parent: str | Literal[_Unchecked.UNCHECKED] | None = UNCHECKED,
    ) -> None:
        self._store = store
        self._interval = interval
        self._role = role
        self._save_inline = store.engine == "sqlite"
        self._lock = threading.RLock()  # the text and the flags
        self._saving = threading.Lock()  # one save at a time, in the order of their copies
        # Pieces are joined when read (at most once per save), not per delta:
        # ``self.text += delta`` copies the whole reply each time, which made a
        # long reply quadratic on the streaming path.
        self._text_parts: list[str] = []
        self._thinking_parts: list[str] = []
        self._scheduled = False
        self.saved_chars = 0
        self._dirty = False
        self._finished = False
        self.record: MessageRecord = store.add_message(
            conversation_id,
            {"role": role, "content": ""},
            parent_id=parent_id,
            metadata=metadata,
            status="streaming",
            expected_parent=expected_parent,
        )
        self._last_save = time.monotonic()

    @property
    def text(self) -> str:
        """The reply text so far."""
        with self._lock:
            return _joined(self._text_parts)

    @property
    def thinking(self) -> str:
        """The reasoning text so far ("" when the model shows none)."""
        with self._lock:
            return _joined(self._thinking_parts)

    @property
    def message_id(self) -> str:
        """The stored message's id."""
        return self.record.id

    def append_text(self, delta: str) -> None:
        """Add streamed reply text; saves if the interval has passed."""
        with self._lock:
            self._text_parts.append(delta)
            save = self._changed()
        if save:
            self.flush()

    def append_thinking(self, delta: str) -> None:
        """Add streamed reasoning text; saves if the interval has passed."""
        with self._lock:
            self._thinking_parts.append(delta)
            save = self._changed()
        if save:
            self.flush()

    def flush(self) -> None:
        """Save the partial reply now (e.g. before a tool call blocks for approval)."""
        with self._saving:
            with self._lock:
                self._last_save = time.monotonic()
                if not self._dirty or self._finished:
                    return
                text, thinking = self.text, self.thinking
                self._dirty = False
            try:
                self._store.checkpoint_message(self.record.id, text, thinking or None)
            except BaseException:
                with self._lock:
                    self._dirty = True
                raise
            with self._lock:
                self.saved_chars = len(text)

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
        with self._lock:
            final_meta = dict(metadata or {})
            if self.thinking and "thinking" not in final_meta:
                final_meta["thinking"] = self.thinking
            final = message if message is not None else {"role": self._role, "content": self.text}
            self.record = self._store.complete_message(
                self.record.id, final, final_meta, status,
                conversation_id=self.record.conversation_id)
            self._finished = True
            self._dirty = False
            self.saved_chars = len(self.text)
            return self.record

    def _changed(self) -> bool:
        """Note a change (under the lock); True: the caller saves now, outside the lock."""
        self._dirty = True
        due = self._last_save + self._interval
        if self._save_inline and time.monotonic() >= due:
            return True
        if not self._scheduled:  # once per interval, not once per delta
            self._scheduled = True
            _saver.schedule(self, due)
        return False

    def _save_if_pending(self) -> None:
        """Called by the background saver when this writer's interval is up."""
        with self._lock:
            self._scheduled = False
            if not self._dirty or self._finished:
                return
            if time.monotonic() < self._last_save + self._interval:
                self._scheduled = True
                _saver.schedule(self, self._last_save + self._interval)
                return
        try:
            self.flush()
        except StoreClosedError:
            with self._lock:
                self._finished = True  # the app is shutting down; finish() will not come
        except Exception:
            logger.exception("could not autosave a streaming reply")


def _joined(parts: list[str]) -> str:
    """Join ``parts`` and keep the result as the only part, so the next join is cheap."""
    if len(parts) != 1:
        whole = "".join(parts)
        parts[:] = [whole]
    return parts[0] if parts else ""
