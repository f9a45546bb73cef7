"""Pictures in the transcript: thumbnails of what was sent or returned, full size on a click.

A message the person sent with pictures, and a tool result that returned some
(an MCP screenshot, a chart), used to show "[image]" or nothing: the person
could not see what the model was shown. The pictures are the conversation's
own ``data:`` URIs (checked when they were stored, see
:mod:`desktop_agent.image_data`). Only thumbnails are kept: the recent ones in a
small cache (an item's widget is rebuilt whenever it scrolls back into view),
the full picture decoded again when it is opened, so a conversation full of
screenshots does not hold every one decoded (8 MB for one 1920 × 1080). A picture
Qt cannot decode is named in words instead of failing the whole message.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
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


def describe(image: QImage | QSize) -> str:
    """``"1280 × 720 picture"``: what a thumbnail's tooltip and accessible name say."""
    return f"{image.width()} × {image.height()} picture"


_THUMBNAILS: OrderedDict[tuple[bytes, float], tuple[QImage, QSize] | None] = OrderedDict()
THUMBNAILS_KEPT = 32
"""Thumbnails cached (about 150 KB each), most recently used last."""


def thumbnail(url: str, ratio: float) -> tuple[QImage, QSize] | None:
    """The picture scaled to a thumbnail for a screen of ``ratio``, and its full size.

    Cached by a digest of the URI, not the URI itself (megabytes of base64 that
    the cache would otherwise keep alive after the conversation is closed), so
    scrolling back to a picture does not decode it again.
    """
    key = (hashlib.blake2b(url.encode("ascii", "replace"), digest_size=16).digest(), ratio)
    if key in _THUMBNAILS:
        _THUMBNAILS.move_to_end(key)
        return _THUMBNAILS[key]
    made: tuple[QImage, QSize] | None = None
    image = picture_image(url)
    if image is not None:
        bound = QSize(2 * THUMBNAIL_HEIGHT, THUMBNAIL_HEIGHT) * ratio
        made = (image.scaled(bound, Qt.AspectRatioMode.KeepAspectRatio,
                             Qt.TransformationMode.SmoothTransformation), image.size())
    _THUMBNAILS[key] = made
    while len(_THUMBNAILS) > THUMBNAILS_KEPT:
        _THUMBNAILS.popitem(last=False)
    return made


class _Thumbnail(QLabel):
    """One picture, scaled down; clicking it asks for the full size."""

    clicked = Signal()

    def __init__(self, small: QImage, size: QSize, theme: TranscriptTheme, ratio: float,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        pixmap = QPixmap.fromImage(small)
        pixmap.setDevicePixelRatio(ratio)
        self.setPixmap(pixmap)
        self.setToolTip(f"{describe(size)}: click to open it at full size")
        self.setAccessibleName(describe(size))
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
        ratio = self.devicePixelRatioF() or 1.0
        for url in urls:
            made = thumbnail(url, ratio)
            if made is None:
                unreadable += 1
                continue
            label = _Thumbnail(*made, theme, ratio, self)
            label.clicked.connect(lambda url=url: self.open_url(url))
            layout.addWidget(label)
            self._thumbnails.append(label)
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

    def open_url(self, url: str) -> PictureViewer | None:
        """Decode the picture again at full size and show it (None: it cannot be drawn)."""
        image = picture_image(url)
        return None if image is None else self.open_picture(image)

    def open_picture(self, image: QImage) -> PictureViewer:
        """Show ``image`` at full size in its own window (one at a time per strip)."""
        if self._viewer is not None:
            self._viewer.close()
        self._viewer = PictureViewer(image, self.window())
        self._viewer.destroyed.connect(lambda *_: setattr(self, "_viewer", None))
        self._viewer.show()
        return self._viewer
