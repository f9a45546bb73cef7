"""Fonts and colours for the transcript's small widgets, set through palettes.

Why palettes and fonts rather than a style sheet: see ``painted_panel.py``;
the look stays theme-driven because every colour comes from the theme, which
comes from the application palette.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QToolButton, QWidget

from desktop_agent.gui.transcript.painted_panel import set_text_color
from desktop_agent.gui.transcript.theme import TranscriptTheme


def scaled_font(widget: QWidget, *, scale: float = 1.0, bold: bool = False) -> QFont:
    """The widget's font, resized by ``scale`` and optionally bold."""
    font = QFont(widget.font())
    if scale != 1.0 and font.pointSizeF() > 0:
        font.setPointSizeF(font.pointSizeF() * scale)
    font.setBold(bold)
    return font


def muted_label(
    text: str, theme: TranscriptTheme, parent: QWidget, *, bold: bool = False, scale: float = 1.0
) -> QLabel:
    """A label in the theme's secondary text colour."""
    label = QLabel(text, parent)
    set_text_color(label, theme.muted_text)
    label.setFont(scaled_font(label, scale=scale, bold=bold))
    return label


def role_label(text: str, theme: TranscriptTheme, parent: QWidget) -> QLabel:
    """The "You" / "Assistant" caption above a message."""
    return muted_label(text, theme, parent, bold=True, scale=0.92)


def action_button(
    text: str, theme: TranscriptTheme, parent: QWidget, slot: Callable[[], object]
) -> QToolButton:
    """A quiet text button under a message (Copy, Edit, Regenerate)."""
    button = QToolButton(parent)
    button.setText(text)
    button.setAutoRaise(True)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setFont(scaled_font(button, scale=0.92))
    set_text_color(button, theme.muted_text)
    button.clicked.connect(slot)
    return button
