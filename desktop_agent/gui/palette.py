"""The window's colours, light and dark, in one place.

Why one module: every colour the window paints (the QPalette, the stylesheet in
``resources/theme.qss``, the tinted icons, the transcript) is read from a
:class:`Palette` here, so a theme is one table and switching theme is one call.
The values are a calm neutral grey with one blue accent (like the chat apps
people already know); errors, warnings and success have their own hues because
a QPalette has no roles for them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Palette:
    """Named colours (``#rrggbb``) of one theme.

    Attributes:
        dark: Whether this is the dark theme.
        window: Behind everything (menus, docks, tab bar).
        surface: The conversation's reading surface and input fields.
        raised: Cards and the composer, one step above ``surface``.
        sunken: Sidebars and docks.
        border: Hairlines between areas and around fields.
        text: Body text.
        muted: Secondary text (times, hints, the status line).
        accent: The one highlight colour (selection, the Send button, focus).
        accent_text: Text on ``accent``.
        accent_soft: A quiet tint of the accent (hover, selected rows).
        danger: Errors, Deny, expired.
        warning: Unsandboxed calls, countdowns running out.
        success: Done, sandboxed.
    """

    dark: bool
    window: str
    surface: str
    raised: str
    sunken: str
    border: str
    text: str
    muted: str
    accent: str
    accent_text: str
    accent_soft: str
    danger: str
    warning: str
    success: str

    def as_dict(self) -> dict[str, str]:
        """The colours by name, for the stylesheet template."""
        return {k: v for k, v in asdict(self).items() if isinstance(v, str)}


LIGHT = Palette(
    dark=False,
    window="#f4f4f5",
    surface="#ffffff",
    raised="#ffffff",
    sunken="#f4f4f5",
    border="#e0e0e4",
    text="#1f2328",
    muted="#6b7078",
    accent="#2f6fde",
    accent_text="#ffffff",
    accent_soft="#e3ecfb",
    danger="#c4321f",
    warning="#a15c00",
    success="#1d7f3c",
)

DARK = Palette(
    dark=True,
    window="#1b1c1f",
    surface="#212226",
    raised="#2a2b30",
    sunken="#1b1c1f",
    border="#35373d",
    text="#e7e8ea",
    muted="#9a9ea6",
    accent="#5b8ef0",
    accent_text="#ffffff",
    accent_soft="#2b3a57",
    danger="#ff7b6e",
    warning="#e3a44a",
    success="#57c27a",
)


def palette_for(dark: bool) -> Palette:
    """The light or the dark palette."""
    return DARK if dark else LIGHT
