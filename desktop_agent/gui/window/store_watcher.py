"""Notice conversations written by another process (REST server, ``desktop-agent import``).

Polls the store's :meth:`~desktop_agent.store.Store.change_token` (one PRAGMA, no table
read) once a second and reports when another connection committed, so the sidebar
lists new or renamed conversations without a restart.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

if TYPE_CHECKING:
    from desktop_agent.store import Store
    from desktop_agent.store.records import ChangeToken

log = logging.getLogger("desktop_agent.gui.window.store_watcher")

POLL_MS = 1000


class StoreWatcher(QObject):
    """Polls the store for commits made elsewhere.

    Signals:
        changed_elsewhere(): Another process or connection wrote to the store.
    """

    changed_elsewhere = Signal()

    def __init__(self, store: Store, parent: QObject | None = None,
                 interval_ms: int = POLL_MS) -> None:
        super().__init__(parent)
        self._store = store
        self._last: ChangeToken | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.poll)

    def start(self) -> None:
        """Take the current state as seen and start polling."""
        self._last = self._token()
        self._timer.start()

    def stop(self) -> None:
        """Stop polling (the store is closing)."""
        self._timer.stop()

    def poll(self) -> bool:
        """Check now; True (and the signal) when something was written elsewhere."""
        token = self._token()
        if token is None:
            return False
        changed = self._last is not None and token.changed_elsewhere(self._last)
        self._last = token
        if changed:
            self.changed_elsewhere.emit()
        return changed

    def _token(self) -> ChangeToken | None:
        from desktop_agent.store import StoreClosedError

        try:
            return self._store.change_token()
        except StoreClosedError:
            log.debug("store closed: no more polling")
            self._timer.stop()
            return None
