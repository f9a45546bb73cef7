"""Read-only text widgets that grow to fit their content instead of scrolling.

Why: the transcript is one long scrolling column; each block of text inside it
must be exactly as tall as its text so only the outer view scrolls. Both
widgets keep their height in step with the document layout's own size signal,
which Qt updates incrementally, so appending text costs the appended part.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QTextCursor, QWheelEvent
from PySide6.QtWidgets import QFrame, QPlainTextEdit, QSizePolicy, QTextBrowser, QWidget

from desktop_agent.gui.transcript.painted_panel import make_transparent

_SAFE_LINK_SCHEMES = frozenset({"http", "https", "mailto"})


class FittedTextBrowser(QTextBrowser):
    """A QTextBrowser without scroll bars whose height follows its document.

    Links open in the system browser (http, https and mailto only); the widget
    never navigates itself.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._open_link)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.document().setDocumentMargin(2)
        make_transparent(self)
        make_transparent(self.viewport())
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._fit_height()

    def loadResource(self, kind: int, url: QUrl | str) -> object:
        """Load nothing: model output must not make the app read files or URLs."""
        return None

    def append_plain(self, text: str) -> None:
        """Append ``text`` at the end without touching what is already there."""
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)

    def _fit_height(self, *_args: object) -> None:
        height = math.ceil(self.document().size().height()) + 2 * self.frameWidth()
        if height != self.height() or self.minimumHeight() != height:
            self.setFixedHeight(max(height, 1))

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        self._fit_height()

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.height())

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Let the wheel scroll the transcript, not this (never scrolling) widget."""
        event.ignore()

    def _open_link(self, url: QUrl) -> None:
        if url.scheme() in _SAFE_LINK_SCHEMES:
            QDesktopServices.openUrl(url)


class FittedPlainText(QPlainTextEdit):
    """A read-only monospace code view as tall as its lines, never wrapping.

    Long lines scroll sideways inside the widget. QPlainTextEdit lays out line
    by line, so appending streamed code is cheap; the height is the line count
    times the line spacing, known without laying out the lines.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        # Read-only, yet QPlainTextEdit records every insert for undo: a copy of the code.
        self.document().setUndoRedoEnabled(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().setDocumentMargin(8)
        make_transparent(self)
        make_transparent(self.viewport())
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.horizontalScrollBar().rangeChanged.connect(self._fit_height)
        self._fit_height()

    def append_plain(self, text: str) -> None:
        """Append ``text`` at the end (O(len(text)))."""
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)

    def _fit_height(self, *_args: object) -> None:
        document = self.document()
        lines = document.blockCount()
        if lines > 1 and not document.lastBlock().length() > 1:
            lines -= 1  # a trailing newline leaves an empty last line; do not show it
        margin = 2 * document.documentMargin()
        height = math.ceil(max(lines, 1) * self.fontMetrics().lineSpacing() + margin) + 2
        scroll = self.horizontalScrollBar()
        if scroll.maximum() > 0:
            height += scroll.sizeHint().height()
        if height != self.height():
            self.setFixedHeight(height)

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        self._fit_height()

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Sideways wheel scrolls long lines; vertical wheel goes to the transcript."""
        delta = event.angleDelta()
        if abs(delta.x()) > abs(delta.y()):
            super().wheelEvent(event)
        else:
            event.ignore()
