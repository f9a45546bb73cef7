"""A rounded panel painted with QPainter from palette-derived colours.

Why not a style sheet: with a style sheet every widget inside the transcript
is drawn through QStyleSheetStyle, which made each repaint of a full window of
code blocks several times slower; while a reply streams the view repaints
every frame. Painting a rounded rectangle directly costs a fraction of that.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QFrame, QWidget


class PaintedPanel(QFrame):
    """A frame with a rounded fill, an optional border and an optional header band."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._fill = QColor(Qt.GlobalColor.transparent)
        self._border: QColor | None = None
        self._radius = 8.0
        self._header_height = 0
        self._header_fill = QColor(Qt.GlobalColor.transparent)
        self._left_bar: QColor | None = None

    def set_panel_colors(
        self,
        fill: str | None,
        border: str | None = None,
        *,
        radius: float = 8.0,
        header_fill: str | None = None,
        header_height: int = 0,
    ) -> None:
        """Colours as ``#rrggbb`` (None for none); repaints."""
        self._fill = QColor(fill) if fill else QColor(Qt.GlobalColor.transparent)
        self._border = QColor(border) if border else None
        self._radius = radius
        self._header_fill = QColor(header_fill or Qt.GlobalColor.transparent)
        self._header_height = header_height
        self.update()

    def set_left_bar(self, color: str | None) -> None:
        """Draw a 3 px bar down the left edge instead of a full border."""
        self._left_bar = QColor(color) if color else None
        self.update()

    def set_header_height(self, height: int) -> None:
        """Height of the header band painted at the top."""
        if height != self._header_height:
            self._header_height = height
            self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        path = QPainterPath()
        path.addRoundedRect(rect, self._radius, self._radius)
        if self._fill.alpha():
            painter.fillPath(path, self._fill)
        if self._header_height and self._header_fill.alpha():
            painter.save()
            painter.setClipPath(path)
            painter.fillRect(QRectF(rect.left(), rect.top(), rect.width(), self._header_height),
                             self._header_fill)
            painter.restore()
        if self._border is not None:
            painter.setPen(QPen(self._border, 1.0))
            painter.drawPath(path)
        if self._left_bar is not None:
            painter.fillRect(QRectF(0, 0, 3, self.height()), self._left_bar)
        painter.end()


def set_text_color(widget: QWidget, color: str) -> None:
    """Give ``widget`` (and its text roles) a palette text colour."""
    palette = widget.palette()
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        palette.setColor(role, QColor(color))
    widget.setPalette(palette)


def make_transparent(widget: QWidget) -> None:
    """Let what is behind ``widget`` (a panel) show through its background."""
    palette = widget.palette()
    for role in (QPalette.ColorRole.Base, QPalette.ColorRole.Window):
        palette.setColor(role, QColor(Qt.GlobalColor.transparent))
    widget.setPalette(palette)
    widget.setAutoFillBackground(False)
