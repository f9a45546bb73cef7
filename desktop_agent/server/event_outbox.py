"""Events appended and not yet taken by the writer thread, with text deltas joined.

The event log (:mod:`desktop_agent.server.event_log`) appends here on the
event loop; the writer thread (:mod:`desktop_agent.server.event_writer`)
takes what is here. While the writer waits, the loop hands it what one loop
iteration appended, at the iteration's end; while it commits, the outbox
fills, and the writer takes all of it once its commit is done.

A text or thinking delta of a conversation joins that conversation's newest
entry when it is a delta of the same type still here: pieces ready together
(one socket read) or appended while a commit was under way become one event,
so a loop that falls behind sends fewer, longer deltas instead of more rows,
frames and parses. Nothing is held back by a timer: a waiting writer takes
each loop turn's events at once, so a lone piece goes out alone. A joined
event keeps the ``created_at`` of its first piece, so any latency measured
from it counts the time that piece waited for the others.
"""

from __future__ import annotations

import json
import threading

from desktop_agent.store import NewEvent

from .event_writer import Pending, Queued

DATA_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""What ``json.dumps(data, ensure_ascii=False, default=str)`` does, without making an
encoder per call (``json.dumps`` makes one whenever an argument is not the default)."""

_Group = tuple[int, list[str]]
"""A delta's index in the outbox and the texts joined into it so far."""


def _joined(entry: Queued, texts: list[str]) -> Queued:
    """``entry`` (a text or thinking delta) carrying all of ``texts`` as one delta."""
    if not isinstance(entry, Pending):
        return entry
    data = {"text": "".join(texts)}
    new = entry.new
    return Pending(NewEvent(new.conversation_id, new.type,
                            DATA_ENCODER.encode(data), new.created_at), data)


class EventOutbox:
    """The queue between the loop's appends and the writer's commits; thread-safe.

    The lock is shared with the writer thread (and ``close``, run in a worker
    thread); it guards the entries and whether the writer waits, so that a
    writer that finds nothing and a loop that appends meanwhile never both
    think the other will hand it over.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Queued] = []
        # Per conversation: its newest entry, when a later delta of the same type may
        # still join it; and every such group here, open or closed.
        self._joinable: dict[str, _Group] = {}
        self._groups: list[_Group] = []
        self._writer_waits = True
        self._hand_over_due = False

    def join(self, conversation_id: str, event_type: str, delta: str) -> bool:
        """Join ``delta`` to the conversation's newest entry; False when none fits.

        It fits when it is a delta of the same type the writer has not taken yet.
        """
        with self._lock:
            joinable = self._joinable.get(conversation_id)
            if joinable is None:
                return False
            index, texts = joinable
            entry = self._items[index]
            if not isinstance(entry, Pending) or entry.new.type != event_type:
                return False
            texts.append(delta)
            return True

    def add(self, item: Queued, conversation_id: str, joinable: str | None) -> bool:
        """Queue ``item``; True when the caller must schedule :meth:`take_hand_over`.

        ``joinable``: the item is a text/thinking delta with this text, which
        later deltas of the same type may join.
        """
        with self._lock:
            self._items.append(item)
            if joinable is None:
                self._joinable.pop(conversation_id, None)
            else:
                group = (len(self._items) - 1, [joinable])
                self._joinable[conversation_id] = group
                self._groups.append(group)
            # A busy writer takes the outbox itself after its commit: nothing to schedule.
            due = self._writer_waits and not self._hand_over_due
            self._hand_over_due |= due
            return due

    def take_hand_over(self) -> list[Queued]:
        """At a loop iteration's end: everything queued, for a waiting writer; else []."""
        with self._lock:
            self._hand_over_due = False
            if not self._writer_waits or not self._items:
                return []  # a busy writer takes the outbox itself after its commit
            self._writer_waits = False
            items, groups = self._take()
        return _with_joined(items, groups)

    def take_for_writer(self) -> list[Queued]:
        """The writer thread, its commit done: what was queued meanwhile; [] and it waits."""
        with self._lock:
            items, groups = self._take()
            self._writer_waits = not items
        return _with_joined(items, groups)

    def take_all(self) -> list[Queued]:
        """Everything queued (closing: the writer's queue gets it whether it waits or not)."""
        with self._lock:
            items, groups = self._take()
        return _with_joined(items, groups)

    def _take(self) -> tuple[list[Queued], list[_Group]]:
        items, self._items = self._items, []
        groups, self._groups = self._groups, []
        self._joinable.clear()
        return items, groups


def _with_joined(items: list[Queued], groups: list[_Group]) -> list[Queued]:
    """``items`` with each group of joined deltas made into one event."""
    for index, texts in groups:
        if len(texts) > 1:
            items[index] = _joined(items[index], texts)
    return items
