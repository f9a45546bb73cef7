"""The window's side of approvals: tab badges, the dock that appears when needed.

A request in the visible tab is answered on its tool card; one from a background
tab shows the Approvals dock (the queue across tabs), badges that tab and says so
in the status bar. The dock hides again once nothing is listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QIcon

from .conversation_tab import ConversationTab
from .icons import current_palette, icon

if TYPE_CHECKING:
    from PySide6.QtWidgets import QTabWidget

    from .approval_dock import ApprovalDock
    from .approval_queue import ApprovalQueue, ApprovalRequest
    from .conversation_controller import ConversationController
    from .notifications import ApprovalNotifier


class WindowApprovalsMixin:
    """Approvals for :class:`~desktop_agent.gui.main_window.MainWindow`."""

    tabs: QTabWidget
    approvals: ApprovalQueue
    approval_dock: ApprovalDock
    notifier: ApprovalNotifier
    controllers: dict[str, ConversationController]

    if TYPE_CHECKING:  # provided by MainWindow / QMainWindow
        def current_controller(self) -> ConversationController | None: ...
        def tab_for(self, conversation_id: str) -> ConversationTab | None: ...
        def statusBar(self) -> Any: ...  # Qt's name

    def _update_tab_title(self, controller: ConversationController) -> None:
        tab = self.tab_for(controller.conversation_id)
        if tab is None:
            return
        index = self.tabs.indexOf(tab)
        pending = len(self.approvals.pending(controller.conversation_id))
        title = controller.title
        if len(title) > 28:
            title = title[:27] + "…"
        if pending:
            title = f"● {title} ({pending})"
        self.tabs.setTabText(index, title)
        self.tabs.setTabToolTip(index, controller.title + (
            f" — {pending} tool call(s) wait for approval" if pending else ""))
        name = "circle-help" if pending else ("hourglass" if controller.busy else None)
        self.tabs.setTabIcon(index, icon(name, current_palette().warning if pending else None)
                             if name else QIcon())

    def tab_badge(self, conversation_id: str) -> str:
        """The text of a conversation's tab (shows the pending-approval badge)."""
        tab = self.tab_for(conversation_id)
        return self.tabs.tabText(self.tabs.indexOf(tab)) if tab is not None else ""

    def _on_pending_count(self, conversation_id: str, _count: int) -> None:
        controller = self.controllers.get(conversation_id)
        if controller is not None:
            self._update_tab_title(controller)
        self._hide_idle_approvals()

    def _hide_idle_approvals(self) -> None:
        """The queue takes no room while nothing waits (the conversation is the main surface)."""
        if not self.approvals.requests() and not self.approval_dock.isHidden():
            self.approval_dock.hide()

    def _on_approval_requested(self, request: ApprovalRequest) -> None:
        """A request in the visible tab is answered on its card; elsewhere the queue shows."""
        current = self.current_controller()
        if current is None or current.conversation_id != request.conversation_id:
            self.approval_dock.show()
            self.approval_dock.raise_()
            self.statusBar().showMessage(
                f"“{request.conversation_title}” asks to run {request.tool_name}: "
                "see Approvals (Ctrl+Shift+A).", 10000)
        self.notifier.notify(request.conversation_title, request.tool_name)

    def focus_approvals(self) -> None:
        """Show the Approvals dock and the tab of the oldest pending request."""
        self.approval_dock.show()
        self.approval_dock.raise_()
        self.approval_dock.setFocus()
        tab = self.tab_for(self.approvals.pending()[0].conversation_id) \
            if self.approvals.pending() else None
        if tab is not None:
            self.tabs.setCurrentWidget(tab)
