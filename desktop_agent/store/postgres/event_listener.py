"""Hearing other replicas' events as they are committed, and reading their notifications.

Every commit that appends events NOTIFYs a line per event, a small one whole (see
:data:`~desktop_agent.store.dialects.EVENTS_CHANNEL`). A replica whose SSE followers
wait for a conversation's next event hears them on its store's one LISTEN connection
(:class:`~.notify_hub.NotifyHub`) and hands each commit's events to a callback, so a
follower on replica C is given the events of a turn running on replica B as B commits
them, without reading them back from the table.

While the connection is lost, followers fall back to their slow poll, so nothing is
missed, only later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

from desktop_agent.store.dialects import EventsCommitted
from desktop_agent.store.event_records import StoredEvent
from desktop_agent.store.postgres.notify_hub import NoteHandler

logger = logging.getLogger("desktop_agent.store.postgres")


def events_handler(on_commit: EventsCommitted,
                   own: Callable[[], Collection[int]] = frozenset) -> NoteHandler:
    """A hub handler reading each notification of events and reporting it to ``on_commit``.

    ``own()``: the server processes whose NOTIFYs to ignore; for events, those are
    this replica's own commits, which it already has in memory.
    """
    def on_note(payload: str, pid: int) -> None:
        if pid in own():
            return
        newest, carried = read_notification(payload)
        if newest:
            on_commit(newest, carried)

    return on_note


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
