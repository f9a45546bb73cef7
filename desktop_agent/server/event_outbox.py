"""Events appended and not yet taken by the writer thread, with text deltas joined.

The event log (:mod:`desktop_agent.server.event_log`) appends here on the
event loop; the writer thread (:mod:`desktop_agent.server.event_writer`)
takes what is here. A waiting writer is woken at the end of a loop iteration
that appended (or sooner in an iteration that has appended for a while, see
:data:`desktop_agent.server.event_log.HAND_OVER_AFTER`); woken, and after each
commit, it takes everything handed over by then, in one commit (not the part of
an iteration still under way: taking that too made more, smaller commits, each
a transaction and a wake-up of the streams' followers).

A text or thinking delta of a conversation joins that conversation's newest
entry when it is a delta of the same type still here: pieces ready together
(one socket read), or appended before the writer woke or while it committed,
become one event, so a loop that falls behind sends fewer, longer deltas
instead of more rows, frames and parses. Nothing is held back by a timer: a
waiting writer is woken at the end of each loop turn that appended, so a lone
piece goes out alone. A joined
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
        # How many leading entries finished loop iterations appended (the writer's share).
        self._finished = 0

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
        """Queue ``item``; True when the caller must schedule :meth:`iteration_ended`.

        That is once per loop iteration that appends, whether the writer waits or
        not: a busy writer takes only what finished iterations appended.
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
            due = not self._hand_over_due
            self._hand_over_due = True
            return due

    def iteration_ended(self) -> bool:
        """At a loop iteration's end: what is queued is the writer's; True: wake it."""
        with self._lock:
            self._hand_over_due = False
            self._finished = len(self._items)
            if not self._writer_waits or not self._items:
                return False  # a busy writer takes it after its commit
            self._writer_waits = False
            return True

    def take_for_writer(self) -> list[Queued]:
        """The writer thread, woken or its commit done: what finished iterations queued.

        [] when that is nothing: the writer then waits to be woken. A writer woken
        late takes every iteration finished meanwhile in one commit.
        """
        with self._lock:
            if not self._finished:
                self._writer_waits = True
                return []
            items, groups = self._take(self._finished)
        return _with_joined(items, groups)

    def take_all(self) -> list[Queued]:
        """Everything queued (closing: the writer's queue gets it whether it waits or not)."""
        with self._lock:
            items, groups = self._take(len(self._items))
        return _with_joined(items, groups)

    def _take(self, count: int) -> tuple[list[Queued], list[_Group]]:
        """The first ``count`` entries and their delta groups; the lock is held.

        Their groups stop taking deltas; the rest keep theirs, renumbered.
        """
        items, self._items = self._items[:count], self._items[count:]
        taken = [group for group in self._groups if group[0] < count]
        self._groups = [(index - count, texts) for index, texts in self._groups
                        if index >= count]
        self._joinable = {cid: (index - count, texts)
                          for cid, (index, texts) in self._joinable.items() if index >= count}
        self._finished = max(0, self._finished - count)
        return items, taken


def _with_joined(items: list[Queued], groups: list[_Group]) -> list[Queued]:
    """``items`` with each group of joined deltas made into one event."""
    for index, texts in groups:
        if len(texts) > 1:
            items[index] = _joined(items[index], texts)
    return items
