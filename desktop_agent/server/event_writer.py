"""The thread that writes the event log to the store, many events per transaction.

A commit, not a row, is what an SQLite write costs, so this one thread
inserts many events in one transaction (:meth:`Store.append_events`), where
the database gives each event its id. While it waits, the event loop wakes
it at the end of an iteration that appended events (one wake-up per
iteration, not per text delta); woken, and again once each commit is done,
the thread takes what the loop iterations finished by then appended itself
(``take_more``), and waits again only when that was nothing. Under load the
batches grow by themselves, and text deltas appended during a commit can
still join (see :mod:`desktop_agent.server.event_log`); when idle a single
event is written at once, so no timer adds latency.

What was committed goes back to the event loop through ``on_committed``,
which makes the events readable there and writes them to the streams
waiting for them: :meth:`EventWriter.deliver` runs it, scheduled with
``loop.call_soon_threadsafe`` after each commit, or sooner when the loop
calls it itself between two steps (the event log does at each append: a
commit that waited for the callback's turn behind a burst of the replies'
steps waited with every event in it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from desktop_agent.core.wire.retry import RetryPolicy
from desktop_agent.store import NewEvent, Store, StoreClosedError, StoredEvent

from .thread_scheduling import defer_to_event_loop

log = logging.getLogger("desktop_agent.server.events")

T = TypeVar("T")

MAX_BATCH = 5000
"""Events written in one transaction at most."""

WRITE_RETRY = RetryPolicy(max_retries=4, initial_delay=0.05, max_delay=0.8, jitter=False)
"""Five tries per transaction, 0.05 to 0.4 s apart (0.75 s in all), then the events are dropped.

Long enough to outlast a lock another process holds briefly; short enough
that a full disk does not stall every event behind it for long. No jitter:
this thread is the only writer of its process, nobody to spread out from."""


@dataclass(frozen=True, slots=True)
class Pending:
    """An event queued for writing, with its decoded data (so it is never decoded back)."""

    new: NewEvent
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Forget:
    """Delete a conversation's events (ordered with the inserts queued before it)."""

    conversation_id: str


@dataclass(frozen=True, slots=True)
class PruneLiveOutput:
    """Delete a conversation's live output so far (ordered with the inserts queued before it).

    The events table's retention rule (see
    :func:`desktop_agent.store.event_table.prune_live_output`).
    """

    conversation_id: str


Queued = Pending | Forget | PruneLiveOutput
"""What the event loop hands this thread."""

Committed = Callable[[list[tuple[StoredEvent, dict[str, Any]]], list[str]], None]
"""``on_committed(written, others)``: runs on the loop after each batch, in order; ``others``
names the conversation of each queued item that wrote no event (a deletion, a
pruning, or an event dropped after the disk failed), so waiters can count them done."""


class EventWriter(threading.Thread):
    """Drains the queue into the store in batches; see the module docstring."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop,
                 on_committed: Committed, take_more: Callable[[], list[Queued]]) -> None:
        super().__init__(name="event-log-writer", daemon=True)
        self._store = store
        self._loop = loop
        self._on_committed = on_committed
        self._take_more = take_more
        self.queue: queue.SimpleQueue[list[Queued] | None] = queue.SimpleQueue()
        """Wake-ups: [] (take the outbox), events to write as they are (closing), None: stop."""
        self._done: deque[tuple[list[tuple[StoredEvent, dict[str, Any]]], list[str]]] = deque()

    @property
    def has_committed(self) -> bool:
        """A commit is done whose ``on_committed`` has not run yet (read on the loop)."""
        return bool(self._done)

    def deliver(self) -> None:
        """On the loop: run ``on_committed`` for every commit done so far, oldest first."""
        done = self._done
        while done:
            written, others = done.popleft()
            self._on_committed(written, others)

    def run(self) -> None:
        defer_to_event_loop()  # see thread_scheduling
        stop = False
        while not stop:
            batch: list[Queued] = []
            items = self.queue.get()
            while items is not None:
                batch += items
                if len(batch) >= MAX_BATCH:
                    break
                try:
                    items = self.queue.get_nowait()
                except queue.Empty:
                    break
            stop = items is None
            if not stop:  # woken by a hand-over: the events are the outbox's
                batch += self._take_more()
            while batch:
                self._write(batch)
                batch = [] if stop else self._take_more()

    def _write(self, batch: list[Queued]) -> None:
        written: list[tuple[StoredEvent, dict[str, Any]]] = []
        others: list[str] = []
        run: list[Pending] = []
        for item in [*batch, None]:
            if isinstance(item, Pending):
                run.append(item)
                continue
            if run:
                stored = self._insert(run)
                if stored is None:
                    others += [p.new.conversation_id for p in run]
                else:
                    written += zip(stored, (p.data for p in run), strict=True)
                run = []
            if isinstance(item, Forget):
                self._retrying(functools.partial(self._store.delete_events,
                                                 item.conversation_id))
                others.append(item.conversation_id)
            elif isinstance(item, PruneLiveOutput):
                self._retrying(functools.partial(self._store.prune_live_output,
                                                 item.conversation_id))
                others.append(item.conversation_id)
        self._done.append((written, others))
        # RuntimeError: the loop closed first (shutdown), so nobody is reading.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self.deliver)

    def _insert(self, run: list[Pending]) -> list[StoredEvent] | None:
        events = [p.new for p in run]
        return self._retrying(lambda: self._store.append_events(events))

    @staticmethod
    def _retrying(action: Callable[[], T]) -> T | None:
        retries = WRITE_RETRY.begin()
        while True:
            try:
                return action()
            except StoreClosedError:
                log.error("dropped events queued after the store was closed")
                return None
            except Exception as exc:  # the store's errors: disk full, locked too long
                log.warning("writing events failed (attempt %d): %s", retries.retries + 1,
                            exc, exc_info=True)
            wait = retries.next_delay()
            if wait is None:
                log.error("dropped events that could not be written to disk")
                return None
            time.sleep(wait)  # this thread's own: the event loop goes on meanwhile
