"""Per-conversation append-only event log with ids that only go up.

Every event a conversation produces (text deltas, tool calls, approvals,
results, errors, usage, state changes) is appended here once and read by
everyone else: the events route pages through it, SSE streams follow it, and the
callback dispatcher posts it. Because readers pull by id (``after=N``) instead
of being pushed copies, a reader that reconnects with ``Last-Event-ID`` gets
exactly the events after the one it saw: none lost, none twice.

Storage: appends go to memory at once and to the ``server_events`` table of
the app's SQLite file shortly after, in batches, from one writer thread (so
token-rate appends never wait on the disk). Memory keeps the recent tail of
each conversation; older events are read back from SQLite. What survives a
restart: every event written before the server stopped (a clean stop flushes
everything; a crash may lose the last fraction of a second). Ids continue
from the highest stored id after a restart.

All methods except the writer's internals run on the server's event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("desktop_agent.server.events")

MEMORY_TAIL = 2000
"""Events per conversation kept in memory after they are on disk."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_events (
    conversation_id TEXT NOT NULL,
    event_id INTEGER NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (conversation_id, event_id)
) WITHOUT ROWID
"""


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a conversation's log."""

    id: int
    conversation_id: str
    type: str
    data: dict[str, Any]
    created_at: float
    data_json: str
    """``data`` as JSON text, encoded once and reused for disk and SSE."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by the events route, SSE and callbacks."""
        return {"id": self.id, "conversation_id": self.conversation_id, "type": self.type,
                "data": self.data, "created_at": self.created_at}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text, without encoding ``data`` again."""
        return (f'{{"id": {self.id}, "conversation_id": {json.dumps(self.conversation_id)}, '
                f'"type": {json.dumps(self.type)}, "data": {self.data_json}, '
                f'"created_at": {self.created_at!r}}}')

    def sse_frame(self) -> bytes:
        """The event as one Server-Sent Events frame with its id."""
        return (f"id: {self.id}\nevent: {self.type}\ndata: {self.to_json()}\n\n").encode()


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=10.0, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 10000")
    return conn


class _Tail:
    """The in-memory end of one conversation's log: events ``base`` .. ``base+len-1``."""

    __slots__ = ("base", "events", "signal")

    def __init__(self, base: int) -> None:
        self.base = base
        self.events: list[Event] = []
        self.signal: asyncio.Event | None = None


class _DiskWriter(threading.Thread):
    """Writes queued events to SQLite in batches; remembers what is on disk."""

    def __init__(self, path: Path) -> None:
        super().__init__(name="event-log-writer", daemon=True)
        self._path = path
        self.queue: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self.flushed: dict[str, int] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        conn = _connect(self._path)
        try:
            while True:
                item = self.queue.get()
                if item is None:
                    return
                batch = [item]
                while len(batch) < 5000:
                    try:
                        nxt = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        self._write(conn, batch)
                        return
                    batch.append(nxt)
                self._write(conn, batch)
        finally:
            conn.close()

    @staticmethod
    def _insert(conn: sqlite3.Connection, rows: list[Any]) -> None:
        if rows:
            conn.executemany("INSERT OR REPLACE INTO server_events VALUES (?, ?, ?, ?, ?)", rows)

    def _write(self, conn: sqlite3.Connection, batch: list[tuple[str, Any]]) -> None:
        for attempt in range(5):
            try:
                conn.execute("BEGIN IMMEDIATE")
                inserts: list[Any] = []
                for kind, payload in batch:
                    if kind == "insert":
                        inserts.append(payload)
                        continue
                    self._insert(conn, inserts)
                    inserts = []
                    conn.execute("DELETE FROM server_events WHERE conversation_id = ?", (payload,))
                self._insert(conn, inserts)
                conn.execute("COMMIT")
                break
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                log.warning("writing events failed (attempt %d): %s", attempt + 1, exc)
                time.sleep(0.05 * 2**attempt)
        else:
            log.error("dropped %d events that could not be written to disk", len(batch))
        for kind, payload in batch:
            if kind == "insert":
                conv_id, event_id = payload[0], payload[1]
                if event_id > self.flushed.get(conv_id, 0):
                    self.flushed[conv_id] = event_id


Listener = Callable[[Event], None]


class EventLog:
    """Append, page through and follow conversation events.

    Attributes:
        listeners: Called with every appended event, on the loop, after it is
            readable; used by the callback dispatcher. Must not block.
    """

    def __init__(self, database_path: Path) -> None:
        self._path = database_path
        setup = _connect(database_path)
        try:
            setup.execute(_SCHEMA)
            rows = setup.execute(
                "SELECT conversation_id, MAX(event_id) FROM server_events GROUP BY conversation_id"
            ).fetchall()
        finally:
            setup.close()
        self._last_ids: dict[str, int] = {conv: int(last) for conv, last in rows}
        self._tails: dict[str, _Tail] = {}
        self._reader = _connect(database_path)
        self._reader_lock = threading.Lock()
        self._writer = _DiskWriter(database_path)
        self._writer.flushed.update(self._last_ids)
        self._writer.start()
        self._closed = False
        self.listeners: list[Listener] = []

    def stored_conversations(self) -> Iterable[str]:
        """Conversations that have events on disk (to prune deleted ones)."""
        return list(self._last_ids)

    def last_id(self, conversation_id: str) -> int:
        """The id of the newest event (0 when there is none)."""
        return self._last_ids.get(conversation_id, 0)

    def _tail(self, conversation_id: str) -> _Tail:
        tail = self._tails.get(conversation_id)
        if tail is None:
            tail = _Tail(self.last_id(conversation_id) + 1)
            self._tails[conversation_id] = tail
        return tail

    def append(self, conversation_id: str, event_type: str, data: dict[str, Any]) -> Event:
        """Add an event; readers and listeners see it at once, the disk shortly after."""
        if self._closed:
            raise RuntimeError("event log is closed")
        tail = self._tail(conversation_id)
        event_id = self._last_ids.get(conversation_id, 0) + 1
        self._last_ids[conversation_id] = event_id
        data_json = json.dumps(data, ensure_ascii=False, default=str)
        event = Event(event_id, conversation_id, event_type, data, time.time(), data_json)
        tail.events.append(event)
        self._writer.queue.put(("insert", (conversation_id, event_id, event_type, data_json,
                                           event.created_at)))
        self._trim(tail, conversation_id)
        if tail.signal is not None:
            tail.signal.set()
            tail.signal = None
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed")
        return event

    def _trim(self, tail: _Tail, conversation_id: str) -> None:
        """Drop the oldest in-memory events once they are on disk (amortised O(1))."""
        excess = len(tail.events) - MEMORY_TAIL
        if excess < MEMORY_TAIL:
            return
        on_disk = self._writer.flushed.get(conversation_id, 0) - tail.base + 1
        cut = min(excess, on_disk)
        if cut > 0:
            del tail.events[:cut]
            tail.base += cut

    async def page(
        self, conversation_id: str, after: int = 0, limit: int = 100,
        types: frozenset[str] | None = None,
    ) -> tuple[list[Event], int, bool]:
        """Events with id > ``after``, oldest first.

        Returns:
            (events, next_after, has_more): ``next_after`` is the last id
            examined, so filtered pages still advance.
        """
        last = self.last_id(conversation_id)
        after = max(0, after)
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

    async def _read(self, conversation_id: str, after: int, limit: int) -> list[Event]:
        tail = self._tails.get(conversation_id)
        base = tail.base if tail is not None else self.last_id(conversation_id) + 1
        if after + 1 >= base and tail is not None:
            start = after + 1 - base
            return tail.events[start:start + limit]
        rows = await asyncio.to_thread(self._read_disk, conversation_id, after, base, limit)
        events = [Event(int(r[0]), conversation_id, r[1], json.loads(r[2]), float(r[3]), r[2])
                  for r in rows]
        if len(events) < limit and tail is not None:
            start = (events[-1].id + 1 if events else base) - tail.base
            events.extend(tail.events[max(0, start):max(0, start) + limit - len(events)])
        return events

    def _read_disk(self, conversation_id: str, after: int, before: int, limit: int) -> list[Any]:
        with self._reader_lock:
            return self._reader.execute(
                "SELECT event_id, type, data, created_at FROM server_events "
                "WHERE conversation_id = ? AND event_id > ? AND event_id < ? "
                "ORDER BY event_id LIMIT ?",
                (conversation_id, after, before, limit),
            ).fetchall()

    async def wait_beyond(self, conversation_id: str, after: int, timeout: float) -> bool:
        """Wait until an event newer than ``after`` exists; False on timeout."""
        if self.last_id(conversation_id) > after:
            return True
        tail = self._tail(conversation_id)
        if tail.signal is None:
            tail.signal = asyncio.Event()
        signal = tail.signal
        try:
            await asyncio.wait_for(signal.wait(), timeout)
        except TimeoutError:
            return False
        return self.last_id(conversation_id) > after

    def forget(self, conversation_id: str) -> None:
        """Delete a conversation's events (its conversation was deleted)."""
        tail = self._tails.pop(conversation_id, None)
        if tail is not None and tail.signal is not None:
            tail.signal.set()
        self._last_ids.pop(conversation_id, None)
        self._writer.flushed.pop(conversation_id, None)
        self._writer.queue.put(("delete", conversation_id))

    def close(self) -> None:
        """Write everything still queued and stop the writer."""
        if self._closed:
            return
        self._closed = True
        self._writer.queue.put(None)
        self._writer.join(timeout=30)
        with self._reader_lock:
            self._reader.close()
