"""Colours for the transcript, derived from the application palette.

Why: the window follows the system's light or dark theme by way of the
QPalette. Nothing here is a fixed colour except the hue of errors (a palette
has no "error" role); every other colour is the palette's own or a blend of
two palette roles, so a theme change only needs a new :class:`TranscriptTheme`.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette

LIGHT_CODE_STYLE = "default"
DARK_CODE_STYLE = "github-dark"


def _blend(first: QColor, second: QColor, amount: float) -> QColor:
    """Mix ``amount`` of ``second`` into ``first``."""
    keep = 1.0 - amount
    return QColor(
        round(first.red() * keep + second.red() * amount),
        round(first.green() * keep + second.green() * amount),
        round(first.blue() * keep + second.blue() * amount),
    )


@dataclass(frozen=True)
class TranscriptTheme:
    """Named colours (``#rrggbb``) for every part of the transcript."""

    dark: bool
    text: str
    muted_text: str
    background: str
    user_bubble: str
    user_bubble_text: str
    card_background: str
    border: str
    code_background: str
    code_header: str
    inline_code_background: str
    link: str
    accent: str
    error_text: str
    error_background: str
    code_style: str

    @classmethod
    def from_palette(cls, palette: QPalette) -> TranscriptTheme:
        """Build the colours that fit ``palette`` (light or dark)."""
        # The reading surface is the palette's Base (the window's Window is the chrome).
        window = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.WindowText)
        base = palette.color(QPalette.ColorRole.AlternateBase)
        highlight = palette.color(QPalette.ColorRole.Highlight)
        dark = window.lightness() < text.lightness()
        error_hue = QColor("#ff7b72") if dark else QColor("#b3261e")
        return cls(
            dark=dark,
            text=text.name(),
            muted_text=_blend(text, window, 0.45).name(),
            background=window.name(),
            user_bubble=_blend(window, highlight, 0.22 if dark else 0.14).name(),
            user_bubble_text=text.name(),
            card_background=_blend(window, base, 0.5).name()
            if base != window
            else _blend(window, text, 0.04).name(),
            border=_blend(window, text, 0.16).name(),
            code_background=_blend(window, text, 0.07 if dark else 0.045).name(),
            code_header=_blend(window, text, 0.12 if dark else 0.085).name(),
            inline_code_background=_blend(window, text, 0.12 if dark else 0.08).name(),
            link=palette.color(QPalette.ColorRole.Link).name(),
            accent=highlight.name(),
            error_text=error_hue.name(),
            error_background=_blend(window, error_hue, 0.12).name(),
            code_style=DARK_CODE_STYLE if dark else LIGHT_CODE_STYLE,
        )
