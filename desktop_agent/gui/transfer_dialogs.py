"""Non-modal file dialogs behind the File menu's export and import."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QFileDialog, QWidget


def ask_for_files(parent: QWidget, title: str, save: bool, name_filter: str, default: str,
                  on_done: Callable[[list[str]], object]) -> QFileDialog:
    """Open a file dialog without blocking the loop; ``on_done`` gets the chosen paths."""
    dialog = QFileDialog(parent, title)
    dialog.setNameFilter(name_filter)
    if save:
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.selectFile(default)
    else:
        dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)
    dialog.filesSelected.connect(lambda paths: on_done(list(paths)))
    dialog.finished.connect(dialog.deleteLater)
    dialog.open()
    return dialog


def file_name_for(title: str, suffix: str) -> str:
    """A safe default file name from a conversation title."""
    safe = "".join(c if c.isalnum() or c in " -_" else "_" for c in title).strip() or "chat"
    return safe[:60] + suffix
