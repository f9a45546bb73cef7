"""Hearing other replicas' events as they are committed: LISTEN on its own connection.

Every commit that appends events NOTIFYs a line per event, a small one whole (see
:data:`~desktop_agent.store.dialects.EVENTS_CHANNEL`). A replica whose SSE followers
wait for a conversation's next event runs one :class:`EventListener`, a thread with
a connection of its own that LISTENs and hands each notification (one commit's
events) to a callback, so a follower on replica C is given the events of a turn
running on replica B as B commits them, without reading them back from the table.

A lost connection is retried every few seconds; meanwhile followers fall back to
their slow poll, so nothing is missed, only later.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection

import psycopg

from desktop_agent.store.dialects import EVENTS_CHANNEL, EventsCommitted
from desktop_agent.store.event_records import StoredEvent

logger = logging.getLogger("desktop_agent.store.postgres")

RETRY_SECONDS = 3.0
STOP_CHECK_SECONDS = 1.0


class EventListener:
    """A thread that LISTENs for appended events and reports each to a callback.

    The same thread serves any channel whose payload is lines of ``<conversation
    id>:<number>`` (``channel``): answered approvals use it too.
    """

    def __init__(self, url: str, location: str, on_commit: EventsCommitted,
                 channel: str = EVENTS_CHANNEL,
                 own: Callable[[], Collection[int]] = frozenset) -> None:
        """Listen on ``url``; ``own()``: the server processes whose NOTIFYs to ignore.

        For events, those are this replica's own commits, which it already has
        in memory.
        """
        self._url = url
        self._channel = channel
        self._location = location
        self._on_commit = on_commit
        self._own = own
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"listen-{channel}",
                                        daemon=True)

    def start(self) -> None:
        """Start listening (returns at once)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop listening; waits at most a few seconds for the thread. Idempotent."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(STOP_CHECK_SECONDS * 3)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=15,
                                     application_name="desktop-agent events") as conn:
                    conn.execute(f"LISTEN {self._channel}")
                    self._listening()
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=STOP_CHECK_SECONDS):
                            if note.pid not in self._own():
                                self._report(note.payload)
            except psycopg.Error as exc:
                if self._stopping.is_set():
                    return
                logger.warning("listening for events on %s failed (%s); retrying in %.0f s",
                               self._location, str(exc).strip(), RETRY_SECONDS)
                self._stopping.wait(RETRY_SECONDS)

    def _listening(self) -> None:
        """Called each time the LISTEN starts (again): a subclass may catch up here."""

    def _report(self, payload: str) -> None:
        newest, carried = read_notification(payload)
        if not newest:
            return
        try:
            self._on_commit(newest, carried)
        except Exception:  # the listener must outlive a failing callback
            logger.exception("handling the event notification %r failed", payload)


def read_notification(payload: str) -> tuple[dict[str, int], list[StoredEvent]]:
    """``{conversation id: newest id}`` and the events that travelled whole, in order.

    A line that cannot be read is skipped (logged): the conversation it named is
    then caught up by its followers' poll of the table.
    """
    newest: dict[str, int] = {}
    carried: list[StoredEvent] = []
    for line in payload.split("\n"):
        fields = line.split(":", 4)
        try:
            conversation_id, event_id = fields[0], int(fields[1])
            if len(fields) == 5:
                carried.append(StoredEvent(conversation_id, event_id, fields[2], fields[4],
                                           float(fields[3])))
            elif len(fields) != 2:
                raise ValueError(line)
        except (ValueError, IndexError):
            logger.debug("ignoring a malformed event notification %r", line[:200])
            continue
        newest[conversation_id] = max(event_id, newest.get(conversation_id, 0))
    return newest, carried
