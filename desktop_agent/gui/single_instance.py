"""One window per data folder: a second start finds the first and can bring it forward.

Two windows on one data folder are two writers of the same conversations: each keeps
its own tabs and settings in memory and they overwrite each other's. A local socket
named after the data folder answers the question "is one running already?" reliably:
unlike a lock file it disappears with the process, even after ``kill -9``, and it
carries the request to come forward.

The first instance claims the name (:meth:`SingleInstance.claim`) and emits
``activation_requested`` when a later start asks it to show itself.

Where the system has Unix sockets (Linux, macOS) the socket is Python's own, watched
by a ``QSocketNotifier``, at the path ``QLocalServer`` uses (so this version and one
that used ``QLocalServer`` find each other). ``QLocalServer`` itself (a named pipe on
Windows) is used only where there are no Unix sockets: loading QtNetwork for this one
socket cost every idle window 3.3 MB of resident memory, mostly its libraries (an idle
window from source, RSS read from /proc: 131.3 MB with it, 128.0 MB without).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QDir, QObject, QSocketNotifier, Signal
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    from PySide6.QtNetwork import QLocalServer

log = logging.getLogger("desktop_agent.gui.single_instance")

RAISE_REQUEST = b"raise\n"
CONNECT_TIMEOUT_MS = 500
READ_TIMEOUT_MS = 200
UNIX_SOCKETS = hasattr(socket, "AF_UNIX")


def socket_name(data_dir: Path) -> str:
    """The local socket name for a data folder: short, stable, one per folder.

    A hash keeps it under the length limit of Unix socket paths and free of
    characters a pipe name may not hold.
    """
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    return f"desktop-agent-{digest}"


def socket_path(name: str) -> Path:
    """Where the Unix socket of ``name`` lives: where ``QLocalServer`` puts it."""
    return Path(QDir.tempPath()) / name


class SingleInstance(QObject):
    """The running instance's claim on a data folder.

    Signals:
        activation_requested: Another start asked this instance to come forward.
    """

    activation_requested = Signal()

    def __init__(self, data_dir: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._name = socket_name(data_dir)
        self._path = socket_path(self._name)
        self._listener: socket.socket | None = None
        self._notifier: QSocketNotifier | None = None
        self._qt_server: QLocalServer | None = None

    def another_is_running(self) -> bool:
        """Whether an instance on this data folder answers right now."""
        if not UNIX_SOCKETS:
            return self._qt_send(None)
        try:
            with self._connect():
                return True
        except OSError:
            return False

    def ask_running_to_raise(self) -> bool:
        """Ask the running instance to bring its window forward; True if it was told."""
        if not UNIX_SOCKETS:
            return self._qt_send(RAISE_REQUEST)
        try:
            with self._connect() as connection:
                connection.sendall(RAISE_REQUEST)
        except OSError:
            return False
        return True

    def claim(self) -> bool:
        """Listen under the folder's name; False if another instance holds it.

        A name left behind by a crashed instance (a stale Unix socket file) is removed
        first, but only after checking that nothing answers on it.
        """
        if self.another_is_running():
            return False
        if not UNIX_SOCKETS:
            return self._qt_listen()
        try:
            self._listener = self._listen()
        except OSError as exc:
            log.warning("cannot listen on %s: %s", self._path, exc)
            return True  # running alone matters more than the guard; say so in the log
        self._notifier = QSocketNotifier(self._listener.fileno(), QSocketNotifier.Type.Read,
                                         self)
        self._notifier.activated.connect(self._accept)
        return True

    def release(self) -> None:
        """Stop answering (on quit), so a new start does not find a closing window."""
        if self._notifier is not None:
            self._notifier.setEnabled(False)
            self._notifier.deleteLater()
            self._notifier = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            self._path.unlink(missing_ok=True)
        if self._qt_server is not None:
            self._qt_server.close()
            self._qt_server = None

    def _connect(self) -> socket.socket:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(CONNECT_TIMEOUT_MS / 1000)
        try:
            connection.connect(str(self._path))
        except OSError:
            connection.close()
            raise
        return connection

    def _listen(self) -> socket.socket:
        """A listening socket at the path that only this user can connect to.

        It is bound in a private folder, made owner-only and then moved into place,
        so there is no moment when another user could connect to it (as
        ``QLocalServer``'s ``UserAccessOption`` does it).
        """
        self._path.unlink(missing_ok=True)  # stale: nothing answered on it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with tempfile.TemporaryDirectory(dir=self._path.parent,
                                             prefix=".desktop-agent-") as private:
                bound = Path(private) / "socket"
                listener.bind(str(bound))
                bound.chmod(0o600)
                listener.listen(8)
                bound.replace(self._path)
        except OSError:
            listener.close()
            raise
        listener.setblocking(False)
        return listener

    def _accept(self) -> None:
        # The request is one short line written right after connecting, so it is read
        # here at once (briefly blocking) rather than through per-connection watches,
        # which would outlive the listener when it closes.
        assert self._listener is not None
        while True:
            try:
                connection, _address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.warning("single-instance socket: %s", exc)
                return
            with connection:
                connection.settimeout(READ_TIMEOUT_MS / 1000)
                request = b""
                with contextlib.suppress(OSError):
                    while len(request) < len(RAISE_REQUEST) and (part := connection.recv(64)):
                        request += part
            if request.startswith(RAISE_REQUEST):
                self.activation_requested.emit()

    # -- where there are no Unix sockets (Windows): QLocalServer's named pipe --------------

    def _qt_send(self, request: bytes | None) -> bool:
        from PySide6.QtNetwork import QLocalSocket

        probe = QLocalSocket()
        probe.connectToServer(self._name)
        if not probe.waitForConnected(CONNECT_TIMEOUT_MS):
            return False
        if request is None:
            probe.abort()
            return True
        probe.write(request)
        sent = probe.waitForBytesWritten(CONNECT_TIMEOUT_MS)
        probe.disconnectFromServer()
        return sent

    def _qt_listen(self) -> bool:
        from PySide6.QtNetwork import QLocalServer

        QLocalServer.removeServer(self._name)
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self._name):
            log.warning("cannot listen on %s: %s", self._name, server.errorString())
            return True
        server.newConnection.connect(self._qt_accept)
        self._qt_server = server
        return True

    def _qt_accept(self) -> None:
        assert self._qt_server is not None
        while (connection := self._qt_server.nextPendingConnection()) is not None:
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
