"""The window's icons: bundled Lucide SVGs, tinted to the current theme.

Why an icon engine: Lucide draws with ``currentColor``; Qt's SVG engine would
paint it black, unreadable on the dark theme. :class:`TintedSvgEngine` swaps
``currentColor`` for the palette's text colour (muted when disabled, like the
label beside it, fixed tints included) and renders the vector at whatever size
and pixel ratio the widget asks, so one file serves every size and both themes.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QByteArray, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QIcon, QIconEngine, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QAbstractButton, QComboBox, QWidget

from desktop_agent.appdata.resource_files import resource_path
from desktop_agent.gui.palette import Palette, palette_for

_current: Palette = palette_for(False)

#: Every icon pixmap drawn, by name, tint and size: a few hundred small pixmaps at most.
_drawn: dict[tuple[str, str, int, int], QPixmap] = {}


def set_icon_palette(palette: Palette) -> None:
    """Tint icons made from now on with ``palette`` (the theme calls this)."""
    global _current
    _current = palette


@cache
def _svg_source(name: str) -> bytes:
    path = resource_path(f"icons/lucide/{name}.svg")
    return path.read_bytes() if path.exists() else b""


@cache
def _renderer(name: str, colour: str) -> QSvgRenderer:
    data = _svg_source(name).replace(b"currentColor", colour.encode())
    return QSvgRenderer(QByteArray(data))


class TintedSvgEngine(QIconEngine):
    """Paints one Lucide icon in the colours of a palette."""

    def __init__(self, name: str, palette: Palette, colour: str | None = None) -> None:
        super().__init__()
        self._name = name
        self._palette = palette
        self._colour = colour

    def _colour_for(self, mode: QIcon.Mode) -> str:
        if mode == QIcon.Mode.Disabled:
            # A disabled button turns its background to the border colour (theme.qss), so
            # an icon of fixed tint goes muted like the button's text, or it would vanish.
            return self._palette.muted
        # Selected rows use the soft accent tint (see theme.qss): the text colour reads there.
        return self._colour or self._palette.text

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode,
              state: QIcon.State) -> None:
        """Draw the vector into ``rect``."""
        # A disabled icon is drawn in full muted ink, the colour of the disabled label beside it.
        _renderer(self._name, self._colour_for(mode)).render(painter, rect)

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        """A transparent pixmap with the icon drawn at ``size``, drawn once per tint and size.

        Why kept: Qt asks an engine for its pixmap at every paint of a button, and
        the same few icons (copy, retry, edit...) sit on every message: opening a
        conversation drew ~50 of them from their SVG each time. Why in a table of
        their own rather than Qt's pixmap cache: that cache is kept small (see
        ``gui.app.STYLE_PIXMAP_CACHE_KB``) and churns with the style's pixmaps, and
        the icons are a bounded set (names x tints x sizes) worth keeping whole.
        """
        colour = self._colour_for(mode)
        key = (self._name, colour, size.width(), size.height())
        kept = _drawn.get(key)
        if kept is not None:
            return kept
        pixmap = QPixmap(size)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        _renderer(self._name, colour).render(painter, QRectF(0, 0, size.width(), size.height()))
        painter.end()
        _drawn[key] = pixmap
        return pixmap

    def clone(self) -> QIconEngine:
        """A copy (Qt copies engines when icons are copied)."""
        return TintedSvgEngine(self._name, self._palette, self._colour)

    def key(self) -> str:
        """The engine's kind."""
        return "desktop-agent-tinted-svg"

    def isNull(self) -> bool:
        """True when the SVG is missing."""
        return not _svg_source(self._name)


def icon(name: str, colour: str | None = None) -> QIcon:
    """The Lucide icon ``name`` (e.g. ``"send"``) tinted for the current theme.

    Args:
        name: The file name in ``resources/icons/lucide`` without ``.svg``.
        colour: A fixed colour (e.g. the palette's ``accent_text`` for an icon
            on an accent button); default: the theme's text colour.
    """
    return QIcon(TintedSvgEngine(name, _current, colour))


def set_icon(target: QAbstractButton, name: str, role: str | None = None) -> None:
    """Give a button a Lucide icon and remember which, so :func:`retint` can redraw it.

    Args:
        target: The button.
        name: The icon's file name without ``.svg``.
        role: A palette colour name for a fixed tint (e.g. ``"accent_text"`` on an
            accent button); default: the theme's text colour.
    """
    target.setProperty("lucideIcon", name)
    target.setProperty("lucideRole", role or "")
    target.setIcon(icon(name, getattr(_current, role) if role else None))


ICON_NAME_ROLE = Qt.ItemDataRole.UserRole + 17
"""The item data role a combo box item keeps its Lucide icon's name under."""


def set_item_icon(box: QComboBox, index: int, name: str) -> None:
    """Give a combo box item a Lucide icon and remember which, so :func:`retint` redraws it.

    Why remembered: an icon is tinted when made, and a combo box keeps its items'
    icons; after a live switch to the dark theme the permission mode's shield
    stayed in the light theme's dark ink on the dark header.
    """
    box.setItemData(index, name, ICON_NAME_ROLE)
    box.setItemIcon(index, icon(name))


def retint(root: QWidget) -> None:
    """Redraw every remembered icon under ``root`` in the current theme's colours."""
    for button in root.findChildren(QAbstractButton):
        name = button.property("lucideIcon")
        if isinstance(name, str) and name:
            role = button.property("lucideRole")
            set_icon(button, name, role if isinstance(role, str) and role else None)
    for box in root.findChildren(QComboBox):
        for index in range(box.count()):
            name = box.itemData(index, ICON_NAME_ROLE)
            if isinstance(name, str) and name:
                box.setItemIcon(index, icon(name))


def current_palette() -> Palette:
    """The palette icons are tinted with right now."""
    return _current
