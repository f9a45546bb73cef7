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
        self._tray: QSystemTrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self._tray = QSystemTrayIcon(icon, window)
            self._tray.setToolTip("Desktop Agent")
            self._tray.messageClicked.connect(self._raise_window)
        self.sent = 0

    def notify(self, conversation_title: str, tool_name: str) -> bool:
        """Tell the person a tool waits; returns whether anything was shown."""
        if self._window.isActiveWindow():
            return False
        self.sent += 1
        text = f"{tool_name} wants to run in “{conversation_title}”. Open the window to answer."
        if self._tray is not None:
            if not self._tray.isVisible():
                self._tray.show()
            self._tray.showMessage("Approval needed", text,
                                   QSystemTrayIcon.MessageIcon.Information, 10000)
        else:
            QApplication.alert(self._window)
        log.info("approval notification sent for %s", tool_name)
        return True

    def _raise_window(self) -> None:
        self._window.showNormal()
        self._window.raise_()
        self._window.activateWindow()
