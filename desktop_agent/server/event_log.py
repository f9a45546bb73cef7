"""Per-conversation append-only event log with ids that only go up.

Every event a conversation produces (text deltas, tool calls, approvals,
results, errors, usage, state changes) is appended here once and read by
everyone else: the events route pages through it, SSE streams follow it, and the
callback dispatcher posts it. Because readers pull by id (``after=N``) instead
of being pushed copies, a reader that reconnects with ``Last-Event-ID`` gets
exactly the events after the one it saw: none lost, none twice.

Storage: the store's ``events`` table (a versioned migration, see
:mod:`desktop_agent.store.schema`). Appends queue to one writer thread that
inserts everything queued in one transaction, where the database gives each
event its id (:mod:`desktop_agent.server.event_writer`): two ``serve``
processes on one data folder interleave their events and lose none. An event
becomes readable once committed, normally within a millisecond; a reader that
pages a conversation first waits for the events queued before it asked. The
commit's callback writes the new events to the SSE streams waiting for them
itself (:mod:`desktop_agent.server.live_stream`), and runs at the loop's next
append when one comes before its scheduled turn: under load an event's time
in the server was mostly its waits behind the loop's queue of reply steps,
first for the writer, then for the callback, then for the stream's own step.

Text and reasoning deltas of one conversation appended one after another,
with nothing else of that conversation between them, become one event (their
texts joined) when they wait for the writer together: appended in the same
turn of the event loop, or while the writer was still committing what came
before (:mod:`desktop_agent.server.event_outbox`). Under load the log then
sends fewer, longer deltas rather than falling behind; no timer holds a piece
back, and a joined event keeps its first piece's ``created_at``.
Concatenating the ``text`` of the ``text`` events gives the same reply either
way.

Memory keeps the recent tail of each conversation read or written lately;
older events, and events another process wrote, are read from the store. On
PostgreSQL (several replicas on one database) the store reports each commit of
another replica's events as it happens (LISTEN/NOTIFY,
:meth:`EventLog.watch_other_processes`); the log reads the new events of every
conversation followed here in one query, adds them to the tails and then wakes
the followers, who find them in memory. (Each follower reading the table for
itself was one query and one worker-thread hand-off per follower per commit:
with 50 streams per replica, measured with ``bench/server_load.py
--database``, those reads queued behind each other for hundreds of
milliseconds.) On SQLite, and as a safety net on PostgreSQL, a follower
waiting for news polls the table now and then, so a stream served by one
process also shows what another process appended. Idle conversations' tails
are dropped (:meth:`EventLog.evict_idle`), and a conversation's tail when its
next turn starts (:meth:`EventLog.prune_live_output`, the retention rule).

All methods except the writer's internals run on the server's event loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from desktop_agent.store import (
    DatabaseAccessError,
    NewEvent,
    Store,
    StoreClosedError,
    StoredEvent,
)

from .event_outbox import DATA_ENCODER, EventOutbox
from .event_record import Event
from .event_tail import EventTail
from .event_writer import EventWriter, Forget, Pending, PruneLiveOutput, Queued
from .live_stream import LiveFollower, LiveFollowers
from .thread_scheduling import let_woken_thread_run

log = logging.getLogger("desktop_agent.server.events")

DECODED_KEPT_BELOW = 4096
"""Events whose JSON is longer keep only the JSON once the listeners had them:
SSE sends the JSON, and the events route decodes the rare large one again."""

MERGED_TYPES = frozenset({"text", "thinking"})
"""Event types whose consecutive deltas, appended in one loop turn, become one event."""

FETCH_LIMIT = 5000
"""Events read at most per query for other processes' commits (the rest: by the followers)."""

POLL_SECONDS = 0.5
"""How often a waiting follower checks the table for events another process wrote."""

HAND_OVER_AFTER = 0.0005
"""A loop iteration that has been appending this long (seconds) hands the writer
what it appended so far without waiting for its end.

Under load an iteration runs the steps of many replies whose pieces arrived
together (tens of milliseconds' worth with 50 streams while turns start);
the events of its first steps would otherwise wait for all of them before
their commit even began. Shorter makes more, smaller commits (0.5 ms against
1 ms: the SSE frame built p50 0.8 against 1.1-1.2 ms after the append, p99
5.6-5.9 against 7.4-14.0 ms, in ``bench/server_load.py --stages`` pairs)."""

PUSHED_POLL_SECONDS = 5.0
"""The same check when the store pushes other processes' commits: only a safety net."""


@dataclass
class _Progress:
    """Events of one conversation queued for the writer and not yet committed."""

    queued: int = 0
    done: int = 0
    waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)


Listener = Callable[[Event], None]


def _settle(future: asyncio.Future[bool], woken_by_commit: bool) -> None:
    if not future.done():
        future.set_result(woken_by_commit)


class EventLog:
    """Append, page through and follow conversation events.

    Attributes:
        listeners: Called with every committed event, on the loop; used by the
            callback dispatcher. Must not block.
        live: The SSE streams each commit writes its events to (see
            :mod:`desktop_agent.server.live_stream`); a stream's task adds its
            follower here and waits in :meth:`wait_live`.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._last_ids: dict[str, int] = {}
        self._tails: dict[str, EventTail] = {}
        # Per conversation: followers waiting in wait_beyond, each with its own future
        # (True: woken by a commit; False: its poll timer ran out).
        self._waiters: dict[str, list[asyncio.Future[bool]]] = {}
        self._progress: dict[str, _Progress] = {}
        self._writer: EventWriter | None = None
        # Appended and not yet taken by the writer (text deltas joined there).
        self._outbox = EventOutbox()
        self._closed = False
        self._first_unhanded = 0.0
        self._stop_watching: Callable[[], None] | None = None
        # Other processes' commits heard and not yet read: conversation -> newest id;
        # and the task reading them (one at a time, so commits heard meanwhile
        # are read together by its next query).
        self._heard: dict[str, int] = {}
        self._fetching: asyncio.Task[None] | None = None
        self.poll_seconds = POLL_SECONDS
        self.listeners: list[Listener] = []
        self.live = LiveFollowers()

    async def watch_other_processes(self) -> None:
        """Wake followers as soon as another process commits events, where the store can tell.

        On PostgreSQL the store's listener thread reports each commit; the report
        is handed to the loop. On SQLite there is nothing to watch and followers
        keep polling every :data:`POLL_SECONDS`.
        """
        loop = asyncio.get_running_loop()

        def on_commit(newest: dict[str, int],
                      carried: list[StoredEvent]) -> None:  # the store's thread
            # Only conversations followed or held here; a commit naming none of them
            # does not wake the loop at all (with three replicas, about half of what
            # each hears concerns streams served elsewhere). The same test as
            # committed_elsewhere's, made early: a follower that starts meanwhile
            # reads the store first, and its poll is the safety net either way.
            waiters, live, held = self._waiters, self.live, self._last_ids
            wanted = {cid: event_id for cid, event_id in newest.items()
                      if cid in waiters or cid in live or cid in held}
            if not wanted:
                return
            if len(wanted) < len(newest):
                carried = [stored for stored in carried if stored.conversation_id in wanted]
            loop.call_soon_threadsafe(self.committed_elsewhere, wanted, carried)

        self._stop_watching = await asyncio.to_thread(self._store.watch_events, on_commit)
        if self._stop_watching is not None:
            self.poll_seconds = PUSHED_POLL_SECONDS

    def committed_elsewhere(self, newest: dict[str, int],
                            carried: Iterable[StoredEvent] = ()) -> None:
        """Other processes committed events up to these ids (``{conversation: id}``).

        For conversations followed or held here, the events that came with the
        news (``carried``, in order) join the tails at once when they continue
        them; whatever is still missing is read (one query for all heard
        meanwhile). Followers are woken as their conversation moves.
        """
        moved: set[str] = set()
        for stored in carried:
            cid = stored.conversation_id
            if stored.id == self._last_ids.get(cid, 0) + 1 and (
                    self._followed(cid) or cid in self._last_ids):
                self._remember_from_elsewhere(Event.from_stored(stored))
                moved.add(cid)
        for conversation_id, event_id in newest.items():
            if not self._followed(conversation_id) and conversation_id not in self._last_ids:
                continue  # nobody here follows it; a later reader reads the store
            if event_id > max(self._last_ids.get(conversation_id, 0),
                              self._heard.get(conversation_id, 0)):
                self._heard[conversation_id] = event_id
        for conversation_id in moved:
            if conversation_id not in self._heard:
                self._wake(conversation_id)
        if self._heard and self._fetching is None:
            self._fetching = asyncio.get_running_loop().create_task(
                self._fetch_heard(), name="event-log-fetch")

    async def _fetch_heard(self) -> None:
        """Read the events heard of, into the tails, and wake their followers."""
        try:
            while self._heard:
                heard, self._heard = self._heard, {}
                positions = {cid: self._last_ids.get(cid, 0) for cid in heard}
                try:
                    found = await asyncio.to_thread(self._store.read_events_after, positions,
                                                    FETCH_LIMIT)
                except StoreClosedError:  # shutting down: the followers are ending too
                    found = {}
                except DatabaseAccessError as exc:  # the followers read the store themselves
                    log.warning("reading other processes' events failed: %s", exc)
                    found = {}
                for cid, event_id in heard.items():
                    for stored in found.get(cid, ()):
                        if stored.id > self._last_ids.get(cid, 0):
                            self._remember_from_elsewhere(Event.from_stored(stored))
                    if event_id > self._last_ids.get(cid, 0):
                        self._last_ids[cid] = event_id
                    self._wake(cid)
        finally:
            self._fetching = None

    def stored_conversations(self) -> Iterable[str]:
        """Conversations that have events on disk (to prune deleted ones); blocking."""
        return self._store.event_conversations()

    def last_id(self, conversation_id: str) -> int:
        """The newest event id this process knows of (0 when none)."""
        return self._last_ids.get(conversation_id, 0)

    @property
    def memory_conversations(self) -> int:
        """Conversations whose tail is held in memory (for load figures)."""
        return len(self._tails)

    # -- writing ---------------------------------------------------------------------------
    def append(self, conversation_id: str, event_type: str, data: dict[str, Any]) -> None:
        """Queue an event; readers and listeners see it once committed (about a millisecond)."""
        if self._closed:
            raise RuntimeError("event log is closed")
        delta = data.get("text") if event_type in MERGED_TYPES and len(data) == 1 else None
        if isinstance(delta, str) and self._outbox.join(conversation_id, event_type, delta):
            return
        data_json = DATA_ENCODER.encode(data)
        progress = self._progress.get(conversation_id)
        if progress is None:
            progress = self._progress[conversation_id] = _Progress()
        progress.queued += 1
        self._send(Pending(NewEvent(conversation_id, event_type, data_json, time.time()), data),
                   joinable=delta if isinstance(delta, str) else None)

    def _send(self, item: Queued, joinable: str | None = None) -> None:
        """Queue ``item`` for the writer (see :mod:`desktop_agent.server.event_outbox`).

        ``joinable``: the item is a text/thinking delta with this text, which
        deltas of the same type appended right after it may join.
        """
        if self._writer is None:
            self._writer = EventWriter(self._store, asyncio.get_running_loop(), self._committed,
                                       self._outbox.take_for_writer)
            self._writer.start()
        elif self._writer.has_committed:  # between two steps: the commit need not queue
            self._writer.deliver()
        cid = item.new.conversation_id if isinstance(item, Pending) else item.conversation_id
        if self._outbox.add(item, cid, joinable):  # the first since the last hand-over
            self._first_unhanded = time.monotonic()
            asyncio.get_running_loop().call_soon(self._hand_over)
        elif time.monotonic() - self._first_unhanded > HAND_OVER_AFTER:
            self._hand_over()  # a long burst: the writer need not wait for its end

    def _hand_over(self) -> None:
        """Hand a waiting writer what was queued (see the outbox), and the CPU with it.

        Runs at the end of a loop iteration that appended, or sooner in one
        that has appended for :data:`HAND_OVER_AFTER`.
        """
        if self._outbox.iteration_ended() and self._writer is not None:
            self._writer.queue.put([])  # wake up: the writer takes the events itself
            let_woken_thread_run()

    def _committed(self, written: list[tuple[StoredEvent, dict[str, Any]]],
                   others: list[str]) -> None:
        woken: set[str] = set()
        for stored, data in written:
            event = Event.from_stored(stored, data)
            cid = event.conversation_id
            woken.add(cid)
            self._remember(event)
            for listener in self.listeners:
                try:
                    listener(event)
                except Exception:
                    log.exception("event listener failed")
            if len(event.data_json) > DECODED_KEPT_BELOW:
                event.drop_decoded()
        for cid in woken:
            self.live.push(cid, self._last_ids.get(cid, 0),
                           functools.partial(self._held_after, cid))
            self._wake(cid, live=False)
        counts: dict[str, int] = {}
        for stored, _ in written:
            counts[stored.conversation_id] = counts.get(stored.conversation_id, 0) + 1
        for cid in others:
            counts[cid] = counts.get(cid, 0) + 1
        for cid, count in counts.items():
            self._advance(cid, count)

    def _held_after(self, conversation_id: str, after: int) -> list[Event] | None:
        """The committed events after ``after`` held in memory; None when the tail lacks some."""
        tail = self._tails.get(conversation_id)
        if tail is None or not tail.base <= after + 1 <= tail.end:
            return None
        start = after + 1 - tail.base
        return tail.events[start:start + FETCH_LIMIT]

    def _remember_from_elsewhere(self, event: Event) -> None:
        """Hold an event another process committed, as :meth:`_remember` does.

        A turn that starts there has pruned the conversation's live output first
        (:meth:`prune_live_output`, committed before this event): the tail held
        here starts afresh too, so this process's readers see what the table says.
        """
        if event.type == "state" and event.data.get("state") == "running":
            tail = self._tails.get(event.conversation_id)
            if tail is not None:
                tail.restart(event.id)
        self._remember(event)

    def _remember(self, event: Event) -> None:
        cid = event.conversation_id
        if event.id > self._last_ids.get(cid, 0):
            self._last_ids[cid] = event.id
        tail = self._tails.get(cid)
        if tail is None:
            tail = self._tails[cid] = EventTail(event.id)
        elif tail.end != event.id:  # another process wrote in between: start afresh
            tail.restart(event.id)
        tail.add(event)  # the oldest it drops are on disk already
        tail.touched = time.monotonic()

    def _advance(self, conversation_id: str, count: int) -> None:
        progress = self._progress.get(conversation_id)
        if progress is None:
            return
        progress.done += count
        still: list[tuple[int, asyncio.Future[None]]] = []
        for target, future in progress.waiters:
            if target <= progress.done:
                if not future.done():
                    future.set_result(None)
            else:
                still.append((target, future))
        progress.waiters = still
        if progress.done >= progress.queued and not still:
            del self._progress[conversation_id]

    async def _flushed(self, conversation_id: str) -> None:
        """Wait until the events queued for this conversation so far are committed."""
        progress = self._progress.get(conversation_id)
        if progress is None or progress.done >= progress.queued:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        progress.waiters.append((progress.queued, future))
        await future

    # -- reading ---------------------------------------------------------------------------
    async def _newest(self, conversation_id: str, refresh: bool) -> int:
        known = self._last_ids.get(conversation_id)
        if known is None or refresh:
            stored = await asyncio.to_thread(self._store.last_event_id, conversation_id)
            known = max(known or 0, stored, self._last_ids.get(conversation_id, 0))
            if known:
                self._last_ids[conversation_id] = known
        return known

    async def page(
        self, conversation_id: str, after: int = 0, limit: int = 100,
        types: frozenset[str] | None = None, *, refresh: bool = True,
    ) -> tuple[list[Event], int, bool]:
        """Events with id > ``after``, oldest first.

        Args:
            conversation_id: The conversation.
            after: Return events with a larger id.
            limit: At most this many events.
            types: Only events of these types (None: all).
            refresh: Ask the table for the newest id (events another process
                wrote); a follower that polls in :meth:`wait_beyond` passes False.

        Returns:
            (events, next_after, has_more): ``next_after`` is the last id
            examined, so filtered pages still advance.
        """
        after = max(0, after)
        if not refresh and types is None:
            held = self._page_in_memory(conversation_id, after, limit)
            if held is not None:
                return held
        await self._flushed(conversation_id)
        last = await self._newest(conversation_id, refresh)
        found: list[Event] = []
        cursor = after
        while len(found) < limit and cursor < last:
            batch = await self._read(conversation_id, cursor, max(limit, 200))
            if not batch:
                break
            for event in batch:
                cursor = event.id
                if types is None or event.type in types:
                    found.append(event)
                    if len(found) >= limit:
                        break
        return found, cursor, cursor < self.last_id(conversation_id)

    def _page_in_memory(self, conversation_id: str, after: int,
                        limit: int) -> tuple[list[Event], int, bool] | None:
        """:meth:`page` answered from the tail without waiting, or None when it cannot be.

        The case of a live stream: nothing of the conversation waits to be written
        and the tail holds every event after ``after``. It is most of what an SSE
        follower asks, once per event it sends, and costs no coroutine.
        """
        progress = self._progress.get(conversation_id)
        if progress is not None and progress.done < progress.queued:
            return None
        last = self._last_ids.get(conversation_id)
        if last is None:
            return None
        if after >= last:
            return [], after, False
        tail = self._tails.get(conversation_id)
        if tail is None or tail.end != last + 1 or not tail.base <= after + 1:
            return None
        tail.touched = time.monotonic()
        start = after + 1 - tail.base
        events = tail.events[start:start + limit]
        return events, events[-1].id, events[-1].id < last

    async def _read(self, conversation_id: str, after: int, limit: int) -> list[Event]:
        tail = self._tails.get(conversation_id)
        if tail is not None and tail.events:
            tail.touched = time.monotonic()
            if tail.base <= after + 1 < tail.end:
                start = after + 1 - tail.base
                return tail.events[start:start + limit]
        before = tail.base if tail is not None and tail.events and after + 1 < tail.base else None
        events = await self._read_disk(conversation_id, after, limit, before)
        if len(events) >= limit or before is None:
            return events
        # The tail may have been trimmed or restarted while the disk was read:
        # continue from memory only where it still follows on, else from disk.
        next_id = events[-1].id + 1 if events else after + 1
        tail = self._tails.get(conversation_id)
        if tail is not None and tail.base <= next_id < tail.end:
            start = next_id - tail.base
            return events + tail.events[start:start + limit - len(events)]
        return events + await self._read_disk(conversation_id, next_id - 1,
                                              limit - len(events), None)

    async def _read_disk(self, conversation_id: str, after: int, limit: int,
                         before: int | None) -> list[Event]:
        rows = await asyncio.to_thread(self._store.read_events, conversation_id, after, limit,
                                       before)
        return [Event.from_stored(row) for row in rows]

    async def wait_beyond(self, conversation_id: str, after: int, timeout: float) -> bool:
        """Wait until an event newer than ``after`` exists; False on timeout.

        Wakes at once for events this process writes and for those another
        process commits when the store reports them (PostgreSQL), else within
        :data:`POLL_SECONDS`. Each wait is one
        future and one timer: every open stream waits once per event it sends, and
        ``asyncio.wait_for`` (a new task per call on Python 3.11) cost more than
        the rest of the wait together.
        """
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        while True:
            if self.last_id(conversation_id) > after:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            woken: asyncio.Future[bool] = loop.create_future()
            waiters = self._waiters.setdefault(conversation_id, [])
            waiters.append(woken)
            timer = loop.call_later(min(remaining, self.poll_seconds), _settle, woken, False)
            try:
                by_commit = await woken
            finally:
                timer.cancel()
                if woken in waiters:  # timed out or cancelled: a commit did not take it
                    waiters.remove(woken)
                    if not waiters and self._waiters.get(conversation_id) is waiters:
                        del self._waiters[conversation_id]
            if not by_commit:
                await self._newest(conversation_id, refresh=True)

    def _followed(self, conversation_id: str) -> bool:
        """A reader here waits for the conversation's news (a stream or a waiter)."""
        return conversation_id in self._waiters or conversation_id in self.live

    def _wake(self, conversation_id: str, live: bool = True) -> None:
        """Wake every follower of the conversation (``live``: the SSE streams' tasks too)."""
        for woken in self._waiters.pop(conversation_id, ()):
            _settle(woken, True)
        if live:
            self.live.wake(conversation_id)

    async def wait_live(self, follower: LiveFollower, timeout: float) -> bool:
        """:meth:`wait_beyond` for a stream that commits may write to meanwhile.

        Returns True when the stream's task must look again (events it was not
        given, a write of the commit's that waits or failed); False after
        ``timeout`` without any event written to it (time for a keep-alive).
        While commits write to it, the poll for other processes' events is
        not needed and does not run.
        """
        loop = asyncio.get_running_loop()
        cid = follower.conversation_id
        deadline = time.monotonic() + timeout
        while True:
            if (follower.sending is not None or follower.failed is not None
                    or self.last_id(cid) > follower.cursor):
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            cursor = follower.cursor
            woken: asyncio.Future[bool] = loop.create_future()
            follower.woken, follower.waiting = woken, True
            timer = loop.call_later(min(remaining, self.poll_seconds), _settle, woken, False)
            try:
                by_commit = await woken
            finally:
                timer.cancel()
                follower.woken, follower.waiting = None, False
            if follower.cursor > cursor:  # commits wrote to it: no poll, no keep-alive due
                deadline = time.monotonic() + timeout
            elif not by_commit:
                await self._newest(cid, refresh=True)

    # -- forgetting ------------------------------------------------------------------------
    def forget(self, conversation_id: str) -> None:
        """Delete a conversation's events (its conversation was deleted)."""
        self._tails.pop(conversation_id, None)
        self._wake(conversation_id)
        self._last_ids.pop(conversation_id, None)
        if self._writer is not None:
            # Counted like an event, so a reader waits until the rows are gone.
            self._progress.setdefault(conversation_id, _Progress()).queued += 1
            self._send(Forget(conversation_id))
        else:
            self._store.delete_events(conversation_id)

    def prune_live_output(self, conversation_id: str) -> None:
        """The events' retention rule: the conversation's live output so far goes.

        Called when a turn starts: the turns before it have ended, and what their
        deltas and command output said is in their ``message`` and ``tool_result``
        events (see :func:`desktop_agent.store.event_table.prune_live_output`). The
        tail held in memory is dropped as well, so from now on every reader reads
        the pruned log, not the whole one for the same ids in one place and the
        pruned one in another; it also holds no more than the turn under way.
        """
        if self._closed:
            return
        tail = self._tails.get(conversation_id)
        if tail is not None:
            tail.restart(tail.end)
        # Counted like an event, so a reader waits until the rows are gone.
        self._progress.setdefault(conversation_id, _Progress()).queued += 1
        self._send(PruneLiveOutput(conversation_id))

    def evict_idle(self, idle_seconds: float) -> int:
        """Drop the memory of conversations untouched for ``idle_seconds``; returns how many.

        Their events stay on disk and are read back from there when asked for.
        """
        cutoff = time.monotonic() - idle_seconds
        idle = [cid for cid, tail in self._tails.items()
                if tail.touched < cutoff and not self._followed(cid)
                and cid not in self._progress]
        for cid in idle:
            del self._tails[cid]
            self._last_ids.pop(cid, None)
        for cid in [c for c in self._last_ids if c not in self._tails
                    and not self._followed(c) and c not in self._progress]:
            del self._last_ids[cid]
        return len(idle)

    def close(self) -> None:
        """Write everything still queued and stop the writer (blocking)."""
        if self._closed:
            return
        self._closed = True
        if self._stop_watching is not None:
            self._stop_watching()
        if self._writer is not None:
            items = self._outbox.take_all()
            if items:
                self._writer.queue.put(items)
            self._writer.queue.put(None)
            self._writer.join(timeout=30)
