"""The in-memory end of one conversation's event log, capped by count and by size.

Kept apart from the log (:mod:`.event_log`), which holds one per conversation in
use: followers read recent events from here, older ones from the store.
"""

from __future__ import annotations

import time

from .event_record import Event

MEMORY_TAIL = 2000
"""Events per conversation kept in memory (at most twice this before trimming)."""

MEMORY_TAIL_BYTES = 256 * 1024
"""Characters of event data per conversation kept in memory (at most twice this).

The count alone let a conversation keep megabytes: 2,000 events of a long
``bash`` output or a large diff each. A follower that asks for older events
reads them from the store, as it does for events beyond :data:`MEMORY_TAIL`.
"""


class EventTail:
    """The in-memory end of one conversation's log: events ``base`` .. ``base+len-1``."""

    __slots__ = ("base", "events", "size", "touched")

    def __init__(self, base: int) -> None:
        self.base = base
        self.events: list[Event] = []
        self.size = 0  # characters of data_json held
        self.touched = time.monotonic()

    def add(self, event: Event) -> None:
        """Append the next event; trim the oldest once over twice a cap (count or size).

        Trimming at twice the cap, down to the cap, keeps the cost of cutting the
        list's head to once per cap's worth of events.
        """
        self.events.append(event)
        self.size += len(event.data_json)
        if len(self.events) <= 2 * MEMORY_TAIL and self.size <= 2 * MEMORY_TAIL_BYTES:
            return
        cut = max(0, len(self.events) - MEMORY_TAIL)
        size = self.size - sum(len(old.data_json) for old in self.events[:cut])
        while size > MEMORY_TAIL_BYTES and cut < len(self.events):
            size -= len(self.events[cut].data_json)
            cut += 1
        del self.events[:cut]
        self.base += cut
        self.size = size

    def restart(self, base: int) -> None:
        """Hold nothing, the next event being ``base`` (another process wrote in between)."""
        self.events.clear()
        self.size = 0
        self.base = base

    @property
    def end(self) -> int:
        """One past the newest id held."""
        return self.base + len(self.events)
