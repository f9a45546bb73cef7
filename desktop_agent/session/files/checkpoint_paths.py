"""Where a conversation's file checkpoints live: a path only, with no checkpoint machinery.

Its own module so that both the undo side
(:mod:`~desktop_agent.session.files.folder_undo`, which asks whether a
conversation recorded any without loading the machinery) and the checkpoints
themselves (:mod:`~desktop_agent.session.files.file_checkpoints`) name the
folder without importing each other.
"""

from __future__ import annotations

from pathlib import Path

from desktop_agent.appdata.paths import data_dir


def checkpoints_folder(conversation_id: str) -> Path:
    """Where a conversation's checkpoints are kept (inside the data folder)."""
    return data_dir() / "checkpoints" / conversation_id
