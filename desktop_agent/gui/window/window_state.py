"""What the main window remembers between runs: open tabs, geometry, dock layout.

Open tabs (in the order shown, and which one was current) go to the store so
they travel with the conversations; geometry and dock layout go to an ini
file (``QSettings``) because they belong to this screen, not to the data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow

    from desktop_agent.gui.conversation.open_tabs import OpenTabs
    from desktop_agent.store import ConversationRecord, Store

OPEN_TABS_KEY = "open_tabs"


class WindowPersistence:
    """Save and restore open tabs, geometry and docks of the main window.

    Args:
        window: The main window whose geometry and dock layout are kept.
        tabs: The window's open conversations.
        store: Where the open tabs are kept.
        settings: Where geometry and dock layout are kept.
        reopen: Opens a stored conversation in a tab: shown (the tab that was current
            last time), or in the background.
        new_conversation: Starts a conversation, for a first run with no tabs saved.
    """

    def __init__(self, window: QMainWindow, tabs: OpenTabs, store: Store, settings: QSettings,
                 *, reopen: Callable[[ConversationRecord, bool], object],
                 new_conversation: Callable[[], object]) -> None:
        self._window = window
        self._tabs = tabs
        self._store = store
        self._settings = settings
        self._reopen = reopen
        self._new_conversation = new_conversation
        self._final_saved = False
        self._restoring = False
        self._restored = False

    @property
    def restoring(self) -> bool:
        """True while :meth:`restore_tabs` reopens the saved tabs."""
        return self._restoring

    def restore_tabs(self) -> None:
        """Reopen the tabs that were open last time (or one new conversation).

        Only the tab that was current is opened shown; the others wait in the
        background until first shown. While tabs are reopened, the tab widget's
        current tab is for a moment the first one added: the window does not load
        it for that (see :attr:`restoring`), and the list is not saved then, so the
        current tab of last time is kept even if the app is killed before it closes.
        """
        saved = self._store.get_setting(OPEN_TABS_KEY) or {}
        ids = [i for i in saved.get("ids", []) if isinstance(i, str)]
        current = saved.get("current")
        self._restoring = True
        try:
            for conversation_id in ids:
                record = self._store.get_conversation(conversation_id)
                if record is not None:
                    self._reopen(record, conversation_id == current)
        finally:
            self._restoring = False
            self._restored = True
        if ids:
            self.save_open_tabs()  # without the conversations deleted meanwhile
        if not self._tabs.widget.count() and not saved:
            self._new_conversation()

    def save_open_tabs(self) -> None:
        """Remember the open tabs (until the window's last save, when closing).

        Not before :meth:`restore_tabs` has run: a window closed (or a tab opened)
        before its saved tabs were reopened, after its first paint, would save over
        them.
        """
        if self._final_saved or self._restoring or not self._restored:
            return  # tabs closed while the window shuts down stay in the saved list
        ids = [t.controller.conversation_id for t in self._tabs.all()]
        current = self._tabs.current_controller()
        self._store.set_setting(OPEN_TABS_KEY, {
            "ids": ids, "current": current.conversation_id if current else None})

    def restore_layout(self) -> None:
        """Put the window and its docks where they were."""
        geometry = self._settings.value("geometry")
        state = self._settings.value("window_state")
        if isinstance(geometry, QByteArray | bytes):
            self._window.restoreGeometry(QByteArray(geometry))
        if isinstance(state, QByteArray | bytes):
            self._window.restoreState(QByteArray(state))

    def save_state(self) -> None:
        """Save geometry, dock layout and open tabs (tab order as shown), the last time."""
        self.save_open_tabs()
        self._final_saved = True
        self._settings.setValue("geometry", self._window.saveGeometry())
        self._settings.setValue("window_state", self._window.saveState())
        self._settings.sync()


def default_window_settings() -> QSettings:
    """The ini file in the data folder that keeps geometry and dock layout."""
    from desktop_agent.appdata.paths import data_dir

    return QSettings(str(data_dir() / "window.ini"), QSettings.Format.IniFormat)
