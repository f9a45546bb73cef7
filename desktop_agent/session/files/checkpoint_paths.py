"""Where a conversation's file checkpoints and command previews live: paths only.

Its own module so that both the undo side
(:mod:`~desktop_agent.session.files.folder_undo`, which asks whether a
conversation recorded any without loading the machinery) and the checkpoints
themselves (:mod:`~desktop_agent.session.files.file_checkpoints`) name the
folder without importing each other.
"""

from __future__ import annotations

from pathlib import Path

from desktop_agent.appdata.paths import data_dir
from desktop_agent.session.settings.sandbox_settings import previews_root


def checkpoints_root() -> Path:
    """Where every conversation's checkpoints are kept: ``<data folder>/checkpoints``."""
    return data_dir() / "checkpoints"


def checkpoints_folder(conversation_id: str) -> Path:
    """Where a conversation's checkpoints are kept (inside the data folder)."""
    return checkpoints_root() / conversation_id


def previews_folder(conversation_id: str) -> Path:
    """Where a conversation's command previews keep their layers (inside the data folder)."""
    return previews_root() / conversation_id
