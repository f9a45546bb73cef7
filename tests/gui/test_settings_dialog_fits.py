"""Conversation settings fit a small window: every setting can be reached, OK always shows."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication, QScrollArea, QWidget


def _in_sight(widget: QWidget, dialog: QWidget) -> bool:
    """Whether all of ``widget`` shows inside the dialog (not clipped away by a scroll)."""
    if widget.visibleRegion().isEmpty():
        return False
    top_left = widget.mapTo(dialog, QPoint(0, 0))
    return top_left.y() >= 0 and top_left.y() + widget.height() <= dialog.height()


def test_settings_scroll_inside_a_1024x640_window(qtbot: Any, make_window: Any) -> None:
    window = make_window()
    window.resize(1024, 640)
    dialog = window.open_settings()
    qtbot.waitExposed(dialog)
    QApplication.processEvents()
    try:
        # It opens no taller than the window it belongs to, and can be made smaller still.
        assert dialog.frameGeometry().height() <= window.frameGeometry().height()
        assert dialog.minimumSizeHint().height() <= 400
        ok = dialog.findChild(QWidget, "settingsButtons")
        assert ok is not None and _in_sight(ok, dialog)

        # The settings scroll; the last one (Revoke, at the bottom) comes into sight.
        assert dialog.findChild(QScrollArea, "settingsScroll") is not None
        dialog.scroll_to(dialog.revoke_button)
        QApplication.processEvents()
        assert _in_sight(dialog.revoke_button, dialog)
        assert _in_sight(ok, dialog)  # the buttons stay below the scrolled settings
        dialog.scroll_to(dialog.system_prompt)
        QApplication.processEvents()
        assert _in_sight(dialog.system_prompt, dialog)
    finally:
        dialog.reject()
