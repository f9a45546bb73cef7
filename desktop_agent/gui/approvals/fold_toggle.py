"""A header that folds the widget below it, and a label that shortens to one line.

Both let the Approvals dock give its room to the diff on a short screen: the
arguments fold behind their header (one click opens them) and the conversation's
title takes one line, ending in "…", instead of wrapping.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolButton, QWidget


class FoldToggle(QToolButton):
    """An arrow and a title that show or hide ``target``.

    Attributes:
        touched: The person has clicked it since :meth:`reset`: their choice then
            stands, and the dock no longer folds or opens it to fit the room.
    """

    def __init__(self, text: str, target: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._target = target
        self._open = True
        self.touched = False
        self.setText(text)
        self.setToolTip("Show or hide the arguments")
        self.setAutoRaise(True)  # not checkable: a checked button would look pressed
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.setArrowType(Qt.ArrowType.DownArrow)
        self.clicked.connect(self._on_clicked)

    def set_open(self, open_: bool) -> None:
        """Show (True) or fold (False) the target."""
        self._open = open_
        self.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
        self._target.setVisible(open_)

    def is_open(self) -> bool:
        """Whether the target is shown."""
        return self._open

    def reset(self) -> None:
        """Forget the person's last click (a new request is shown)."""
        self.touched = False

    def minimumSizeHint(self) -> QSize:
        """Narrower than its text if need be: the dock must fit beside a 1024-pixel window."""
        return QSize(60, super().minimumSizeHint().height())

    def _on_clicked(self) -> None:
        self.touched = True
        self.set_open(not self._open)


class ElidedLabel(QLabel):
    """Plain text on one line, ending in "…" when it does not fit (all of it in the tooltip)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setTextFormat(Qt.TextFormat.PlainText)

    def set_full_text(self, text: str) -> None:
        """Set the text to show (shortened to the width as needed)."""
        self._full = text
        self.setToolTip(text)
        self._elide()

    def full_text(self) -> str:
        """The text before shortening."""
        return self._full

    def minimumSizeHint(self) -> QSize:
        """Any width will do: the text shortens to it."""
        return QSize(20, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Shorten the text to the new width."""
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        self.setText(self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight,
                                                    max(20, self.width())))
