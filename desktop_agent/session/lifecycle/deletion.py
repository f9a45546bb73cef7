"""Deleting a conversation: its rows and its keyring secrets, from any front end.

Its working folder's checkpoints and command previews (in the data folder) go too.

The REST server removed a deleted conversation's ``conv:<id>:*`` secrets and
the window did not, so tokens outlived their conversation in the keyring.
Both now delete through :func:`delete_conversation`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from desktop_agent.session.files.command_previews import delete_previews
from desktop_agent.session.files.file_checkpoints import delete_checkpoints
from desktop_agent.session.settings import conversation_secrets

if TYPE_CHECKING:
    from desktop_agent.store import Store


async def delete_conversation(store: Store, conversation_id: str) -> None:
    """Delete the conversation's rows, then its secrets and checkpoints (in a thread)."""
    store.delete_conversation(conversation_id)
    await asyncio.to_thread(conversation_secrets.delete_all, conversation_id)
    await asyncio.to_thread(delete_checkpoints, conversation_id)
    await asyncio.to_thread(delete_previews, conversation_id)
