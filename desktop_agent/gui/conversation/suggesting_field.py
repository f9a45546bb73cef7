"""One line of a form that asks the server for suggestions as the person types.

MCP servers answer ``completion/complete`` for a prompt's arguments and a
resource template's parameters. The forms that ask those (the ``/`` command's
arguments, a template's parameters) give each line one :class:`SuggestingField`:
it asks with the text typed, the newest question winning (an older one still
out is cancelled), and hands what came back to the form, which shows it. A
failure is logged and leaves the line as it is: suggestions are a help, not a must.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QObject, QStringListModel, Qt, QTimer
from PySide6.QtWidgets import QCompleter, QLineEdit

log = logging.getLogger("desktop_agent.gui.suggestions")

Ask = Callable[[str], Awaitable[list[str]]]
"""The suggestions for the text typed (the form adds the other lines' values as context)."""
Show = Callable[[list[str]], None]
"""Puts the suggestions that came back in :attr:`SuggestingField.model` and may pop them up."""
Quiet = Callable[[], tuple[type[Exception], ...]]
"""The failures that only mean "no suggestions" (read when one happens)."""


class SuggestingField(QObject):
    """Suggestions from the server for one line, asked as the person types.

    Args:
        line: The line (``textEdited`` asks; its text is what was typed).
        ask: Asks the server.
        show: Shows what came back (the forms differ in when the popup opens).
        delay_ms: Ask this long after the last key, so typing a word asks once
            (None: at each key).
        quiet: The failures that mean "no suggestions" (None: any Exception).

    Attributes:
        model: The suggestions offered now.
        completer: Their popup, case-insensitive and unfiltered (the server
            already chose what fits); the form attaches it to the line.
    """

    def __init__(self, line: QLineEdit, ask: Ask, show: Show, *,
                 delay_ms: int | None = None, quiet: Quiet | None = None) -> None:
        super().__init__(line)
        self._line = line
        self._ask = ask
        self._show = show
        self._quiet = quiet
        self._task: asyncio.Future[None] | None = None
        self.model = QStringListModel(self)
        self.completer = QCompleter(self.model, line)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self._timer: QTimer | None = None
        if delay_ms is None:
            line.textEdited.connect(self._start)
        else:
            timer = self._timer = QTimer(self)
            timer.setSingleShot(True)
            timer.setInterval(delay_ms)
            timer.timeout.connect(lambda: self._start(line.text()))
            line.textEdited.connect(lambda _text: timer.start())

    def cancel(self) -> None:
        """Stop asking (the form closes)."""
        if self._timer is not None:
            self._timer.stop()
        if self._task is not None:
            self._task.cancel()

    def _start(self, text: str) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

        async def ask() -> None:
            try:
                found = await self._ask(text)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._quiet is not None and not isinstance(exc, self._quiet()):
                    raise
                log.info("no suggestions for %s: %s", self._line.objectName(), exc)
                return
            with contextlib.suppress(RuntimeError):  # the form may be closed meanwhile
                self._show(found)

        self._task = asyncio.ensure_future(ask())
