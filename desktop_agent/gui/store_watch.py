"""Noticing another process's writes (the REST server, an import) in an open window.

The store's change token (``PRAGMA data_version``) moves when another
connection commits. Polling it costs one PRAGMA; only when it moved does the
window re-read the sidebar and its idle conversations, so a reply written
over REST appears without reopening the tab, and the window's next message
continues the branch the server extended instead of forking it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal

if TYPE_CHECKING:
    from desktop_agent.store import ChangeToken, Store

log = logging.getLogger("desktop_agent.gui.store_watch")

POLL_INTERVAL_MS = 1000


class StoreWatcher(QObject):
    """Polls the store's change token.

    Signals:
        changed_elsewhere(): Another process committed since the last poll.
    """

    changed_elsewhere = Signal()

    def __init__(self, store: Store, parent: QObject | None = None,
                 interval_ms: int = POLL_INTERVAL_MS) -> None:
        super().__init__(parent)
        self._store = store
        self._token: ChangeToken | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.poll)

    def start(self) -> None:
        """Take the current token and start polling."""
        self._token = self._store.change_token()
        self._timer.start()

    def stop(self) -> None:
        """Stop polling (the window is closing)."""
        self._timer.stop()

    def poll(self) -> None:
        """Compare with the last token; emit when another process wrote."""
        try:
            token = self._store.change_token()
        except Exception as exc:  # noqa: BLE001 - a closed store at shutdown: stop quietly
            log.debug("change token not read: %s", exc)
            self._timer.stop()
            return
        previous, self._token = self._token, token
        if previous is not None and token.changed_elsewhere(previous):
            self.changed_elsewhere.emit()
