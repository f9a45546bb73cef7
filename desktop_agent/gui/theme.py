"""Light and dark themes that follow the system's colour scheme.

The Fusion style draws the same everywhere and honours the palette, so one
light and one dark palette cover every platform. When the system switches
scheme while the app runs, the palette follows.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

log = logging.getLogger("desktop_agent.gui.theme")

_DARK = {
    QPalette.ColorRole.Window: "#26282b",
    QPalette.ColorRole.WindowText: "#e6e6e6",
    QPalette.ColorRole.Base: "#1e1f22",
    QPalette.ColorRole.AlternateBase: "#2b2d31",
    QPalette.ColorRole.ToolTipBase: "#323438",
    QPalette.ColorRole.ToolTipText: "#e6e6e6",
    QPalette.ColorRole.PlaceholderText: "#8b8f96",
    QPalette.ColorRole.Text: "#e6e6e6",
    QPalette.ColorRole.Button: "#2f3136",
    QPalette.ColorRole.ButtonText: "#e6e6e6",
    QPalette.ColorRole.BrightText: "#ff6b6b",
    QPalette.ColorRole.Link: "#6ea8fe",
    QPalette.ColorRole.Highlight: "#3d6fb6",
    QPalette.ColorRole.HighlightedText: "#ffffff",
}


def is_dark(app: QGuiApplication | None = None) -> bool:
    """Whether the system asks for a dark scheme (env DESKTOP_AGENT_THEME overrides)."""
    import os

    forced = os.environ.get("DESKTOP_AGENT_THEME", "").lower()
    if forced in ("dark", "light"):
        return forced == "dark"
    app = app or QGuiApplication.instance()  # type: ignore[assignment]
    if app is None:
        return False
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def dark_palette() -> QPalette:
    """The dark palette, with muted colours for disabled widgets."""
    palette = QPalette()
    for role, colour in _DARK.items():
        palette.setColor(role, QColor(colour))
    disabled = QColor("#7a7d83")
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return palette


def apply_theme(app: QApplication) -> None:
    """Use Fusion with the palette that matches the system scheme."""
    app.setStyle("Fusion")
    if is_dark(app):
        app.setPalette(dark_palette())
    else:
        app.setPalette(app.style().standardPalette())
    log.debug("theme applied (dark=%s)", is_dark(app))


def follow_system_theme(app: QApplication) -> None:
    """Apply the theme now and again whenever the system scheme changes."""
    apply_theme(app)
    app.styleHints().colorSchemeChanged.connect(lambda _scheme: apply_theme(app))
