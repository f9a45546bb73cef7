"""Deleting a conversation: its rows and its keyring secrets, from any front end.

Its working folder's checkpoints and command previews (in the data folder) go too.

The REST server removed a deleted conversation's ``conv:<id>:*`` secrets and
the window did not, so tokens outlived their conversation in the keyring.
Both now delete through :func:`delete_conversation`.

:func:`prune_left_behind` removes what a deletion left in the data folder when
it did not finish (the process stopped between the rows and the folders, or a
version that did not delete them): the rule is that checkpoints go with their
conversation, and nothing else would ever remove those.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING

from desktop_agent.appdata.paths import database_path
from desktop_agent.session.files.checkpoint_paths import checkpoints_root
from desktop_agent.session.files.command_previews import delete_previews
from desktop_agent.session.files.file_checkpoints import delete_checkpoints
from desktop_agent.session.settings import conversation_secrets
from desktop_agent.session.settings.sandbox_settings import previews_root

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.session.deletion")

_CONVERSATION_ID = re.compile(r"[0-9a-f]{32}")
"""How the store names conversations: only such folders are a conversation's to remove."""


async def delete_conversation(store: Store, conversation_id: str) -> None:
    """Delete the conversation's rows, then its secrets and checkpoints (in a thread)."""
    store.delete_conversation(conversation_id)
    await asyncio.to_thread(conversation_secrets.delete_all, conversation_id)
    await asyncio.to_thread(delete_checkpoints, conversation_id)
    await asyncio.to_thread(delete_previews, conversation_id)


def prune_left_behind(store: Store) -> int:
    """Remove checkpoints and preview layers whose conversation is gone (blocking).

    Only folders named like a conversation id that the store does not hold are
    removed: a conversation is stored before anything of its own is written
    there, so one being made by another process meanwhile is never taken.

    Only for the data folder's own database: a window on this folder's SQLite
    file and ``serve`` on PostgreSQL can share one data folder, and neither
    store knowing a conversation then says nothing about whether it was deleted.

    Returns:
        How many deleted conversations had something removed.
    """
    if not _owns_data_folder(store):
        log.info("not removing other conversations' checkpoints: %s is not this data "
                 "folder's own database", store.location)
        return 0
    gone: set[str] = set()
    kinds: tuple[tuple[Path, Callable[[str], None]], ...] = (
        (checkpoints_root(), delete_checkpoints), (previews_root(), delete_previews))
    for root, delete in kinds:
        try:
            names = [entry.name for entry in root.iterdir()
                     if _CONVERSATION_ID.fullmatch(entry.name) and entry.is_dir()
                     and not entry.is_symlink()]
        except FileNotFoundError:
            continue
        for name in names:
            if name in gone or store.get_conversation(name) is None:
                delete(name)
                gone.add(name)
    if gone:
        log.info("removed the checkpoints and previews of %d deleted conversation(s)", len(gone))
    return len(gone)


def _owns_data_folder(store: Store) -> bool:
    """Whether ``store`` is the database of the data folder the checkpoints are in."""
    if store.path is None:
        return False
    try:
        return store.path.resolve() == database_path().resolve()
    except OSError:
        return False
