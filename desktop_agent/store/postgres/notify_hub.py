"""One LISTEN connection per store, for every channel its process follows.

A replica follows three channels: appended events
(:data:`~desktop_agent.store.dialects.EVENTS_CHANNEL`), answered approvals and
changed callbacks. PostgreSQL wakes every backend that LISTENs in a database at each
commit that NOTIFYs, whatever channel it listens on: with a connection per channel,
each commit of events on three replicas woke nine backends, six of them to find
nothing for them. Measured on this repository's 2-core machine (PostgreSQL 15), each
such idle listener cost about 19 µs of PostgreSQL's CPU per commit; the event log
commits hundreds of batches a second per replica. So one :class:`NotifyHub` per store
LISTENs on every channel asked for, on one connection in one thread, and hands each
notification to the handlers of its channel.

A lost connection is retried every few seconds; each time listening (re)starts, a
subscription's ``on_listening`` runs, since a notification sent meanwhile may have
been missed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from desktop_agent.store.errors import StoreClosedError

logger = logging.getLogger("desktop_agent.store.postgres")

RETRY_SECONDS = 3.0
STOP_CHECK_SECONDS = 1.0

NoteHandler = Callable[[str, int], None]
"""``on_note(payload, pid)``: ``pid`` is the NOTIFYing backend's process id."""


@dataclass(eq=False)
class _Subscription:
    channel: str
    on_note: NoteHandler
    on_listening: Callable[[], None] | None
    told: int = field(default=-1)
    """The connection (its number) on which ``on_listening`` last ran."""


class NotifyHub:
    """A thread LISTENing on one connection for every channel subscribed to.

    The thread starts with the first subscription and stops when the last one is
    removed. Handlers run in that thread, one notification at a time: they must
    hand work on quickly (to an event loop) and not block.
    """

    def __init__(self, url: str, location: str) -> None:
        self._url = url
        self._location = location
        self._lock = threading.Lock()
        # channel -> its subscriptions; the tuples are replaced, never changed,
        # so the thread reads them without the lock.
        self._subscriptions: dict[str, tuple[_Subscription, ...]] = {}
        self._thread: threading.Thread | None = None
        self._stopped: threading.Thread | None = None
        self._closed = False
        self._stopping = threading.Event()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)

    def subscribe(self, channel: str, on_note: NoteHandler,
                  on_listening: Callable[[], None] | None = None) -> Callable[[], None]:
        """Hand each notification on ``channel`` to ``on_note``; returns the unsubscribe.

        ``on_listening`` runs (in the hub's thread) once the channel is listened
        on, and again after each reconnection. Returns at once: the LISTEN itself
        follows within a moment.
        """
        subscription = _Subscription(channel, on_note, on_listening)
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"the store of {self._location} is closed")
            self._subscriptions[channel] = (*self._subscriptions.get(channel, ()), subscription)
            if self._thread is None:
                self._stopping = threading.Event()
                self._thread = threading.Thread(target=self._run, args=(self._stopping,),
                                                name="listen", daemon=True)
                self._thread.start()
        self._wake()

        def unsubscribe() -> None:
            self._unsubscribe(subscription)

        return unsubscribe

    def _unsubscribe(self, subscription: _Subscription) -> None:
        """Remove one subscription (idempotent); the last one stops the thread."""
        with self._lock:
            left = tuple(s for s in self._subscriptions.get(subscription.channel, ())
                         if s is not subscription)
            if left:
                self._subscriptions[subscription.channel] = left
            else:
                self._subscriptions.pop(subscription.channel, None)
            thread = None
            if not self._subscriptions and self._thread is not None:
                thread, self._thread = self._thread, None
                self._stopped = thread
                self._stopping.set()
        self._wake()
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_CHECK_SECONDS * 3)

    def close(self) -> None:
        """Stop listening (every subscription ends). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            subscriptions = [s for group in self._subscriptions.values() for s in group]
        for subscription in subscriptions:
            self._unsubscribe(subscription)
        if self._stopped is None or not self._stopped.is_alive():
            os.close(self._wake_read)
            os.close(self._wake_write)
        # else the thread still waits (at most STOP_CHECK_SECONDS more): the two
        # descriptors stay open rather than be pulled from under its select

    def _wake(self) -> None:
        if self._closed and self._thread is None:
            return
        # A full pipe: the thread has wake-ups waiting already.
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_write, b"x")

    def _run(self, stopping: threading.Event) -> None:
        connection_number = 0
        while not stopping.is_set():
            connection_number += 1
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=15,
                                     application_name="desktop-agent listen") as conn:
                    self._listen(conn, stopping, connection_number)
            except psycopg.Error as exc:
                if stopping.is_set():
                    return
                logger.warning("listening for notifications on %s failed (%s); retrying in"
                               " %.0f s", self._location, str(exc).strip(), RETRY_SECONDS)
                stopping.wait(RETRY_SECONDS)

    def _listen(self, conn: psycopg.Connection[Any], stopping: threading.Event,
                number: int) -> None:
        listened: set[str] = set()
        pgconn = conn.pgconn
        encoding = conn.info.encoding
        while not stopping.is_set():
            if self._follow_subscriptions(conn, listened, number):
                # Notifications that came while the statements ran, kept aside by psycopg.
                for note in conn.notifies(timeout=0):
                    self._dispatch(note.channel, note.payload, note.pid)
            ready, _, _ = select.select([conn.fileno(), self._wake_read], [], [],
                                       STOP_CHECK_SECONDS)
            if self._wake_read in ready:
                # BlockingIOError: another hub thread (stopping) read it first.
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_read, 4096)
            if conn.fileno() in ready:
                # Straight from libpq: psycopg's notifies() (its lock, generator, wait
                # and a Notify per notification) cost about 20 µs of this thread's
                # CPU per notification, this about 9, on every replica for every
                # commit of events. A lost connection raises here (psycopg.Error).
                pgconn.consume_input()
                while (raw := pgconn.notifies()) is not None:
                    self._dispatch(raw.relname.decode(encoding), raw.extra.decode(encoding),
                                   raw.be_pid)

    def _dispatch(self, channel: str, payload: str, pid: int) -> None:
        for subscription in self._subscriptions.get(channel, ()):
            try:
                subscription.on_note(payload, pid)
            except Exception:  # the listener must outlive a failing handler
                logger.exception("handling the %s notification %r failed", channel,
                                 payload[:200])

    def _follow_subscriptions(self, conn: psycopg.Connection[Any],
                              listened: set[str], number: int) -> bool:
        """LISTEN to channels newly subscribed to, UNLISTEN to those left; tell the new.

        Returns whether it ran a statement.
        """
        with self._lock:
            subscriptions = dict(self._subscriptions)
        ran = False
        for channel in [c for c in subscriptions if c not in listened]:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            listened.add(channel)
            ran = True
        for channel in [c for c in listened if c not in subscriptions]:
            conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))
            listened.discard(channel)
            ran = True
        for channel_subscriptions in list(subscriptions.values()):
            for subscription in channel_subscriptions:
                if subscription.told != number:
                    subscription.told = number
                    if subscription.on_listening is not None:
                        try:
                            subscription.on_listening()
                        except Exception:
                            logger.exception("starting to listen on %s failed",
                                             subscription.channel)
        return ran
