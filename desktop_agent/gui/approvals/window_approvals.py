"""The window's side of approvals: tab badges, the dock that appears when needed.

A request in the visible tab is answered on its tool card; one from a background
tab shows the Approvals dock (the queue across tabs), badges that tab and says so
in the status bar. The dock hides again once nothing is listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QIcon

from desktop_agent.gui.icons import current_palette, icon

if TYPE_CHECKING:

    from desktop_agent.gui.approvals.approval_queue import ApprovalRequest
    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.window.main_window import MainWindow


class ApprovalRouting:
    """Approvals for :class:`~desktop_agent.gui.window.main_window.MainWindow`."""

    def __init__(self, window: MainWindow) -> None:
        self._window = window

    def update_tab_title(self, controller: ConversationController) -> None:
        tab = self._window.tab_for(controller.conversation_id)
        if tab is None:
            return
        tabs = self._window.tabs
        index = tabs.indexOf(tab)
        pending = len(self._window.approvals.pending(controller.conversation_id))
        title = controller.title
        if len(title) > 28:
            title = title[:27] + "…"
        if pending:
            title = f"● {title} ({pending})"
        self._window.tabs.setTabText(index, title)
        self._window.tabs.setTabToolTip(index, controller.title + (
            f" — {pending} tool call(s) wait for approval" if pending else ""))
        name = "circle-help" if pending else ("hourglass" if controller.busy else None)
        tabs.setTabIcon(index, icon(name, current_palette().warning if pending else None)
                        if name else QIcon())

    def tab_badge(self, conversation_id: str) -> str:
        """The text of a conversation's tab (shows the pending-approval badge)."""
        tab = self._window.tab_for(conversation_id)
        return self._window.tabs.tabText(self._window.tabs.indexOf(tab)) if tab is not None else ""

    def on_pending_count(self, conversation_id: str, _count: int) -> None:
        controller = self._window.controllers.get(conversation_id)
        if controller is not None:
            self.update_tab_title(controller)
        self.hide_idle_approvals()

    def hide_idle_approvals(self) -> None:
        """The queue takes no room while nothing waits (the conversation is the main surface)."""
        if not self._window.approvals.requests() and not self._window.approval_dock.isHidden():
            self._window.approval_dock.hide()

    def on_approval_requested(self, request: ApprovalRequest) -> None:
        """A request in the visible tab is answered on its card; elsewhere the queue shows."""
        current = self._window.current_controller()
        if current is None or current.conversation_id != request.conversation_id:
            self._window.approval_dock.show()
            self._window.approval_dock.raise_()
            self._window.statusBar().showMessage(
                f"“{request.conversation_title}” asks to run {request.tool_name}: "
                "see Approvals (Ctrl+Shift+A).", 10000)
        self._window.notifier.notify(request.conversation_title, request.tool_name)

    def focus_approvals(self) -> None:
        """Show the Approvals dock and the tab of the oldest pending request."""
        self._window.approval_dock.show()
        self._window.approval_dock.raise_()
        self._window.approval_dock.setFocus()
        tab = self._window.tab_for(self._window.approvals.pending()[0].conversation_id) \
            if self._window.approvals.pending() else None
        if tab is not None:
            self._window.tabs.setCurrentWidget(tab)
