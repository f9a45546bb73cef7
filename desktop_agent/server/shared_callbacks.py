"""Callbacks in the database that ``serve`` replicas share, their URLs sealed.

With ``serve --database`` a callback registered through one replica must receive
the events of turns any replica runs. The dispatcher (:mod:`.callbacks`) keeps
delivering from memory; this is where it writes what was registered or removed and
reads back what other replicas did. The URL is sealed with the replicas' secret key
(:class:`~desktop_agent.appdata.secret_cipher.SecretCipher`, bound to the callback's
id), because a callback URL may carry a token and the database must never show one.

Every call blocks (database round trips): the dispatcher runs them in a thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from desktop_agent.appdata.secret_cipher import SecretCipher, WrongSecretKeyError
from desktop_agent.store import Store
from desktop_agent.store.callback_rows import CallbackRow

log = logging.getLogger("desktop_agent.server.callbacks")


@dataclass(frozen=True)
class SharedCallback:
    """A callback as stored, its URL opened.

    Attributes:
        id: The callback's id.
        conversation_id: Whose events it receives.
        url: Where to POST them.
        event_types: The event types it wants; None for all.
    """

    id: str
    conversation_id: str
    url: str
    event_types: frozenset[str] | None


def _seal_name(callback_id: str) -> str:
    return f"callback:{callback_id}"


class SharedCallbacks:
    """Reads and writes the replicas' callbacks in the store, sealing each URL."""

    def __init__(self, store: Store, cipher: SecretCipher) -> None:
        self._store = store
        self._cipher = cipher

    def insert(self, callback_id: str, conversation_id: str, url: str,
               event_types: Sequence[str] | None) -> None:
        """Store a new callback (every replica is told when it commits)."""
        self._store.add_callback_row(callback_id, conversation_id,
                                     self._cipher.seal(_seal_name(callback_id), url),
                                     event_types)

    def load(self, conversation_id: str | None = None) -> list[SharedCallback]:
        """The stored callbacks of one conversation (or all), oldest first."""
        return [c for c in map(self._opened, self._store.callback_rows(conversation_id)) if c]

    def delete(self, conversation_id: str, callback_id: str) -> bool:
        """Remove one; False if no replica had it."""
        return self._store.delete_callback_row(conversation_id, callback_id)

    def delete_conversation(self, conversation_id: str) -> None:
        """Remove every callback of a conversation being deleted."""
        self._store.delete_conversation_callbacks(conversation_id)

    def watch(self, on_change: Callable[[str], None]) -> Callable[[], None] | None:
        """Hear changes any replica makes (``""``: reload all); a stop function."""
        return self._store.watch_callbacks(on_change)

    def _opened(self, row: CallbackRow) -> SharedCallback | None:
        try:
            url = self._cipher.open(_seal_name(row.id), row.sealed_url)
        except WrongSecretKeyError:
            log.warning("callback %s of conversation %s does not open with this replica's "
                        "key (altered?); not delivering to it", row.id, row.conversation_id)
            return None
        types = None if row.event_types is None else frozenset(row.event_types)
        return SharedCallback(row.id, row.conversation_id, url, types)
