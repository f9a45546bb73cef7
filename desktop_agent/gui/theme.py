"""Light and dark themes: the system's choice, or the one picked in Preferences.

The Fusion style draws the same everywhere and honours the palette, so one
:class:`~.palette.Palette` per theme gives the QPalette, the stylesheet
(``resources/theme.qss``, a template of palette names) and the icon tint.
When the system switches scheme while the app runs and the person chose
"system", the window follows.
"""

from __future__ import annotations

import logging
import os
import weakref
from string import Template

import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QProxyStyle,
    QStyle,
    QStyleOption,
    QWidget,
)

from desktop_agent.appdata.resource_files import resource_path
from desktop_agent.gui.icons import set_icon_palette
from desktop_agent.gui.palette import Palette, palette_for

log = logging.getLogger("desktop_agent.gui.theme")

THEME_CHOICES = ("system", "light", "dark")
DEFAULT_FONT_PT = 10.0

_choice = "system"
_font_pt = DEFAULT_FONT_PT
_sheet = ""
#: Widgets that carry the stylesheet (the window's chrome), re-styled on a theme change.
_styled: weakref.WeakSet[QWidget] = weakref.WeakSet()


class ThemeSignals(QObject):
    """Tells widgets that keep their own colours (icons, transcript) to re-read them.

    Signals:
        changed(bool): The theme was applied; True when it is dark.
    """

    changed = Signal(bool)


signals: ThemeSignals | None = None


def theme_signals() -> ThemeSignals:
    """The one notifier (created on first use, after the QApplication)."""
    global signals
    if signals is None:
        signals = ThemeSignals()
    return signals


_fusion_icon = QProxyStyle.standardIcon


class QuietFusion(QProxyStyle):
    """Fusion without the legacy stock icons on dialog buttons (OK, Cancel...).

    Why :meth:`standardIcon` and not ``styleHint`` (``SH_DialogButtonBox_ButtonsHaveIcons``):
    Qt asks a style for hints thousands of times while it lays out and paints widgets
    (~1,750 times to open a conversation tab: every text view is a scroll area that
    asks about transient scroll bars), and a method defined in Python turns every
    one of those questions into a call into Python; a method left to Qt is answered
    in C++. A button box asks for its buttons' icons once per button, handing itself
    as the widget; the window's own uses of the same icons (the server picker's
    marks, the page's close button) hand no button box and keep them.
    """

    def standardIcon(self, standardIcon: QStyle.StandardPixmap,
                     option: QStyleOption | None = None,
                     widget: QWidget | None = None) -> QIcon:
        """No icon for a dialog button box's buttons; everything else as Fusion."""
        if widget is not None and widget.inherits("QDialogButtonBox"):
            return QIcon()
        return _fusion_icon(self, standardIcon, option, widget)


def is_dark(app: QGuiApplication | None = None) -> bool:
    """Whether the dark theme applies: env DESKTOP_AGENT_THEME, then Preferences, then system."""
    forced = os.environ.get("DESKTOP_AGENT_THEME", "").lower()
    if forced in ("dark", "light"):
        return forced == "dark"
    if _choice in ("dark", "light"):
        return _choice == "dark"
    app = app or QGuiApplication.instance()  # type: ignore[assignment]
    if app is None:
        return False
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def qpalette(colours: Palette) -> QPalette:
    """The QPalette made from a theme's colours (disabled text muted)."""
    roles = QPalette.ColorRole
    table = {
        roles.Window: colours.window, roles.WindowText: colours.text,
        roles.Base: colours.surface, roles.AlternateBase: colours.sunken,
        roles.ToolTipBase: colours.raised, roles.ToolTipText: colours.text,
        roles.PlaceholderText: colours.muted, roles.Text: colours.text,
        roles.Button: colours.raised, roles.ButtonText: colours.text,
        roles.BrightText: colours.danger, roles.Link: colours.accent,
        roles.Highlight: colours.accent, roles.HighlightedText: colours.accent_text,
        roles.Mid: colours.border, roles.Midlight: colours.border,
    }
    palette = QPalette()
    for role, colour in table.items():
        palette.setColor(role, QColor(colour))
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(colours.muted))
    return palette


def dark_palette() -> QPalette:
    """The dark QPalette."""
    return qpalette(palette_for(True))


def stylesheet(colours: Palette, font_pt: float = DEFAULT_FONT_PT) -> str:
    """The application stylesheet filled in with ``colours``."""
    path = resource_path("theme.qss")
    template = Template(path.read_text(encoding="utf-8") if path.exists() else "")
    return template.safe_substitute(colours.as_dict(), font_pt=f"{font_pt:g}",
                                    font_large_pt=f"{font_pt * 1.15:.1f}")


def current_colours(app: QGuiApplication | None = None) -> Palette:
    """The palette in use now."""
    return palette_for(is_dark(app))


def style_chrome(*widgets: QWidget) -> None:
    """Give the window's chrome (bars, docks, header, composer, dialogs) the stylesheet.

    Why not the whole application: a stylesheet on an ancestor makes Qt style every
    descendant through QStyleSheetStyle, and the transcript's hundreds of widgets then
    cost memory and time (about 7 MB per open tab). The transcript is drawn from the
    palette instead, so the sheet goes only where it is needed.
    """
    for widget in widgets:
        _styled.add(widget)
        widget.setStyleSheet(_sheet)


class _StyleWhenShown(QObject):
    """Gives a widget the chrome's stylesheet at its first Show event, then goes away."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show and isinstance(watched, QWidget):
            watched.removeEventFilter(self)
            style_chrome(watched)
            self.deleteLater()
        return False


def style_chrome_when_shown(*widgets: QWidget) -> None:
    """Like :func:`style_chrome`, but each widget gets the sheet when it is first shown.

    Why: Qt parses the sheet again for every widget it is set on (about 180 kB each,
    ``bench/tab_memory.py``), and much of the chrome is hidden in an idle window: the
    approval dock with nothing to approve, the empty-window page and the notice bar
    when tabs are open, the chrome of tabs restored in the background. A widget is
    shown before it is painted, so nobody sees it unstyled; a theme changed meanwhile
    is the one it gets.
    """
    for widget in widgets:
        if widget.isVisible():
            style_chrome(widget)
        else:
            widget.installEventFilter(_StyleWhenShown(widget))


def apply_theme(app: QApplication) -> None:
    """Use Fusion with the palette, stylesheet, font size and icon tint of the theme."""
    global _sheet
    dark = is_dark(app)
    colours = palette_for(dark)
    if not isinstance(app.style(), QuietFusion):
        app.setStyle(QuietFusion("Fusion"))
    set_icon_palette(colours)
    font = QFont(app.font())
    font.setPointSizeF(_font_pt)
    app.setFont(font)
    app.setPalette(qpalette(colours))
    _sheet = stylesheet(colours, _font_pt)
    for widget in list(_styled):
        if shiboken6.isValid(widget):  # its C++ side may be gone before the wrapper
            widget.setStyleSheet(_sheet)
        else:
            _styled.discard(widget)
    _repropagate_palettes(app)
    theme_signals().changed.emit(dark)
    log.debug("theme applied (dark=%s, %.1f pt)", dark, _font_pt)


def _repropagate_palettes(app: QApplication) -> None:
    """Give every widget that inherits its palette the new one, parents first.

    Why: Qt passes a parent's new palette down only to children not marked
    ``WA_StyleSheet`` (set on widgets near a styled one, such as the tab widget
    whose tab bar carries the chrome's sheet), and a widget that re-read its
    parent's palette before that parent changed keeps the old colours. The
    transcripts under the tab widget then stayed in the old theme until a
    restart. Resetting such a widget's (not explicitly set) palette makes it
    inherit again; ``findChildren`` lists parents before their children.
    """
    QCoreApplication.sendPostedEvents()  # palette-change events still queued land first
    for top in app.topLevelWidgets():
        for widget in [top, *top.findChildren(QWidget)]:
            if widget.testAttribute(Qt.WidgetAttribute.WA_StyleSheet) \
                    and not widget.testAttribute(Qt.WidgetAttribute.WA_SetPalette) \
                    and not widget.styleSheet():
                widget.setPalette(QPalette())


def set_preferences(app: QApplication, choice: str, font_pt: float | None = None) -> None:
    """Apply the theme picked in Preferences (``system``, ``light`` or ``dark``)."""
    global _choice, _font_pt
    _choice = choice if choice in THEME_CHOICES else "system"
    if font_pt is not None:
        _font_pt = max(8.0, min(20.0, float(font_pt)))
    apply_theme(app)


def follow_system_theme(app: QApplication) -> None:
    """Apply the theme now and again whenever the system scheme changes."""
    apply_theme(app)
    app.styleHints().colorSchemeChanged.connect(lambda _scheme: apply_theme(app))
