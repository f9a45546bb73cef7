"""``/`` in the composer: list the conversation's commands and expand the one sent.

Typing ``/`` at the start of a message lists the built-in commands (``/undo``,
``/compact``, ``/plan``, ``/model``, ``/clear``, ``/help``), the custom command
files and the MCP servers' prompts (``/server:prompt``) whose names hold the
letters typed, each with its description; Up/Down choose, Enter or Tab put
``/name `` in the message to type its arguments after (a built-in runs at once,
and named arguments are asked in a form: ``tab_commands.py``), Esc closes the
list. Sending a message
that starts with a listed command does not send it: the command's text (or the
prompt's result) replaces the message, so the person reads it, and Enter then
sends it. A message starting with ``/`` and no listed command (a path, say) is
sent as it is.

The list comes from the session (reading command files, asking the servers) in
the background, once, and again when older than :data:`REFRESH_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QStringListModel, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QCompleter, QListView, QPlainTextEdit

from desktop_agent.session import BUILTIN_COMMANDS

log = logging.getLogger("desktop_agent.gui.slash_menu")

#: A kept list older than this is asked for again (in the background) on the next ``/``.
REFRESH_SECONDS = 10.0
#: ``/`` at the very start of the message, then the name typed so far, up to the cursor.
_COMMAND = re.compile(r"^/([^\s/]*)$")
_KIND_ORDER = {"builtin": 0, "command": 1, "prompt": 2}


class SlashMenu(QObject):
    """Completes ``/name`` in the composer from the conversation's commands.

    Args:
        editor: The composer's text field.
        load: Returns the commands (the session's ``slash_commands``).

    Signals:
        listed(): A fresh list arrived (tests wait for it).
        chosen(str): A command was chosen in the list and put in the message.
    """

    listed = Signal()
    chosen = Signal(str)

    def __init__(self, editor: QPlainTextEdit,
                 load: Callable[[], Awaitable[list[Any]]]) -> None:
        super().__init__(editor)
        self._editor = editor
        self._load = load
        self._commands: list[Any] = []
        self._loaded_at: float | None = None
        self._task: asyncio.Task[None] | None = None
        self._shown: list[str] = []
        self.model = QStringListModel(self)
        self.completer = QCompleter(self.model, self)
        self.completer.setWidget(editor)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.completer.setMaxVisibleItems(10)
        self.popup = QListView()
        self.popup.setObjectName("slashMenu")
        self.popup.setAccessibleName("Commands")
        self.popup.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.completer.setPopup(self.popup)
        self.completer.activated.connect(self._choose)
        self.popup.installEventFilter(self)
        editor.textChanged.connect(self.update)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Esc in the open list closes the list; it must not reach Stop's shortcut."""
        if (watched is self.popup and event.type() == QEvent.Type.ShortcutOverride
                and isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape):
            event.accept()
            return True
        return super().eventFilter(watched, event)

    def is_open(self) -> bool:
        """Whether the list of commands is showing."""
        return self.popup.isVisible()

    def offered(self) -> list[str]:
        """The command names the list offers now."""
        return list(self._shown)

    def command_in(self, text: str) -> str | None:
        """The listed command a message starts with (None: send it as it is).

        The built-ins are known before the list arrives: ``/undo`` typed fast
        must never reach the model as a message.
        """
        if not text.startswith("/"):
            return None
        name = text[1:].split(None, 1)[0] if text[1:].strip() else ""
        return name if self.entry(name) is not None else None

    def entry(self, name: str) -> Any:
        """The listed command ``name`` (a built-in even before the list came), or None."""
        found = next((c for c in self._commands if c.name == name), None)
        if found is None:
            found = next((c for c in BUILTIN_COMMANDS if c.name == name), None)
        return found

    def _typed(self) -> str | None:
        cursor = self._editor.textCursor()
        if cursor.hasSelection() or cursor.blockNumber() != 0:
            return None
        found = _COMMAND.match(cursor.block().text()[:cursor.positionInBlock()])
        return found.group(1) if found else None

    def update(self) -> None:
        """Offer the commands for the ``/name`` at the cursor, or close the list."""
        typed = self._typed()
        if typed is None:
            self.popup.hide()
            return
        if self._loaded_at is None or time.monotonic() - self._loaded_at > REFRESH_SECONDS:
            self._refresh()
        wanted = typed.lower()
        chosen = [c for c in self._commands if wanted in c.name.lower()]
        # names that start with what was typed first; then built-ins, command files and
        # prompts, each in the session's order (built-ins as /help lists them)
        chosen.sort(key=lambda c: (not c.name.lower().startswith(wanted),
                                   _KIND_ORDER.get(c.kind, 3)))
        self._shown = [c.name for c in chosen]
        rect = self._editor.cursorRect()
        rect.setWidth(min(640, max(360, self._editor.width() * 2 // 3)))
        # one line each, cut with … to the list's width (no sideways scrolling)
        metrics = self.popup.fontMetrics()
        room = rect.width() - self.popup.verticalScrollBar().sizeHint().width() - 16
        self.model.setStringList([
            metrics.elidedText(f"/{c.name}    {c.description}".rstrip(),
                               Qt.TextElideMode.ElideRight, room) for c in chosen])
        if not chosen:
            self.popup.hide()
            return
        self.completer.complete(rect)
        self.popup.setCurrentIndex(self.model.index(0, 0))
        # whole rows only: a half row at the edge reads as a glitch
        rows = min(len(chosen), self.completer.maxVisibleItems())
        self.popup.resize(self.popup.width(), rows * self.popup.sizeHintForRow(0)
                          + 2 * self.popup.frameWidth())
        top = self._editor.mapToGlobal(self._editor.cursorRect().topLeft())
        self.popup.move(top.x(), max(0, top.y() - self.popup.height() - 4))

    def _refresh(self) -> None:
        if self._task is not None and not self._task.done():
            return

        async def load() -> None:
            try:
                self._commands = list(await self._load())
            except Exception as exc:  # noqa: BLE001 - a list must never break typing
                log.info("could not list the commands: %s", exc)
                return
            self._loaded_at = time.monotonic()
            with contextlib.suppress(RuntimeError):  # the composer may be gone
                self.listed.emit()
                if self._typed() is not None:
                    self.update()

        self._task = asyncio.ensure_future(load())

    def cancel(self) -> None:
        """Stop a listing under way (the tab closes)."""
        if self._task is not None:
            self._task.cancel()

    def _choose(self, _chosen: object) -> None:
        """Put ``/name `` in place of what was typed, ready for its arguments."""
        row = self.popup.currentIndex().row()
        if not 0 <= row < len(self._shown):
            return
        cursor = self._editor.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock,
                            QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(f"/{self._shown[row]} ")
        self._editor.setTextCursor(cursor)
        self.popup.hide()
        self.chosen.emit(self._shown[row])
