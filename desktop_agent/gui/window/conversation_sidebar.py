"""The "Conversations" dock: every conversation, newest first, searchable.

Typing in the search field filters by title and message text (the store's
full-text search); a click or Enter opens a conversation in a tab, and the
selection follows the tab the person is looking at. Relative times ("5 min
ago") are refreshed every minute.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QItemSelectionModel, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from desktop_agent.store import Store

PAGE_SIZE = 200
SEARCH_DELAY_MS = 200
#: The sidebar never gets narrower than this (titles stay readable at 1024 px).
MIN_WIDTH = 200
#: How often relative times ("5 min ago") are brought up to date.
AGE_REFRESH_MS = 60_000


def _age(epoch: float, now: float) -> str:
    seconds = max(0.0, now - epoch)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return time.strftime("%Y-%m-%d", time.localtime(epoch))


class ConversationSidebar(QDockWidget):
    """Lists conversations from the store.

    Signals:
        open_requested(str): The person wants this conversation id in a tab.
        delete_requested(str): The person confirmed deleting this conversation.
        export_requested(list): Export these conversation ids (the selection).
        rename_requested(str): The person wants to rename this conversation.
    """

    open_requested = Signal(str)
    delete_requested = Signal(str)
    export_requested = Signal(list)
    rename_requested = Signal(str)

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__("Conversations", parent)
        self.setObjectName("conversationsDock")
        self.setMinimumWidth(MIN_WIDTH)
        self._store = store
        self._active: str | None = None
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations")
        self.search.setAccessibleName("Search conversations")
        self.search.setClearButtonEnabled(True)
        self._debounce = QTimer(self)
        self.search.textChanged.connect(lambda _t: self._debounce.start())
        self.search.returnPressed.connect(self._open_first)
        layout.addWidget(self.search)
        self.list = QListWidget()
        self.list.setObjectName("conversationList")
        self.list.setAccessibleName("Conversations")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setSpacing(2)
        self.list.itemActivated.connect(self._on_activated)
        self.list.itemClicked.connect(self._on_clicked)
        self.list.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._show_menu)
        delete = QAction("Delete…", self.list)
        delete.setShortcut(QKeySequence(QKeySequence.StandardKey.Delete))
        delete.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        delete.triggered.connect(self.ask_delete_current)
        self.list.addAction(delete)
        self._delete_action = delete
        layout.addWidget(self.list, 1)
        self.empty = QLabel()
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setEnabled(False)
        layout.addWidget(self.empty, 1)
        self.setWidget(body)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(SEARCH_DELAY_MS)
        self._debounce.timeout.connect(self.refresh)
        self._ages = QTimer(self)
        self._ages.setInterval(AGE_REFRESH_MS)
        self._ages.timeout.connect(self.refresh)
        self._ages.start()
        self.refresh()

    def refresh(self) -> None:
        """Reload the list (newest first), applying the search text."""
        query = self.search.text().strip() or None
        records = self._store.list_conversations(limit=PAGE_SIZE, query=query)
        current = self.list.currentItem()
        selected = current.data(Qt.ItemDataRole.UserRole) if current is not None else None
        selected = self._active or selected
        self.list.blockSignals(True)
        self.list.clear()
        now = time.time()
        for record in records:
            item = QListWidgetItem(f"{record.title}\n{_age(record.updated_at, now)}")
            item.setData(Qt.ItemDataRole.UserRole, record.id)
            item.setToolTip(record.title)
            self.list.addItem(item)
            if record.id == selected:
                self._select_only(item)
        self.list.blockSignals(False)
        self.list.setVisible(bool(records))
        if records:
            self.empty.hide()
        else:
            self.empty.setText("No conversation matches your search." if query else
                               "No conversations yet. Press Ctrl+T to start one.")
            self.empty.show()

    def follow(self, conversation_id: str | None) -> None:
        """Select the conversation shown in the active tab (without opening anything)."""
        self._active = conversation_id
        self.list.blockSignals(True)
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == conversation_id:
                self._select_only(item)
                break
        else:
            self.list.clearSelection()
        self.list.blockSignals(False)

    def _select_only(self, item: QListWidgetItem) -> None:
        """Make ``item`` current and the only row selected.

        Why explicit: in extended selection, ``setCurrentItem`` reads the keys
        held at the time, so following a tab switched with Ctrl+Tab or
        Ctrl+PageDown (Ctrl held) added the row to the old one: two rows lit.
        """
        self.list.setCurrentItem(item, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def current_id(self) -> str | None:
        """The selected conversation's id."""
        item = self.list.currentItem()
        return str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def selected_ids(self) -> list[str]:
        """The selected conversations, top to bottom."""
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole)
                for i in range(self.list.count()) if self.list.item(i).isSelected()]

    def conversation_ids(self) -> list[str]:
        """The ids listed, top to bottom."""
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole)
                for i in range(self.list.count())]

    def _show_menu(self, position: QPoint) -> None:
        item = self.list.itemAt(position)
        if item is None:
            return
        if not item.isSelected():
            self.list.setCurrentItem(item)
        menu = QMenu(self)
        menu.addAction("Open", lambda: self._on_activated(item))
        menu.addAction("Rename…", lambda: self.rename_requested.emit(
            item.data(Qt.ItemDataRole.UserRole)))
        selected = self.selected_ids()
        noun = "conversation" if len(selected) == 1 else f"{len(selected)} conversations"
        menu.addAction(f"Export {noun}…", lambda: self.export_requested.emit(selected))
        menu.addSeparator()
        menu.addAction(self._delete_action)
        menu.popup(self.list.viewport().mapToGlobal(position))

    def ask_delete_current(self) -> QMessageBox | None:
        """Ask (without blocking) whether to delete the selected conversation."""
        item = self.list.currentItem()
        if item is None:
            return None
        conversation_id = item.data(Qt.ItemDataRole.UserRole)
        box = QMessageBox(QMessageBox.Icon.Question, "Delete conversation",
                          f"Delete “{item.toolTip()}” and all its messages? This cannot be "
                          "undone; export it first to keep a copy.",
                          QMessageBox.StandardButton.Cancel, self)
        delete = box.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.buttonClicked.connect(
            lambda button: self.delete_requested.emit(conversation_id)
            if button is delete else None)
        box.finished.connect(box.deleteLater)
        box.open()
        return box

    def _on_clicked(self, item: QListWidgetItem) -> None:
        """One click opens, unless the person is extending a selection (Ctrl/Shift)."""
        from PySide6.QtWidgets import QApplication

        if not QApplication.keyboardModifiers() & (Qt.KeyboardModifier.ControlModifier
                                                   | Qt.KeyboardModifier.ShiftModifier):
            self._on_activated(item)

    def _on_activated(self, item: QListWidgetItem) -> None:
        self.open_requested.emit(item.data(Qt.ItemDataRole.UserRole))

    def _open_first(self) -> None:
        if self.list.count():
            self._on_activated(self.list.currentItem() or self.list.item(0))
