"""The window's open conversations: which tab shows which, and which one is visible.

The window's parts (approvals, server choice, headers, import and export,
saving the open tabs) each need to find a conversation's tab or the visible
one. They get this object rather than the whole window, so they hold only
what they use and no part imports the window that owns them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QTabWidget

    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.conversation_tab import ConversationTab


class OpenTabs:
    """The conversation tabs of one window and their controllers.

    The tab's module (the transcript, the session behind it) is imported only when
    there is a tab to look at: the window asks which tab shows before its first paint,
    when it has none yet (``MainWindow(tabs_after_paint=True)``).

    Attributes:
        widget: The tab widget the conversations are shown in.
        controllers: Each open conversation's controller, by conversation id
            (the window adds and removes them as tabs open and close).
    """

    def __init__(self, widget: QTabWidget,
                 controllers: dict[str, ConversationController]) -> None:
        self.widget = widget
        self.controllers = controllers

    def all(self) -> list[ConversationTab]:
        """The conversation tabs, in the order shown."""
        if self.widget.count() == 0:
            return []
        from desktop_agent.gui.conversation.conversation_tab import ConversationTab

        tabs = (self.widget.widget(i) for i in range(self.widget.count()))
        return [tab for tab in tabs if isinstance(tab, ConversationTab)]

    def current(self) -> ConversationTab | None:
        """The visible tab."""
        tab = self.widget.currentWidget()
        if tab is None:
            return None
        from desktop_agent.gui.conversation.conversation_tab import ConversationTab

        return tab if isinstance(tab, ConversationTab) else None

    def current_controller(self) -> ConversationController | None:
        """The controller of the visible tab."""
        tab = self.current()
        return tab.controller if tab is not None else None

    def tab_for(self, conversation_id: str) -> ConversationTab | None:
        """The tab showing a conversation, if it is open."""
        for tab in self.all():
            if tab.controller.conversation_id == conversation_id:
                return tab
        return None
