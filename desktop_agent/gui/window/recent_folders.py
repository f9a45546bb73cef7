"""The working folders a person picked lately, offered first in every header's folder menu.

Why: each new conversation got a fresh folder of its own, so a person working
on one project picked that project's folder again, through a file dialog,
every time. The folders picked are remembered (newest first) in the store's
app settings, so they survive a restart and are shared by the window's tabs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.store import Store

#: The app setting that holds the list (real paths, newest first).
RECENT_FOLDERS_KEY = "recent_folders"
#: How many are kept (and offered).
RECENT_FOLDERS_LIMIT = 8


class RecentFolders:
    """The recently picked working folders of this data folder.

    Args:
        store: Where the list is kept (app settings).
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._kept: list[str] | None = None  # read on first use

    def paths(self) -> list[Path]:
        """The folders, newest first; one deleted or unmounted since is left out."""
        if self._kept is None:
            saved = self._store.get_setting(RECENT_FOLDERS_KEY) or []
            self._kept = [p for p in saved if isinstance(p, str)] if isinstance(saved, list) \
                else []
        return [Path(p) for p in self._kept if os.path.isdir(p)]

    def remember(self, folder: str) -> None:
        """Put ``folder`` (by its real path) first."""
        kept = self._store.remember_recent(RECENT_FOLDERS_KEY, os.path.realpath(folder),
                                           RECENT_FOLDERS_LIMIT)
        self._kept = [p for p in kept if isinstance(p, str)]
