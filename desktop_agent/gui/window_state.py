"""What the main window remembers between runs: open tabs, geometry, dock layout.

Open tabs (in the order shown, and which one was current) go to the store so
they travel with the conversations; geometry and dock layout go to an ini
file (``QSettings``) because they belong to this screen, not to the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QSettings

from .conversation_tab import ConversationTab

if TYPE_CHECKING:
    from PySide6.QtWidgets import QTabWidget

    from desktop_agent.store import Store

    from .conversation_controller import ConversationController

OPEN_TABS_KEY = "open_tabs"


class WindowStateMixin:
    """Save and restore for :class:`~desktop_agent.gui.main_window.MainWindow`."""

    store: Store
    tabs: QTabWidget
    _closed: bool
    _window_settings: QSettings

    if TYPE_CHECKING:  # provided by MainWindow / QMainWindow
        def current_controller(self) -> ConversationController | None: ...
        def tab_for(self, conversation_id: str) -> ConversationTab | None: ...
        def new_conversation(self) -> ConversationController: ...
        def _open_record(self, record: Any, *,
                         make_current: bool = True) -> ConversationController: ...
        def restoreGeometry(self, geometry: QByteArray) -> bool: ...
        def restoreState(self, state: QByteArray) -> bool: ...
        def saveGeometry(self) -> QByteArray: ...
        def saveState(self) -> QByteArray: ...

    def restore_tabs(self) -> None:
        """Reopen the tabs that were open last time (or one new conversation)."""
        saved = self.store.get_setting(OPEN_TABS_KEY) or {}
        ids = [i for i in saved.get("ids", []) if isinstance(i, str)]
        current = saved.get("current")
        for conversation_id in ids:
            record = self.store.get_conversation(conversation_id)
            if record is not None:
                self._open_record(record, make_current=False)
        if current and (tab := self.tab_for(current)) is not None:
            self.tabs.setCurrentWidget(tab)
        if not self.tabs.count() and not saved:
            self.new_conversation()

    def _save_open_tabs(self) -> None:
        if self._closed:
            return
        tabs = [self.tabs.widget(i) for i in range(self.tabs.count())]
        ids = [t.controller.conversation_id for t in tabs if isinstance(t, ConversationTab)]
        current = self.current_controller()
        self.store.set_setting(OPEN_TABS_KEY, {
            "ids": ids, "current": current.conversation_id if current else None})

    def _restore_layout(self) -> None:
        geometry = self._window_settings.value("geometry")
        state = self._window_settings.value("window_state")
        if isinstance(geometry, QByteArray | bytes):
            self.restoreGeometry(QByteArray(geometry))
        if isinstance(state, QByteArray | bytes):
            self.restoreState(QByteArray(state))

    def save_state(self) -> None:
        """Save geometry, dock layout and open tabs (tab order as shown)."""
        self._save_open_tabs()
        self._window_settings.setValue("geometry", self.saveGeometry())
        self._window_settings.setValue("window_state", self.saveState())
        self._window_settings.sync()


def default_window_settings() -> QSettings:
    """The ini file in the data folder that keeps geometry and dock layout."""
    from desktop_agent.paths import data_dir

    return QSettings(str(data_dir() / "window.ini"), QSettings.Format.IniFormat)
