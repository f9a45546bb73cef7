"""What the main window remembers between runs: open tabs, geometry, dock layout.

Open tabs (in the order shown, and which one was current) go to the store so
they travel with the conversations; geometry and dock layout go to an ini
file (``QSettings``) because they belong to this screen, not to the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings

from desktop_agent.gui.conversation.conversation_tab import ConversationTab

if TYPE_CHECKING:


    from desktop_agent.gui.window.main_window import MainWindow

OPEN_TABS_KEY = "open_tabs"


class WindowPersistence:
    """Save and restore open tabs, geometry and docks of the main window."""

    def __init__(self, window: MainWindow) -> None:
        self._window = window

    def restore_tabs(self) -> None:
        """Reopen the tabs that were open last time (or one new conversation)."""
        saved = self._window.store.get_setting(OPEN_TABS_KEY) or {}
        ids = [i for i in saved.get("ids", []) if isinstance(i, str)]
        current = saved.get("current")
        for conversation_id in ids:
            record = self._window.store.get_conversation(conversation_id)
            if record is not None:
                self._window.open_record(record, make_current=False)
        if current and (tab := self._window.tab_for(current)) is not None:
            self._window.tabs.setCurrentWidget(tab)
        if not self._window.tabs.count() and not saved:
            self._window.new_conversation()

    def save_open_tabs(self) -> None:
        if self._window._closed:
            return
        tabs = [self._window.tabs.widget(i) for i in range(self._window.tabs.count())]
        ids = [t.controller.conversation_id for t in tabs if isinstance(t, ConversationTab)]
        current = self._window.current_controller()
        self._window.store.set_setting(OPEN_TABS_KEY, {
            "ids": ids, "current": current.conversation_id if current else None})

    def restore_layout(self) -> None:
        geometry = self._window.window_settings.value("geometry")
        state = self._window.window_settings.value("window_state")
        if isinstance(geometry, QByteArray | bytes):
            self._window.restoreGeometry(QByteArray(geometry))
        if isinstance(state, QByteArray | bytes):
            self._window.restoreState(QByteArray(state))

    def save_state(self) -> None:
        """Save geometry, dock layout and open tabs (tab order as shown)."""
        self.save_open_tabs()
        self._window.window_settings.setValue("geometry", self._window.saveGeometry())
        self._window.window_settings.setValue("window_state", self._window.saveState())
        self._window.window_settings.sync()


def default_window_settings() -> QSettings:
    """The ini file in the data folder that keeps geometry and dock layout."""
    from desktop_agent.appdata.paths import data_dir

    return QSettings(str(data_dir() / "window.ini"), QSettings.Format.IniFormat)
