"""The main window's actions, menus and toolbar, built in one place.

Each action becomes an attribute of the window (``window.new_action``...),
so tests and the window's own code trigger exactly what a menu click does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from desktop_agent.gui.icons import icon as lucide

if TYPE_CHECKING:
    from desktop_agent.gui.window.main_window import MainWindow


def _action(window: MainWindow, text: str, slot: Callable[[], Any], shortcut: Any = None,
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


def build_actions(window: MainWindow) -> None:
    """Create the window's actions (as attributes), then its menus and toolbar."""
    w = window
    w.new_action = _action(w, "&New conversation", w.new_conversation, "Ctrl+T", "plus")
    w.close_action = _action(w, "&Close tab", w.close_current_tab, "Ctrl+W",
                             "x")
    w.import_action = _action(w, "&Import…", w.transfer.ask_import, "Ctrl+O", "upload")
    w.export_action = _action(w, "&Export conversation…", w.transfer.ask_export_current, "Ctrl+S",
                              "download")
    w.export_md_action = _action(w, "Export as &Markdown…", w.transfer.ask_export_markdown)
    w.export_all_action = _action(w, "Export &all conversations…", w.transfer.ask_export_all)
    w.quit_action = _action(w, "&Quit", w.close, QKeySequence.StandardKey.Quit)
    w.stop_action = _action(w, "&Stop reply", w.stop_current, None, "circle-stop",
                            "Stop the reply (Esc)")
    w.regenerate_action = _action(w, "&Regenerate answer", w.regenerate_current, "Ctrl+R",
                                  "refresh-cw")
    w.rename_action = _action(w, "Re&name…", w.rename_current, "F2")
    w.settings_action = _action(w, "Conversation &settings…", w.open_settings, "Ctrl+,",
                                "sliders-horizontal")
    w.server_action = _action(w, "Choose &server and model…", w.servers.open_server_picker,
                              "Ctrl+L", "server")
    w.rediscover_action = _action(w, "Search for servers again", w.catalog.refresh, None,
                                  "refresh-cw")
    w.focus_approvals_action = _action(w, "Go to &approvals", w.approval_view.focus_approvals,
                                       "Ctrl+Shift+A")
    w.preferences_action = _action(w, "&Preferences…", w.chrome.open_preferences,
                                   QKeySequence.StandardKey.Preferences, "settings-2")
    w.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
    w.shortcuts_action = _action(w, "&Keyboard shortcuts", w.chrome.show_shortcuts, "F1",
                                 "keyboard")
    w.about_action = _action(w, "&About Desktop Agent", w.chrome.show_about, None, "info")
    w.about_action.setMenuRole(QAction.MenuRole.AboutRole)

    menu = w.menuBar()
    _fill(menu.addMenu("&File"), [w.new_action, w.close_action, None, w.import_action,
                                  w.export_action, w.export_md_action, w.export_all_action,
                                  None, w.preferences_action, None, w.quit_action])
    _fill(menu.addMenu("&Conversation"), [w.stop_action, w.regenerate_action, None,
                                          w.rename_action, w.settings_action])
    _fill(menu.addMenu("&Server"), [w.server_action, w.rediscover_action])
    _fill(menu.addMenu("&View"), [w.approval_dock.toggleViewAction(),
                                  w.sidebar.toggleViewAction(), w.focus_approvals_action])
    _fill(menu.addMenu("&Help"), [w.shortcuts_action, None, w.about_action])

    toolbar = w.toolbar = w.addToolBar("Main")
    toolbar.setObjectName("mainToolbar")
    toolbar.setMovable(False)
    toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    toolbar.addAction(w.new_action)
    toolbar.addSeparator()
    toolbar.addAction(w.settings_action)
    toolbar.addSeparator()
    toolbar.addAction(w.regenerate_action)
    toolbar.addAction(w.stop_action)
