"""The strip above the composer after a turn changed files: what changed, Undo, and conflicts.

It lays out what it is told and reports clicks; the tab decides what they do.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from desktop_agent.gui.icons import icon


class FilesChangedBar(QFrame):
    """"This turn changed 3 files: … [Files changed…] [Undo this turn]", or a question.

    Signals:
        files_requested(): "Files changed…" was clicked.
        undo_requested(): "Undo this turn" was clicked.
        overwrite_requested(): "Overwrite them" was clicked (after a conflict).
    """

    files_requested = Signal()
    undo_requested = Signal()
    overwrite_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("filesChangedBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 4, 6, 4)
        badge = QLabel()
        badge.setPixmap(icon("info").pixmap(16, 16))
        layout.addWidget(badge)
        self.message = QLabel()
        self.message.setWordWrap(True)
        layout.addWidget(self.message, 1)
        self.files_button = QPushButton("Files changed…")
        self.files_button.clicked.connect(self.files_requested)
        self.undo_button = QPushButton("Undo this turn")
        self.undo_button.clicked.connect(self.undo_requested)
        self.overwrite_button = QPushButton("Overwrite them")
        self.overwrite_button.clicked.connect(self.overwrite_requested)
        self.cancel_button = QPushButton("Keep them")
        self.cancel_button.clicked.connect(self.hide)
        for button in (self.files_button, self.undo_button, self.overwrite_button,
                       self.cancel_button):
            layout.addWidget(button)
        self.hide()

    def show_changes(self, text: str, undo_label: str = "Undo this turn") -> None:
        """What a turn changed, with Files changed and Undo."""
        self._show(text, asking=False)
        self.undo_button.setText(undo_label)
        self.undo_button.setEnabled(True)

    def show_conflict(self, text: str) -> None:
        """Files changed after the agent: ask before overwriting them."""
        self._show(text, asking=True)

    def show_result(self, text: str) -> None:
        """What an undo or restore did (or why it did not)."""
        self._show(text, asking=False)
        self.undo_button.hide()

    def set_running(self, running: bool) -> None:
        """Grey the buttons while an undo runs (or a turn, which must end first)."""
        for button in (self.undo_button, self.overwrite_button):
            button.setEnabled(not running)

    def _show(self, text: str, *, asking: bool) -> None:
        self.message.setText(text)
        self.files_button.setVisible(not asking)
        self.undo_button.setVisible(not asking)
        self.overwrite_button.setVisible(asking)
        self.cancel_button.setVisible(asking)
        self.show()
