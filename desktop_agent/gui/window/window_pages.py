"""Small pages of the main window: the error notice bar, the no-tabs page, the opening page."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)


class NoticeBar(QWidget):
    """A dismissible line at the top of the window for unexpected errors (non-modal)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("noticeBar")
        self.setAutoFillBackground(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(
            QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(20, 20))
        layout.addWidget(icon)
        self.label = QLabel()
        self.label.setWordWrap(True)
        layout.addWidget(self.label, 1)
        close = QToolButton()
        close.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_DialogCloseButton))
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout.addWidget(close)
        self.hide()

    def show_message(self, text: str) -> None:
        """Show (or replace) the notice."""
        self.label.setText(text)
        self.show()


class EmptyStatePage(QWidget):
    """Shown when no conversation is open, with one obvious next step.

    Signals:
        new_requested(): "New conversation" was clicked.
    """

    new_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        title = QLabel("No conversation is open")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.4)
        title.setFont(font)
        hint = QLabel("Start a new one, or open one from the Conversations list.")
        hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        hint.setEnabled(False)
        button = QPushButton("New conversation (Ctrl+T)")
        button.clicked.connect(self.new_requested)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(button)
        row.addStretch(1)
        layout.addWidget(title)
        layout.addWidget(hint)
        layout.addLayout(row)
        layout.addStretch(2)


class OpeningPage(QWidget):
    """The conversation's place for the moment between the window's first paint and its tabs.

    The window started by the app paints its menus, toolbar and Conversations list
    first and reopens the saved conversations in the next turn of the event loop:
    their modules (the transcript, the session) cost more CPU than the rest of the
    window. Meanwhile this page shows an empty conversation area and a message box
    that already takes typing (what is typed moves into the conversation's own box
    when it opens), so keys pressed that soon after a launch are not lost or sent
    to the Conversations list's search field, which would otherwise have the focus.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("openingPage")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        self.composer = QPlainTextEdit()
        self.composer.setObjectName("openingComposer")
        self.composer.setPlaceholderText("Opening the conversation\u2026")
        self.composer.setMaximumHeight(self.composer.fontMetrics().lineSpacing() * 4)
        layout.addWidget(self.composer)
