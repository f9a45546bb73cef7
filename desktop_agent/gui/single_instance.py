"""One window per data folder: a second start finds the first and can bring it forward.

Two windows on one data folder are two writers of the same conversations: each keeps
its own tabs and settings in memory and they overwrite each other's. A local socket
(``QLocalServer``: a Unix socket, a named pipe on Windows) named after the data folder
answers the question "is one running already?" reliably: unlike a lock file it
disappears with the process, even after ``kill -9``, and it carries the request to come
forward.

The first instance claims the name (:meth:`SingleInstance.claim`) and emits
``activation_requested`` when a later start asks it to show itself.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QWidget

log = logging.getLogger("desktop_agent.gui.single_instance")

RAISE_REQUEST = b"raise\n"
CONNECT_TIMEOUT_MS = 500
READ_TIMEOUT_MS = 200


def socket_name(data_dir: Path) -> str:
    """The local socket name for a data folder: short, stable, one per folder.

    A hash keeps it under the length limit of Unix socket paths and free of
    characters a pipe name may not hold.
    """
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    return f"desktop-agent-{digest}"


class SingleInstance(QObject):
    """The running instance's claim on a data folder.

    Signals:
        activation_requested: Another start asked this instance to come forward.
    """

    activation_requested = Signal()

    def __init__(self, data_dir: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._name = socket_name(data_dir)
        self._server: QLocalServer | None = None

    def another_is_running(self) -> bool:
        """Whether an instance on this data folder answers right now."""
        probe = QLocalSocket()
        probe.connectToServer(self._name)
        answered = probe.waitForConnected(CONNECT_TIMEOUT_MS)
        probe.abort()
        return answered

    def ask_running_to_raise(self) -> bool:
        """Ask the running instance to bring its window forward; True if it was told."""
        socket = QLocalSocket()
        socket.connectToServer(self._name)
        if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
            return False
        socket.write(RAISE_REQUEST)
        sent = socket.waitForBytesWritten(CONNECT_TIMEOUT_MS)
        socket.disconnectFromServer()
        return sent

    def claim(self) -> bool:
        """Listen under the folder's name; False if another instance holds it.

        A name left behind by a crashed instance (a stale Unix socket file) is removed
        first, but only after checking that nothing answers on it.
        """
        if self.another_is_running():
            return False
        QLocalServer.removeServer(self._name)
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self._name):
            log.warning("cannot listen on %s: %s", self._name, server.errorString())
            return True  # running alone matters more than the guard; say so in the log
        server.newConnection.connect(self._accept)
        self._server = server
        return True

    def release(self) -> None:
        """Stop answering (on quit), so a new start does not find a closing window."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def _accept(self) -> None:
        # The request is one short line written right after connecting, so it is read
        # here at once (briefly blocking) rather than through per-connection slots,
        # which would outlive the server when it closes.
        assert self._server is not None
        while (connection := self._server.nextPendingConnection()) is not None:
            request = b""
            if connection.bytesAvailable() or connection.waitForReadyRead(READ_TIMEOUT_MS):
                request = bytes(connection.readAll().data())
            connection.abort()
            connection.deleteLater()
            if request.startswith(RAISE_REQUEST):
                self.activation_requested.emit()


def offer_running_instance(guard: SingleInstance, data_dir: Path) -> int:
    """Tell the person a window is already open on this folder; offer to switch to it.

    Returns the exit status for this (second) start: it never opens a second writer.
    """
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(QMessageBox.Icon.Information, "Desktop Agent is already running",
                      "Desktop Agent is already open with this data folder.")
    box.setInformativeText(
        f"{data_dir}\n\nA second window on the same folder would overwrite the first "
        "one's changes, so only one can run.")
    switch = box.addButton("Switch to It", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(switch)
    box.exec()
    if box.clickedButton() is switch and not guard.ask_running_to_raise():
        QMessageBox.warning(None, "Desktop Agent",
                            "The running window did not answer; it may be closing. "
                            "Try again in a moment.")
        return 1
    return 0


def bring_forward(window: QWidget) -> None:
    """Show a window on top of the others, restoring it if minimised."""
    if window.isMinimized():
        window.showNormal()
    window.show()
    window.raise_()
    window.activateWindow()
