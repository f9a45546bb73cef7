"""Inline editor for a sent message: change the text, then resend or cancel.

Why inline: editing in place keeps the person's eyes on the message they are
changing; the new text leaves through a signal and the window decides what
resending means.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from desktop_agent.gui.transcript.painted_panel import PaintedPanel
from desktop_agent.gui.transcript.theme import TranscriptTheme


class _EditBox(QPlainTextEdit):
    """Enter sends, Shift+Enter adds a line, Esc cancels (as in the composer)."""

    send = Signal()
    cancel = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
            event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        ):
            self.send.emit()
        elif key == Qt.Key.Key_Escape:
            self.cancel.emit()
        else:
            super().keyPressEvent(event)


class MessageEditor(PaintedPanel):
    """A text box with Cancel and Send.

    Signals:
        submitted(str): Send was chosen with non-blank text.
        cancelled(): the edit was abandoned.
    """

    submitted = Signal(str)
    cancelled = Signal()

    def __init__(self, theme: TranscriptTheme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.set_panel_colors(theme.card_background, theme.accent, radius=10)
        self.text_box = _EditBox(self)
        self.text_box.setFrameShape(QPlainTextEdit.Shape.NoFrame)
        self.text_box.setTabChangesFocus(True)
        self.text_box.textChanged.connect(self._fit_height)
        self.text_box.send.connect(self._submit)
        self.text_box.cancel.connect(self.cancelled)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.clicked.connect(self.cancelled)
        self.send_button = QPushButton("Send", self)
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(self._submit)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(self.text_box)
        layout.addLayout(buttons)

    def start(self, text: str) -> None:
        """Show ``text`` for editing, with the cursor at its end."""
        self.text_box.setPlainText(text)
        self._fit_height()
        self.text_box.moveCursor(self.text_box.textCursor().MoveOperation.End)
        self.text_box.setFocus()

    def _fit_height(self) -> None:
        """Grow with the text from two to ten lines, then scroll."""
        lines = self.text_box.document().lineCount() if self.text_box.width() > 50 else 2
        visible = max(2, min(10, lines + 1))
        spacing = self.text_box.fontMetrics().lineSpacing()
        self.text_box.setFixedHeight(visible * spacing + 12)

    def _submit(self) -> None:
        text = self.text_box.toPlainText().strip()
        if text:
            self.submitted.emit(text)
