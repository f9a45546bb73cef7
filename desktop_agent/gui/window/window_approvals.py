"""The window's side of approvals: tab badges, the dock that appears when needed.

A request in the visible tab is answered on its tool card; one from a background
tab shows the Approvals dock (the queue across tabs), badges that tab and says so
in the status bar. The dock hides again once nothing is listed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QIcon

from desktop_agent.gui.icons import current_palette, icon

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar

    from desktop_agent.gui.approvals.approval_dock import ApprovalDock
    from desktop_agent.gui.approvals.approval_queue import ApprovalQueue, ApprovalRequest
    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.open_tabs import OpenTabs


class ApprovalRouting:
    """Approvals for the main window: tab badges, the dock, the status bar, the notifier.

    Args:
        tabs: The window's open conversations.
        queue: The approval queue across tabs.
        dock: The Approvals dock that shows the queue.
        status: The window's status bar.
        notify: Tells the person outside the window (conversation title, tool name).
    """

    def __init__(self, tabs: OpenTabs, queue: ApprovalQueue, dock: ApprovalDock,
                 status: QStatusBar, notify: Callable[[str, str], object]) -> None:
        self._tabs = tabs
        self._queue = queue
        self._dock = dock
        self._status = status
        self._notify = notify
        dock.answered.connect(self._back_to_typing)

    def update_tab_title(self, controller: ConversationController) -> None:
        """Show a conversation's title, pending-approval badge and busy icon on its tab."""
        tab = self._tabs.tab_for(controller.conversation_id)
        if tab is None:
            return
        tabs = self._tabs.widget
        index = tabs.indexOf(tab)
        pending = len(self._queue.pending(controller.conversation_id))
        title = controller.title
        if len(title) > 28:
            title = title[:27] + "…"
        if pending:
            title = f"● {title} ({pending})"
        tabs.setTabText(index, title)
        tabs.setTabToolTip(index, controller.title + (
            f" — {pending} tool call(s) wait for approval" if pending else ""))
        name = "circle-help" if pending else ("hourglass" if controller.busy else None)
        tabs.setTabIcon(index, icon(name, current_palette().warning if pending else None)
                        if name else QIcon())

    def tab_badge(self, conversation_id: str) -> str:
        """The text of a conversation's tab (shows the pending-approval badge)."""
        tab = self._tabs.tab_for(conversation_id)
        return self._tabs.widget.tabText(self._tabs.widget.indexOf(tab)) if tab is not None else ""

    def on_pending_count(self, conversation_id: str, _count: int) -> None:
        """Badge the conversation's tab anew; hide the dock once nothing waits."""
        controller = self._tabs.controllers.get(conversation_id)
        if controller is not None:
            self.update_tab_title(controller)
        self.hide_idle_approvals()

    def hide_idle_approvals(self) -> None:
        """The queue takes no room while nothing waits (the conversation is the main surface)."""
        if not self._queue.requests() and not self._dock.isHidden():
            self._dock.hide()

    def on_approval_requested(self, request: ApprovalRequest) -> None:
        """A request in the visible tab is answered on its card; elsewhere the queue shows.

        A subagent's call has no card of its own (its delegation card shows the run),
        so it is asked in the dock, which says which subagent asks.
        """
        current = self._tabs.current_controller()
        if current is None or current.conversation_id != request.conversation_id \
                or request.agent is not None:
            self._dock.show()
            self._dock.raise_()
            asker = (f"The subagent “{request.agent}” of “{request.conversation_title}”"
                     if request.agent else f"“{request.conversation_title}”")
            self._status.showMessage(
                f"{asker} asks to run {request.tool_name}: see Approvals (Ctrl+Shift+A).",
                10000)
        self._notify(request.conversation_title, request.tool_name)

    def _back_to_typing(self) -> None:
        """After an answer in the dock, the keyboard goes back to the message box.

        Why: answering often empties the queue, and the dock hides with the focus
        in it; Qt then hands the focus to the next widget in the chain, the
        sidebar's search field, where the person's next keys would land.
        """
        tab = self._tabs.current()
        if tab is not None:
            tab.focus_composer()

    def focus_approvals(self) -> None:
        """Show the Approvals dock and the tab of the oldest pending request."""
        self._dock.show()
        self._dock.raise_()
        self._dock.setFocus()
        pending = self._queue.pending()
        tab = self._tabs.tab_for(pending[0].conversation_id) if pending else None
        if tab is not None:
            self._tabs.widget.setCurrentWidget(tab)
