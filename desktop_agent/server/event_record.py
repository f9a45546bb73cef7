"""One entry of a conversation's event log, and the forms it is sent in.

Kept apart from the log (:mod:`.event_log`): the record is what the events
route, SSE streams and callbacks send, encoded once; the log decides where
records are held and when they are written.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from desktop_agent.store import StoredEvent


@functools.lru_cache(maxsize=4096)
def _json_string(text: str) -> str:
    """``text`` as a JSON string: the conversation ids and types every SSE frame repeats."""
    return json.dumps(text)


class Event:
    """One entry of a conversation's log.

    ``data`` is decoded from ``data_json`` when first asked for: an event another
    replica committed, heard whole in its notification, is only ever sent on as
    JSON text by the SSE streams here, and decoding each one cost a ``json.loads``
    per event on the streaming replica for nothing.

    Attributes:
        data_json: ``data`` as JSON text, encoded once and reused for disk and SSE.
    """

    __slots__ = ("_data", "conversation_id", "created_at", "data_json", "id", "type")

    def __init__(self, id: int, conversation_id: str, type: str,
                 data: dict[str, Any] | None, created_at: float, data_json: str) -> None:
        self.id = id
        self.conversation_id = conversation_id
        self.type = type
        self._data = data
        self.created_at = created_at
        self.data_json = data_json

    @property
    def data(self) -> dict[str, Any]:
        """The event's data (decoded from :attr:`data_json` on first use)."""
        if self._data is None:
            self._data = json.loads(self.data_json)
        return self._data

    def drop_decoded(self) -> None:
        """Forget the decoded :attr:`data` (read again from :attr:`data_json` if asked).

        A long tool result held in the tail would otherwise cost its text twice.
        """
        self._data = None

    @classmethod
    def from_stored(cls, stored: StoredEvent, data: dict[str, Any] | None = None) -> Event:
        """The event read back from the store (``data`` decoded when first used, unless given)."""
        return cls(stored.id, stored.conversation_id, stored.type, data, stored.created_at,
                   stored.data_json)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (self.id, self.conversation_id, self.type, self.created_at, self.data_json) == (
            other.id, other.conversation_id, other.type, other.created_at, other.data_json)

    __hash__ = None  # type: ignore[assignment]  # mutable cache inside; compared by value

    def __repr__(self) -> str:
        return (f"Event(id={self.id!r}, conversation_id={self.conversation_id!r}, "
                f"type={self.type!r}, data_json={self.data_json!r})")

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by the events route, SSE and callbacks."""
        return {"id": self.id, "conversation_id": self.conversation_id, "type": self.type,
                "data": self.data, "created_at": self.created_at}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text, without encoding ``data`` again."""
        return (f'{{"id": {self.id}, "conversation_id": {_json_string(self.conversation_id)}, '
                f'"type": {_json_string(self.type)}, "data": {self.data_json}, '
                f'"created_at": {self.created_at!r}}}')

    def sse_frame(self) -> bytes:
        """The event as one Server-Sent Events frame with its id."""
        return (f"id: {self.id}\nevent: {self.type}\ndata: {self.to_json()}\n\n").encode()
