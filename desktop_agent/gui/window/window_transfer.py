"""The main window's File → Import / Export: asking for files and reporting results.

The reading and writing live in :mod:`.conversation_transfer` (no dialogs);
:class:`WindowTransfer`, which the window owns, adds what the window does
around it: ask where, put the outcome in the status bar (and the notice bar
when it failed), and open what was imported in tabs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from desktop_agent.gui.window import conversation_transfer
from desktop_agent.gui.window.transfer_dialogs import ask_for_files, file_name_for

if TYPE_CHECKING:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QMainWindow

    from desktop_agent.gui.conversation.open_tabs import OpenTabs
    from desktop_agent.gui.window.window_pages import NoticeBar
    from desktop_agent.store import ConversationRecord, Store


class WindowTransfer:
    """Import and export for the main window.

    Args:
        window: The main window: the file dialogs' parent and its status bar.
        tabs: The window's open conversations (export the visible one).
        store: What is exported from and imported into.
        settings: Where the file dialogs remember their last folder.
        notice: The window's notice bar, for a transfer that failed.
        open_record: Opens an imported conversation in a tab.
        list_changed: Shows the conversation list anew after an import.
    """

    def __init__(self, window: QMainWindow, tabs: OpenTabs, store: Store, settings: QSettings,
                 notice: NoticeBar, *, open_record: Callable[[ConversationRecord], object],
                 list_changed: Callable[[], None]) -> None:
        self._window = window
        self._tabs = tabs
        self._store = store
        self._settings = settings
        self._notice = notice
        self._open_record = open_record
        self._list_changed = list_changed

    def export_conversations(self, path: str, conversation_ids: list[str] | None) -> \
            conversation_transfer.TransferResult:
        """Export to a JSON file (None: all conversations) and report in the status bar."""
        result = conversation_transfer.export_json(self._store, path, conversation_ids)
        self._report(result.ok, result.message)
        return result

    def export_markdown(self, path: str, conversation_id: str) -> \
            conversation_transfer.TransferResult:
        """Save one conversation as Markdown."""
        result = conversation_transfer.export_markdown(self._store, path, conversation_id)
        self._report(result.ok, result.message)
        return result

    def import_files(self, paths: list[str]) -> conversation_transfer.TransferResult:
        """Import files as new conversations and open them in tabs."""
        result = conversation_transfer.import_files(self._store, paths)
        self._report(result.ok, result.message)
        for record in result.imported:
            self._open_record(record)
        self._list_changed()
        return result

    def _report(self, ok: bool, message: str) -> None:
        self._window.statusBar().showMessage(message, 8000)
        if not ok:
            self._notice.show_message(message)

    def ask_import(self) -> None:
        """Choose files to import (File → Import)."""
        ask_for_files(self._window, "Import conversations", False, "JSON files (*.json)", "",
                      lambda paths: self.import_files(list(paths)),
                      settings=self._settings)

    def ask_export_current(self) -> None:
        """Choose where to export the visible conversation."""
        controller = self._tabs.current_controller()
        if controller is not None:
            conversation_id = controller.conversation_id
            ask_for_files(self._window, "Export conversation", True, "JSON files (*.json)",
                          file_name_for(controller.title, ".json"),
                          lambda paths: self.export_conversations(paths[0], [conversation_id]),
                          settings=self._settings)

    def ask_export_markdown(self) -> None:
        """Choose where to save the visible conversation as Markdown."""
        controller = self._tabs.current_controller()
        if controller is not None:
            conversation_id = controller.conversation_id
            ask_for_files(self._window, "Export as Markdown", True, "Markdown (*.md)",
                          file_name_for(controller.title, ".md"),
                          lambda paths: self.export_markdown(paths[0], conversation_id),
                          settings=self._settings)

    def ask_export_selected(self, conversation_ids: list[str]) -> None:
        """Choose where to export the conversations selected in the sidebar."""
        if conversation_ids:
            ask_for_files(self._window, "Export conversations", True, "JSON files (*.json)",
                          "desktop-agent-conversations.json",
                          lambda paths: self.export_conversations(paths[0], conversation_ids),
                          settings=self._settings)

    def ask_export_all(self) -> None:
        """Choose where to export every conversation."""
        ask_for_files(self._window, "Export all conversations", True, "JSON files (*.json)",
                      "desktop-agent-export.json",
                      lambda paths: self.export_conversations(paths[0], None),
                      settings=self._settings)
