"""Imported conversations checked against the one settings schema.

The store's import already resets what weakens safety; what it cannot know
(it sits below this layer) is the schema of each setting. A value the app
would refuse from the dialog or the API (a temperature of 5, a tool list that
is not a list) is removed after the import, with a sentence saying so, so
the conversation opens with defaults instead of failing at its first turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from desktop_agent.session.settings.conversation_settings import invalid_keys

if TYPE_CHECKING:
    from desktop_agent.store import ConversationRecord, Store


def drop_invalid_settings(store: Store, records: Iterable[ConversationRecord]) -> list[str]:
    """Remove settings that break the schema from imported conversations; one note each."""
    notes: list[str] = []
    for record in records:
        bad = invalid_keys(record.settings or {})
        if bad:
            store.patch_settings(record.id, dict.fromkeys(bad))
            notes.append(f"{record.title[:80]!r}: the setting(s) {', '.join(bad)} had values "
                         "the app does not accept and were removed.")
    return notes
