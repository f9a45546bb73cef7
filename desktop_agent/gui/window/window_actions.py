"""The main window's actions, menus and toolbar, built in one place.

:func:`build_actions` gets what each entry does as :class:`ActionSlots` (the
window's methods and its parts' ones) and returns the actions as
:class:`WindowActions`, which the window keeps (``window.menu_actions``), so
tests and the window's own code trigger exactly what a menu click does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QToolBar

from desktop_agent.gui.icons import icon as lucide

Slot = Callable[[], object]


@dataclass(frozen=True)
class ActionSlots:
    """What each menu entry does (each called without arguments)."""

    new_conversation: Slot
    close_tab: Slot
    import_files: Slot
    export_conversation: Slot
    export_markdown: Slot
    export_all: Slot
    quit: Slot
    stop: Slot
    regenerate: Slot
    rename: Slot
    settings: Slot
    choose_server: Slot
    models: Slot
    mcp_servers: Slot
    rediscover: Slot
    focus_approvals: Slot
    preferences: Slot
    shortcuts: Slot
    about: Slot


@dataclass(frozen=True)
class WindowActions:
    """The window's actions (each also added to the window, for its shortcut) and toolbar."""

    new_action: QAction
    close_action: QAction
    import_action: QAction
    export_action: QAction
    export_md_action: QAction
    export_all_action: QAction
    quit_action: QAction
    stop_action: QAction
    regenerate_action: QAction
    rename_action: QAction
    settings_action: QAction
    server_action: QAction
    models_action: QAction
    mcp_servers_action: QAction
    rediscover_action: QAction
    focus_approvals_action: QAction
    preferences_action: QAction
    shortcuts_action: QAction
    about_action: QAction
    toolbar: QToolBar


def _action(window: QMainWindow, text: str, slot: Slot, shortcut: Any = None,
            icon: str | None = None, tip: str = "") -> QAction:
    action = QAction(text, window)
    if icon is not None:
        action.setIcon(lucide(icon))
        action.setProperty("lucideIcon", icon)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setToolTip(tip)
    action.triggered.connect(lambda _checked=False: slot())
    window.addAction(action)
    return action


def _fill(menu: QMenu, actions: Sequence[QAction | None]) -> None:
    for action in actions:
        if action is None:
            menu.addSeparator()
        else:
            menu.addAction(action)


def build_actions(window: QMainWindow, slots: ActionSlots,
                  dock_toggles: Sequence[QAction]) -> WindowActions:
    """Create the window's actions, then its menus and toolbar.

    Args:
        window: The window that gets the menus, the toolbar and the shortcuts.
        slots: What each entry does.
        dock_toggles: The docks' show/hide actions, for the View menu.
    """
    w, s = window, slots
    new = _action(w, "&New conversation", s.new_conversation, "Ctrl+T", "plus")
    close = _action(w, "&Close tab", s.close_tab, "Ctrl+W", "x")
    import_ = _action(w, "&Import…", s.import_files, "Ctrl+O", "upload")
    export = _action(w, "&Export conversation…", s.export_conversation, "Ctrl+S", "download")
    export_md = _action(w, "Export as &Markdown…", s.export_markdown)
    export_all = _action(w, "Export &all conversations…", s.export_all)
    quit_ = _action(w, "&Quit", s.quit, QKeySequence.StandardKey.Quit)
    stop = _action(w, "&Stop reply", s.stop, None, "circle-stop", "Stop the reply (Esc)")
    regenerate = _action(w, "&Regenerate answer", s.regenerate, "Ctrl+R", "refresh-cw")
    rename = _action(w, "Re&name…", s.rename, "F2")
    # One pair on every system: Ctrl+, is Preferences (the app), as on macOS and in most
    # apps; Ctrl+Shift+, the settings of this conversation. (Qt's standard Preferences
    # key is empty on Linux and Windows, and Ctrl+, used to open Conversation settings.)
    settings = _action(w, "Conversation &settings…", s.settings, "Ctrl+Shift+,",
                       "sliders-horizontal")
    settings.setShortcuts([QKeySequence("Ctrl+Shift+,"), QKeySequence("Ctrl+<")])
    server = _action(w, "Choose &server and model…", s.choose_server, "Ctrl+L", "server")
    models = _action(w, "&Models…", s.models, "Ctrl+Shift+M", "download",
                     "Models on this computer: run one, or download one")
    mcp_servers = _action(w, "M&CP servers…", s.mcp_servers, None, None,
                          "The MCP servers of config.json: state, what they offer, their log")
    rediscover = _action(w, "Search for servers again", s.rediscover, None, "refresh-cw")
    focus_approvals = _action(w, "Go to &approvals", s.focus_approvals, "Ctrl+Shift+A")
    preferences = _action(w, "&Preferences…", s.preferences, "Ctrl+,", "settings-2")
    preferences.setMenuRole(QAction.MenuRole.PreferencesRole)
    shortcuts = _action(w, "&Keyboard shortcuts", s.shortcuts, "F1", "keyboard")
    about = _action(w, "&About Desktop Agent", s.about, None, "info")
    about.setMenuRole(QAction.MenuRole.AboutRole)

    menu = w.menuBar()
    _fill(menu.addMenu("&File"), [new, close, None, import_, export, export_md, export_all,
                                  None, preferences, None, quit_])
    _fill(menu.addMenu("&Conversation"), [stop, regenerate, None, rename, settings])
    _fill(menu.addMenu("&Server"), [server, models, mcp_servers, None, rediscover])
    _fill(menu.addMenu("&View"), [*dock_toggles, focus_approvals])
    _fill(menu.addMenu("&Help"), [shortcuts, None, about])

    toolbar = w.addToolBar("Main")
    toolbar.setObjectName("mainToolbar")
    toolbar.setMovable(False)
    toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    toolbar.addAction(new)
    toolbar.addSeparator()
    toolbar.addAction(settings)
    toolbar.addSeparator()
    toolbar.addAction(regenerate)
    toolbar.addAction(stop)
    return WindowActions(
        new_action=new, close_action=close, import_action=import_, export_action=export,
        export_md_action=export_md, export_all_action=export_all, quit_action=quit_,
        stop_action=stop, regenerate_action=regenerate, rename_action=rename,
        settings_action=settings, server_action=server, models_action=models,
        mcp_servers_action=mcp_servers, rediscover_action=rediscover,
        focus_approvals_action=focus_approvals, preferences_action=preferences,
        shortcuts_action=shortcuts, about_action=about, toolbar=toolbar)
