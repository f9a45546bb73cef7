"""Qt's pixmap cache stays small all day, and the icons do not depend on it.

Why it matters: the Fusion style keeps a pixmap of each control it drew at each
size, so a window whose controls take sizes seen once (as a transcript's do over
a day of turns) fills Qt's 10 MB default cache; the app keeps it to a quarter of a megabyte.
"""

from __future__ import annotations

import ctypes
from typing import Any

from PySide6.QtCore import QSize
from PySide6.QtGui import QPixmap, QPixmapCache
from PySide6.QtWidgets import QPushButton

from desktop_agent.gui import app as gui_app
from desktop_agent.gui import icons


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _c_heap_in_use() -> int:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    return int(libc.mallinfo2().uordblks)


def test_buttons_drawn_at_a_thousand_widths_keep_the_c_heap_within_the_cache_limit(
        qapp: Any) -> None:
    gui_app.create_application(["desktop-agent"])
    QPixmapCache.clear()
    button = QPushButton("Show more")
    canvas = QPixmap(1200, 40)
    button.render(canvas)
    before = _c_heap_in_use()
    for width in range(60, 1060):
        button.resize(width, 30)
        button.render(canvas)
    grown_mb = (_c_heap_in_use() - before) / 1e6

    # With Qt's default cache every width stays: ~10.8 MB for these 1,000 sizes.
    assert QPixmapCache.cacheLimit() == gui_app.STYLE_PIXMAP_CACHE_KB
    assert grown_mb < 3.0


def test_an_icon_is_drawn_once_even_when_the_style_cache_is_emptied(qapp: Any) -> None:
    size = QSize(20, 20)
    first = icons.icon("copy").pixmap(size)
    QPixmapCache.clear()
    again = icons.icon("copy").pixmap(size)

    assert not first.isNull()
    assert again.cacheKey() == first.cacheKey()
