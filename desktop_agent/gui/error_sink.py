"""The one place every unexpected exception ends up.

``sys.excepthook`` (which qasync's async slots use), ``threading.excepthook``
and the asyncio loop's exception handler all report here: the traceback goes
to the log, and the window shows a short non-modal notice. The app keeps
running; nothing vanishes silently.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import traceback
from types import TracebackType
from typing import Any

from PySide6.QtCore import QObject, Signal

log = logging.getLogger("desktop_agent.gui.errors")


class ErrorSink(QObject):
    """Collects unexpected exceptions from every source.

    Signals:
        reported(str): A one-line notice for the person (no traceback, no secrets).
    """

    reported = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._previous_excepthook = sys.excepthook
        self._previous_threading_hook = threading.excepthook
        self.count = 0

    def install(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Route sys, threading and (optionally) the loop's exceptions here."""
        sys.excepthook = self._on_sys_exception
        threading.excepthook = self._on_thread_exception
        if loop is not None:
            loop.set_exception_handler(self._on_loop_exception)

    def uninstall(self) -> None:
        """Restore the hooks that were there before :meth:`install`."""
        sys.excepthook = self._previous_excepthook
        threading.excepthook = self._previous_threading_hook

    def report(self, exc: BaseException | None, where: str, message: str = "") -> None:
        """Log an exception with its traceback and emit a notice."""
        self.count += 1
        if exc is not None:
            details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            log.error("unexpected error in %s: %s\n%s", where, message or exc, details)
        else:
            log.error("unexpected error in %s: %s", where, message)
        name = type(exc).__name__ if exc is not None else "Error"
        self.reported.emit(
            f"Something went wrong ({name} in {where}). Desktop Agent keeps running; "
            "the details are in the log.")

    def _on_sys_exception(self, exc_type: type[BaseException], exc: BaseException,
                          tb: TracebackType | None) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            self._previous_excepthook(exc_type, exc, tb)
            return
        self.report(exc.with_traceback(tb), "the window")

    def _on_thread_exception(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None:
            return
        where = f"thread {args.thread.name}" if args.thread else "a thread"
        self.report(args.exc_value, where)

    def _on_loop_exception(self, loop: asyncio.AbstractEventLoop,
                           context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, asyncio.CancelledError):
            return
        self.report(exc, "a background task", str(context.get("message", "")))
