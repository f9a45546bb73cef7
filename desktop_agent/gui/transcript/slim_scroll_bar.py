"""A thin, quiet vertical scroll bar painted with the palette's colours.

Why: the transcript's scroll bar repaints on every streaming frame (its range
grows); the platform style's bar with gradients cost a few milliseconds per
paint, this one a small fraction, and it looks like a modern chat app's.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QScrollBar, QStyle, QStyleOptionSlider, QWidget

BAR_WIDTH = 10
_MIN_HANDLE = 28


class SlimScrollBar(QScrollBar):
    """Vertical scroll bar whose handle is a rounded bar in ``handle_color``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.setFixedWidth(BAR_WIDTH)
        self._handle_color = QColor(128, 128, 128, 110)
        self._hover_color = QColor(128, 128, 128, 170)
        self._hovered = False

    def set_handle_color(self, color: str) -> None:
        """Colour (``#rrggbb``) of the handle; drawn semi-transparent."""
        base = QColor(color)
        self._handle_color = QColor(base.red(), base.green(), base.blue(), 120)
        self._hover_color = QColor(base.red(), base.green(), base.blue(), 190)
        self.update()

    def enterEvent(self, event: object) -> None:
        self._hovered = True
        self.update()
        super().enterEvent(event)  # type: ignore[arg-type]

    def leaveEvent(self, event: object) -> None:
        self._hovered = False
        self.update()
        super().leaveEvent(event)  # type: ignore[arg-type]

    def paintEvent(self, event: QPaintEvent) -> None:
        if self.maximum() <= self.minimum():
            return
        option = QStyleOptionSlider()
        self.initStyleOption(option)
        # Draw where the style's own hit-testing puts the handle, so dragging matches.
        handle = self.style().subControlRect(
            QStyle.ComplexControl.CC_ScrollBar, option, QStyle.SubControl.SC_ScrollBarSlider, self
        )
        if handle.height() < _MIN_HANDLE:
            handle.setHeight(_MIN_HANDLE)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self._hover_color if self._hovered else self._handle_color)
        rect = QRectF(handle).adjusted(2.5, 1, -2.5, -1)
        painter.drawRoundedRect(rect, rect.width() / 2, rect.width() / 2)
        painter.end()
