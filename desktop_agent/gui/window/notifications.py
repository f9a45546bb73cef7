"""System notifications for approval requests while the window is in the background."""

from __future__ import annotations

import logging

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

log = logging.getLogger("desktop_agent.gui.window.notifications")


class ApprovalNotifier:
    """Shows a tray message when a tool waits for approval and the window is not active.

    Where the system has no tray (some Linux desktops, the offscreen platform),
    the window's title and taskbar entry are flagged instead
    (``QApplication.alert``), so the request is still not missed.
    """

    def __init__(self, window: QWidget, icon: QIcon) -> None:
        self._window = window
        self._icon = icon
        self._tray: QSystemTrayIcon | None = None
        self._tray_looked_up = False
        self.sent = 0

    def _tray_icon(self) -> QSystemTrayIcon | None:
        """The tray icon, looked for at the first notification (None: the system has no tray).

        Why not when the window is built: asking for the tray asks the display
        server (and on a desktop with one, registers the icon over D-Bus) before
        the window's first paint, for a notification most windows never send.
        """
        if not self._tray_looked_up:
            self._tray_looked_up = True
            if QSystemTrayIcon.isSystemTrayAvailable():
                self._tray = QSystemTrayIcon(self._icon, self._window)
                self._tray.setToolTip("Desktop Agent")
                self._tray.messageClicked.connect(self._raise_window)
        return self._tray

    def notify(self, conversation_title: str, tool_name: str) -> bool:
        """Tell the person a tool waits; returns whether anything was shown."""
        if self._window.isActiveWindow():
            return False
        self.sent += 1
        text = f"{tool_name} wants to run in “{conversation_title}”. Open the window to answer."
        tray = self._tray_icon()
        if tray is not None:
            if not tray.isVisible():
                tray.show()
            tray.showMessage("Approval needed", text,
                             QSystemTrayIcon.MessageIcon.Information, 10000)
        else:
            QApplication.alert(self._window)
        log.info("approval notification sent for %s", tool_name)
        return True

    def _raise_window(self) -> None:
        self._window.showNormal()
        self._window.raise_()
        self._window.activateWindow()
