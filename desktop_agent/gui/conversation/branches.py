"""Switching between versions of a message (edited or regenerated): store operations only.

The transcript shows "‹ 2/3 ›" under a message that has siblings; stepping moves the
conversation's active leaf to the newest leaf under the chosen sibling. No Qt here:
the window calls this, then asks the conversation to show the store's branch again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.store import Store


def switch_branch(store: Store, conversation_id: str, message_id: str, offset: int) -> bool:
    """Make the sibling ``offset`` steps from ``message_id`` the active branch.

    Returns False when there is no such sibling (the first or last version).
    """
    siblings = store.siblings(message_id)
    index = next((i for i, r in enumerate(siblings) if r.id == message_id), None)
    if index is None or not 0 <= index + offset < len(siblings):
        return False
    store.set_active_leaf(conversation_id, store.latest_leaf(siblings[index + offset].id))
    return True
