"""How records are laid out in SQLite rows, shared by every part of the store.

The column lists and the row-to-record converters live together so a query in
any part of :class:`~desktop_agent.store.store.Store` selects columns in the
order the converter reads them.
"""

from __future__ import annotations

import json
from typing import Any

from desktop_agent.store.records import ConversationRecord, MessageRecord

MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.parent_id, m.role, m.message, m.metadata, m.status,"
    " m.created_at, m.depth"
)
CONVERSATION_COLUMNS = "c.id, c.title, c.created_at, c.updated_at, c.settings, c.active_leaf_id"


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def new_id() -> str:
    """A new random id (a UUID4 in hex).

    ``uuid`` is imported here, not with the module: it imports ``platform``
    (~3 ms together), which the window would otherwise load before its first
    paint for ids it makes only when something is written.
    """
    import uuid

    return uuid.uuid4().hex


def conversation_from_row(row: tuple[Any, ...]) -> ConversationRecord:
    return ConversationRecord(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5])


def message_from_row(row: tuple[Any, ...]) -> MessageRecord:
    return MessageRecord(
        row[0],
        row[1],
        row[2],
        row[3],
        json.loads(row[4]),
        json.loads(row[5]),
        row[6],
        row[7],
        row[8],
    )
