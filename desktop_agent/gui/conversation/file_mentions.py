"""``@`` in the composer: complete a file of the working folder (or an MCP resource) and attach it.

Typing ``@`` and a few letters lists the working folder's files that hold
those letters in order (fuzzy, best first), and the MCP servers' resources as
``server:name`` (:mod:`.resource_mentions`; they lead when the letters name a
server); Up/Down choose, Enter or Tab attach the file as the paperclip would
(a resource: through the session), Esc closes the list. Keyboard only: the
hands stay on the keys.

The folder is listed off the GUI thread (:class:`FolderIndex`), once, and
listed again in the background when the kept list is older than
:data:`REFRESH_SECONDS` (files the agent wrote show up); matching the kept
list takes milliseconds, so each keystroke answers at once. The widget only
shows and reports: which file becomes what in the request is
:mod:`.attachments`' rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent, QStandardItem, QStandardItemModel, QTextCursor
from PySide6.QtWidgets import QCompleter, QListView, QPlainTextEdit

from desktop_agent.gui.conversation.resource_mentions import Listing, ResourceIndex
from desktop_agent.gui.icons import icon

if TYPE_CHECKING:
    from desktop_agent.workspace.file_index import FolderIndex


log = logging.getLogger("desktop_agent.gui.file_mentions")

#: A kept listing older than this is listed again (in the background) on the next ``@``.
REFRESH_SECONDS = 10.0

#: Rows offered at most.
SHOWN = 50

#: ``@`` at the start or after a space, then the path typed so far, up to the cursor.
_MENTION = re.compile(r"(?:^|(?<=\s))@([^\s@]*)$")


class FileMentions(QObject):
    """Completes ``@path`` in a text field from the working folder's files and MCP resources.

    Args:
        editor: The composer's text field.
        folder: Returns the working folder now (None: none usable).
        resources: Lists the MCP servers' resources and templates (the session's
            ``mcp_resources``); None offers files only.

    Signals:
        file_chosen(str): The absolute path of the file chosen (attach it).
        resource_chosen(object): The ``McpResource`` or ``McpResourceTemplate`` chosen.
    """

    file_chosen = Signal(str)
    resource_chosen = Signal(object)

    def __init__(self, editor: QPlainTextEdit, folder: Callable[[], Path | None],
                 resources: Listing | None = None) -> None:
        super().__init__(editor)
        self._editor = editor
        self._folder = folder
        self._index: FolderIndex | None = None
        self._scan: asyncio.Task[None] | None = None
        self._list_resources = resources
        self._resources: ResourceIndex | None = None
        self._listing: asyncio.Task[None] | None = None
        self._rows: dict[str, object] = {}  # the resource rows shown, and what each is
        self.model = QStandardItemModel(self)
        self.completer = QCompleter(self.model, self)
        self.completer.setWidget(editor)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setMaxVisibleItems(10)
        self.popup = QListView()
        self.popup.setObjectName("fileMentions")
        self.popup.setAccessibleName("Files of the working folder and MCP resources")
        self.popup.setIconSize(QSize(14, 14))
        self.completer.setPopup(self.popup)  # the completer owns it from here
        self.completer.activated.connect(self._choose)
        self.popup.installEventFilter(self)
        editor.textChanged.connect(self.update)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Esc in the open list closes the list; it must not reach Stop's shortcut."""
        if (watched is self.popup and event.type() == QEvent.Type.ShortcutOverride
                and isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape):
            event.accept()  # deliver it as a key press: the completer closes the list
            return True
        return super().eventFilter(watched, event)

    @property
    def index(self) -> FolderIndex | None:
        """The folder's listing as kept (None before the first ``@``)."""
        return self._index

    def is_open(self) -> bool:
        """Whether the list of files is showing."""
        return self.popup.isVisible()

    def offered(self) -> list[str]:
        """The rows the list offers now (paths, ``server:name`` resources), in order."""
        return [self.model.item(row).text() for row in range(self.model.rowCount())]

    @property
    def resources(self) -> ResourceIndex | None:
        """The MCP resources as kept (None before they were first listed)."""
        return self._resources

    def _typed(self) -> str | None:
        """The path typed after an ``@`` before the cursor (None: not in a mention)."""
        cursor = self._editor.textCursor()
        if cursor.hasSelection():
            return None
        before = cursor.block().text()[:cursor.positionInBlock()]
        found = _MENTION.search(before)
        return found.group(1) if found else None

    def update(self) -> None:
        """Offer the files and resources for the mention at the cursor, or close the list."""
        query = self._typed()
        if query is None:
            self.popup.hide()
            return
        files: list[str] = []
        folder = self._folder()
        if folder is not None:
            index = self._index
            if index is None or index.folder != folder or index.age() > REFRESH_SECONDS:
                self._refresh(folder)
            if index is not None and index.folder == folder:
                files = index.matches(query, SHOWN)
        found = self._resources
        if self._list_resources is not None and (found is None
                                                 or found.age() > REFRESH_SECONDS):
            self._refresh_resources()
        resources = found.matches(query) if found is not None else []
        self._fill(files, resources, found is not None and found.first_for(query))
        if not files and not resources:
            self.popup.hide()
            return
        rect = self._editor.cursorRect()
        rect.setWidth(min(520, max(320, self._editor.width() // 2)))
        self.completer.complete(rect)
        self.popup.setCurrentIndex(self.model.index(0, 0))
        # Above the line typed on: the composer sits at the window's foot, and a list
        # below it would cover the status line or fall off the screen.
        top = self._editor.mapToGlobal(self._editor.cursorRect().topLeft())
        self.popup.move(top.x(), max(0, top.y() - self.popup.height() - 4))

    def _fill(self, files: list[str], resources: list[str], resources_first: bool) -> None:
        """Put the rows in the list: the resources marked with the server's icon."""
        found = self._resources
        self._rows = {row: found.items[row] for row in resources} if found else {}
        self.model.clear()
        file_icon = icon("file-text")
        file_items = [QStandardItem(file_icon, path) for path in files]
        resource_items = []
        for row, item in self._rows.items():
            entry = QStandardItem(icon("server"), row)
            uri = getattr(item, "uri", None) or getattr(item, "uri_template", "")
            entry.setToolTip(f"{uri}\n{getattr(item, 'description', None) or ''}".strip())
            resource_items.append(entry)
        for entry in (resource_items + file_items if resources_first
                      else file_items + resource_items):
            entry.setEditable(False)
            self.model.appendRow(entry)

    def _refresh_resources(self) -> None:
        """Ask the session for the servers' resources (one question at a time), then offer."""
        listing = self._list_resources
        if listing is None or (self._listing is not None and not self._listing.done()):
            return

        async def ask() -> None:
            try:
                resources, templates = await listing()
            except Exception as exc:  # noqa: BLE001 - a server must never break typing
                log.info("could not list the MCP resources: %s", exc)
                resources, templates = [], []
            self._resources = ResourceIndex.of(resources, templates)
            with contextlib.suppress(RuntimeError):  # the composer may be gone
                if self._typed() is not None:
                    self.update()

        self._listing = asyncio.ensure_future(ask())

    def _refresh(self, folder: Path) -> None:
        """List ``folder`` in a worker thread (one listing at a time), then offer again."""
        if self._scan is not None and not self._scan.done():
            return

        async def scan() -> None:
            try:
                self._index = await asyncio.to_thread(_scan, folder)
            except Exception as exc:  # noqa: BLE001 - a listing must never break typing
                log.info("could not list %s: %s", folder, exc)
                return
            with contextlib.suppress(RuntimeError):  # the composer may be gone
                if self._typed() is not None:
                    self.update()

        self._scan = asyncio.ensure_future(scan())

    def cancel(self) -> None:
        """Stop a listing under way (the tab closes)."""
        for task in (self._scan, self._listing):
            if task is not None:
                task.cancel()

    def _choose(self, chosen: object) -> None:
        """Take the ``@query`` out of the text and report the file (or resource) to attach."""
        index = self._index
        relative = chosen if isinstance(chosen, str) else self.popup.currentIndex().data()
        if not isinstance(relative, str) or not relative:
            return
        resource = self._rows.get(relative)
        if resource is None and index is None:
            return
        cursor = self._editor.textCursor()
        typed = self._typed()
        if typed is not None:
            cursor.movePosition(QTextCursor.MoveOperation.Left,
                                QTextCursor.MoveMode.KeepAnchor, len(typed) + 1)
            cursor.removeSelectedText()
            self._editor.setTextCursor(cursor)
        self.popup.hide()
        if resource is not None:
            self.resource_chosen.emit(resource)
        elif index is not None:
            self.file_chosen.emit(str(index.folder / relative))


def _scan(folder: Path) -> FolderIndex:
    """List ``folder`` (in a worker thread, which also imports the index module).

    Why imported here: only a person typing ``@`` needs the folder's index, and an
    idle window should not hold its module.
    """
    from desktop_agent.workspace.file_index import FolderIndex

    return FolderIndex.scan(folder)
