"""An event to append and an event read back: the event log's two records.

Apart from :mod:`~desktop_agent.store.event_table` so that what hears events (the
engines' listeners, :data:`~desktop_agent.store.dialects.EventsCommitted`) names
them without importing the table's code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append.

    Attributes:
        conversation_id: Whose log it goes to.
        type: The event's kind (``text``, ``state``...).
        data_json: Its payload, already JSON text (encoded once by the caller).
        created_at: Epoch seconds when it happened.
    """

    conversation_id: str
    type: str
    data_json: str
    created_at: float


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event read back, with the id the database gave it.

    Attributes:
        conversation_id: Whose log it is in.
        id: Its id, 1, 2, 3... within the conversation.
        type: The event's kind.
        data_json: Its payload as JSON text.
        created_at: Epoch seconds when it happened.
    """

    conversation_id: str
    id: int
    type: str
    data_json: str
    created_at: float
