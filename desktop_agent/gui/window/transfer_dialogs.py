"""Non-modal file dialogs behind the File menu's export and import."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QWidget

#: Where the last export or import went (the next dialog opens there).
LAST_FOLDER_KEY = "files/last_folder"


def ask_for_files(parent: QWidget, title: str, save: bool, name_filter: str, default: str,
                  on_done: Callable[[list[str]], object],
                  settings: QSettings | None = None) -> QFileDialog:
    """Open a file dialog without blocking the loop; ``on_done`` gets the chosen paths.

    With ``settings``, the dialog opens in the folder used last time and remembers
    the folder chosen now.
    """
    dialog = QFileDialog(parent, title)
    dialog.setNameFilter(name_filter)
    folder = settings.value(LAST_FOLDER_KEY) if settings is not None else None
    if isinstance(folder, str) and Path(folder).is_dir():
        dialog.setDirectory(folder)
    if save:
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.selectFile(default)
    else:
        dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)

    def chosen(paths: list[str]) -> None:
        if settings is not None and paths:
            settings.setValue(LAST_FOLDER_KEY, str(Path(paths[0]).parent))
        on_done(list(paths))

    dialog.filesSelected.connect(chosen)
    dialog.finished.connect(dialog.deleteLater)
    dialog.open()
    return dialog


def file_name_for(title: str, suffix: str) -> str:
    """A safe default file name from a conversation title."""
    safe = "".join(c if c.isalnum() or c in " -_" else "_" for c in title).strip() or "chat"
    return safe[:60] + suffix
