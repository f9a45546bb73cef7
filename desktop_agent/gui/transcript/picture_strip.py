"""Pictures in the transcript: thumbnails of what was sent or returned, full size on a click.

A message the person sent with pictures, and a tool result that returned some
(an MCP screenshot, a chart), used to show "[image]" or nothing: the person
could not see what the model was shown. The pictures are the conversation's
own ``data:`` URIs (checked when they were stored, see
:mod:`desktop_agent.image_data`); each is decoded once, when its item's widget
is built, and scaled to a thumbnail. A picture Qt cannot decode is named in
words instead of failing the whole message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication, QImage, QMouseEvent, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.transcript.theme import TranscriptTheme
from desktop_agent.image_data import ImageDataError, decode_data_uri

log = logging.getLogger("desktop_agent.gui.transcript")

THUMBNAIL_HEIGHT = 140
"""Tallest a thumbnail is drawn (logical pixels); wide pictures are capped at twice that."""


def picture_image(url: str) -> QImage | None:
    """The picture in a ``data:`` URI, or None when it is not one Qt can draw."""
    try:
        _mime, data = decode_data_uri(url)
    except ImageDataError:
        return None
    image = QImage.fromData(data)
    return None if image.isNull() else image


def describe(image: QImage) -> str:
    """``"1280 × 720 picture"``: what a thumbnail's tooltip and accessible name say."""
    return f"{image.width()} × {image.height()} picture"


class _Thumbnail(QLabel):
    """One picture, scaled down; clicking it asks for the full size."""

    clicked = Signal()

    def __init__(self, image: QImage, theme: TranscriptTheme, parent: QWidget | None = None
                 ) -> None:
        super().__init__(parent)
        ratio = self.devicePixelRatioF() or 1.0
        bound = QSize(2 * THUMBNAIL_HEIGHT, THUMBNAIL_HEIGHT) * ratio
        scaled = image.scaled(bound, Qt.AspectRatioMode.KeepAspectRatio,
                              Qt.TransformationMode.SmoothTransformation)
        pixmap = QPixmap.fromImage(scaled)
        pixmap.setDevicePixelRatio(ratio)
        self.setPixmap(pixmap)
        self.setToolTip(f"{describe(image)}: click to open it at full size")
        self.setAccessibleName(describe(image))
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setStyleSheet(f"QLabel {{ border: 1px solid {theme.border}; border-radius: 6px;"
                           " padding: 2px; }")

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        """A left click opens the picture."""
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        super().mouseReleaseEvent(event)


class PictureViewer(QDialog):
    """One picture at full size (scrolling when it is larger than the screen)."""

    def __init__(self, image: QImage, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(describe(image).capitalize())
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        label = QLabel(self)
        label.setPixmap(QPixmap.fromImage(image))
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        area = QScrollArea(self)
        area.setWidget(label)
        area.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(area)
        screen = QGuiApplication.primaryScreen()
        room = screen.availableGeometry().size() * 0.9 if screen is not None else QSize(1200, 900)
        self.resize(min(image.width() + 24, room.width()), min(image.height() + 24, room.height()))


class PictureStrip(QWidget):
    """Thumbnails in a row, for a user message or a tool result.

    Attributes:
        count: How many pictures were given (shown or named).
        shown: How many could be drawn.
    """

    def __init__(self, urls: Sequence[str], theme: TranscriptTheme,
                 parent: QWidget | None = None, *, indent: int = 0) -> None:
        super().__init__(parent)
        self.setObjectName("pictureStrip")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(indent, 4, 0, 4)
        layout.setSpacing(6)
        self.count = len(urls)
        self.shown = 0
        self.note: QLabel | None = None  # names the pictures that cannot be drawn
        self._thumbnails: list[_Thumbnail] = []
        self._viewer: PictureViewer | None = None
        unreadable = 0
        for url in urls:
            image = picture_image(url)
            if image is None:
                unreadable += 1
                continue
            thumbnail = _Thumbnail(image, theme, self)
            thumbnail.clicked.connect(lambda image=image: self.open_picture(image))
            layout.addWidget(thumbnail)
            self._thumbnails.append(thumbnail)
            self.shown += 1
        if unreadable:
            log.info("%d picture(s) in the transcript could not be decoded", unreadable)
            self.note = QLabel(f"{unreadable} picture{'s' if unreadable != 1 else ''} that "
                               "cannot be shown here", self)
            self.note.setStyleSheet(f"color: {theme.muted_text};")
            layout.addWidget(self.note)
        layout.addStretch(1)

    def thumbnails(self) -> list[QLabel]:
        """The thumbnails shown, in order."""
        return list(self._thumbnails)

    def open_picture(self, image: QImage) -> PictureViewer:
        """Show ``image`` at full size in its own window (one at a time per strip)."""
        if self._viewer is not None:
            self._viewer.close()
        self._viewer = PictureViewer(image, self.window())
        self._viewer.destroyed.connect(lambda *_: setattr(self, "_viewer", None))
        self._viewer.show()
        return self._viewer
