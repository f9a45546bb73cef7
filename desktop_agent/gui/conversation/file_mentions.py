"""``@`` in the composer: complete a file of the working folder and attach it.

Typing ``@`` and a few letters lists the working folder's files that hold
those letters in order (fuzzy, best first); Up/Down choose, Enter or Tab
attach the file as the paperclip would, Esc closes the list. Keyboard only:
the hands stay on the keys.

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

from PySide6.QtCore import QEvent, QObject, QStringListModel, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QCompleter, QListView, QPlainTextEdit

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
    """Completes ``@path`` in a text field from the working folder's files.

    Args:
        editor: The composer's text field.
        folder: Returns the working folder now (None: none usable).

    Signals:
        file_chosen(str): The absolute path of the file chosen (attach it).
    """

    file_chosen = Signal(str)

    def __init__(self, editor: QPlainTextEdit, folder: Callable[[], Path | None]) -> None:
        super().__init__(editor)
        self._editor = editor
        self._folder = folder
        self._index: FolderIndex | None = None
        self._scan: asyncio.Task[None] | None = None
        self.model = QStringListModel(self)
        self.completer = QCompleter(self.model, self)
        self.completer.setWidget(editor)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setMaxVisibleItems(10)
        self.popup = QListView()
        self.popup.setObjectName("fileMentions")
        self.popup.setAccessibleName("Files of the working folder")
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
        """The paths the list offers now, best first."""
        return self.model.stringList()

    def _typed(self) -> str | None:
        """The path typed after an ``@`` before the cursor (None: not in a mention)."""
        cursor = self._editor.textCursor()
        if cursor.hasSelection():
            return None
        before = cursor.block().text()[:cursor.positionInBlock()]
        found = _MENTION.search(before)
        return found.group(1) if found else None

    def update(self) -> None:
        """Offer the files for the mention at the cursor, or close the list."""
        query = self._typed()
        folder = self._folder() if query is not None else None
        if query is None or folder is None:
            self.popup.hide()
            return
        index = self._index
        if index is None or index.folder != folder or index.age() > REFRESH_SECONDS:
            self._refresh(folder)
        if index is None or index.folder != folder:
            return  # offered when the listing arrives
        matches = index.matches(query, SHOWN)
        self.model.setStringList(matches)
        if not matches:
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
        if self._scan is not None:
            self._scan.cancel()

    def _choose(self, chosen: object) -> None:
        """Take the ``@query`` out of the text and report the file to attach."""
        index = self._index
        relative = chosen if isinstance(chosen, str) else self.popup.currentIndex().data()
        if index is None or not isinstance(relative, str) or not relative:
            return
        cursor = self._editor.textCursor()
        typed = self._typed()
        if typed is not None:
            cursor.movePosition(QTextCursor.MoveOperation.Left,
                                QTextCursor.MoveMode.KeepAnchor, len(typed) + 1)
            cursor.removeSelectedText()
            self._editor.setTextCursor(cursor)
        self.popup.hide()
        self.file_chosen.emit(str(index.folder / relative))


def _scan(folder: Path) -> FolderIndex:
    """List ``folder`` (in a worker thread, which also imports the index module).

    Why imported here: only a person typing ``@`` needs the folder's index, and an
    idle window should not hold its module.
    """
    from desktop_agent.workspace.file_index import FolderIndex

    return FolderIndex.scan(folder)
