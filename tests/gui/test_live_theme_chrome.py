"""A theme switched live reaches the window's chrome: menu bar, toolbar and tab strip.

These three carry the chrome's stylesheet rather than the palette, so they
are the ones a live switch could leave behind while the rest of the window
(drawn from the palette) follows. Each is compared with the colours a window
started in that theme shows.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication, QWidget


def _background(widget: QWidget) -> str:
    """The colour of the bar's empty end (right of its items), as painted now."""
    image: QImage = widget.grab().toImage()
    return image.pixelColor(image.width() - 4, image.height() // 2).name()


def _selected_tab(window: Any) -> str:
    """The fill of the visible conversation's tab, beside its title."""
    bar = window.tabs.tabBar()
    rect = bar.tabRect(bar.currentIndex())
    image = bar.grab().toImage()
    return image.pixelColor(rect.left() + 4, rect.center().y()).name()


def _chrome(window: Any) -> dict[str, str]:
    QApplication.processEvents()
    return {"menu bar": _background(window.menuBar()),
            "toolbar": _background(window.menu_actions.toolbar),
            "tab strip": _background(window.tabs.tabBar()),
            "selected tab": _selected_tab(window)}


def _expected(dark: bool) -> dict[str, str]:
    from desktop_agent.gui.palette import palette_for

    colours = palette_for(dark)
    window = QColor(colours.window).name()
    return {"menu bar": window, "toolbar": window, "tab strip": window,
            "selected tab": QColor(colours.surface).name()}


@pytest.mark.parametrize(("start", "switch_to"), [("light", "dark"), ("dark", "light")])
def test_a_live_theme_switch_repaints_menu_bar_toolbar_and_tab_strip(
        qtbot: Any, make_window: Any, start: str, switch_to: str) -> None:
    from desktop_agent.gui.theme import set_preferences
    from desktop_agent.gui.window.preferences import Preferences

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    set_preferences(app, start)  # as the app starts: the theme first, then the window
    window = make_window()
    try:
        window.resize(1000, 640)
        window.new_conversation()  # two tabs: the strip has a selected and a plain tab
        qtbot.wait(20)
        assert _chrome(window) == _expected(start == "dark")

        window.chrome.apply_preferences(Preferences(theme=switch_to))  # as Preferences' OK
        assert _chrome(window) == _expected(switch_to == "dark")

        window.chrome.apply_preferences(Preferences(theme=start))  # and back again
        assert _chrome(window) == _expected(start == "dark")
    finally:
        window.chrome.apply_preferences(Preferences())
