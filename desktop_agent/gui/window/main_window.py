"""The main window: conversation tabs, the Approvals and Conversations docks, menus.

The window creates one :class:`ConversationController` per open tab and wires
it to a :class:`ConversationTab`; it owns the shared approval queue, the
server catalog and the store. It restores geometry, dock layout and open tabs
on start and saves them on close.

This module keeps building the window, its tabs (open, close, titles, which
actions apply), approvals and shutdown. Objects it owns do the rest, one job
each: ``persistence`` (:mod:`.window_state`: save and restore), ``servers``
(:mod:`.window_servers`: server and model choice), ``local_models``
(:mod:`.window_models`: the Models window and the models the app runs),
``transfer`` (:mod:`.window_transfer`: import and export), ``chrome``
(:mod:`.window_chrome`: headers, Preferences, Help) and ``approval_view``
(:mod:`.window_approvals`: badges and the dock);
the menus and toolbar are built by :mod:`.window_actions` (``menu_actions``).
The parts get only what they use (the open tabs as
:class:`~desktop_agent.gui.conversation.open_tabs.OpenTabs`, the store, the
catalog, callables for the window's own steps), never the window's class: none
of them imports this module, so the window and its parts form no import cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QInputDialog,
    QMainWindow,
    QStackedWidget,
    QStyle,
    QTabBar,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.core.wire.connection_pool import ConnectionPool
from desktop_agent.gui.approvals.approval_dock import ApprovalDock
from desktop_agent.gui.approvals.approval_queue import ApprovalQueue
from desktop_agent.gui.conversation.branches import switch_branch
from desktop_agent.gui.conversation.open_tabs import OpenTabs
from desktop_agent.gui.icons import set_icon
from desktop_agent.gui.servers.server_catalog import ServerCatalog
from desktop_agent.gui.theme import (
    DEFAULT_FONT_PT,
    style_chrome,
    style_chrome_when_shown,
    theme_signals,
)
from desktop_agent.gui.window.conversation_sidebar import ConversationSidebar
from desktop_agent.gui.window.notifications import ApprovalNotifier
from desktop_agent.gui.window.preferences import Preferences
from desktop_agent.gui.window.store_watcher import StoreWatcher
from desktop_agent.gui.window.window_actions import ActionSlots, WindowActions, build_actions
from desktop_agent.gui.window.window_approvals import ApprovalRouting
from desktop_agent.gui.window.window_chrome import WindowChrome
from desktop_agent.gui.window.window_models import WindowModels
from desktop_agent.gui.window.window_pages import EmptyStatePage, NoticeBar, OpeningPage
from desktop_agent.gui.window.window_servers import LAST_SERVER_KEY, ServerChoice
from desktop_agent.gui.window.window_state import (
    OPEN_TABS_KEY,
    WindowPersistence,
    default_window_settings,
)
from desktop_agent.session import (
    DEFAULT_TITLE,
    ToolCatalog,
    create_conversation,
    is_new_work_folder,
    release_work_folder,
)

if TYPE_CHECKING:
    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.conversation_tab import ConversationTab
    from desktop_agent.gui.conversation.settings_dialog import ConversationSettingsDialog
    from desktop_agent.gui.window.window_transfer import WindowTransfer
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.gui.window")

# Kept importable from here: the keys are part of what the window stores.
__all__ = ["LAST_SERVER_KEY", "OPEN_TABS_KEY", "MainWindow"]


class MainWindow(QMainWindow):
    """Desktop Agent's window.

    Args:
        store: The open conversation store.
        tools: Which tools conversations may offer (default: the built-in ones).
        approval_timeout: Seconds before an unanswered approval is denied.
        discover_on_start: Search for local servers when the window opens.
        window_settings: Where geometry and dock layout are kept (default: an ini
            file in the data folder).
        tabs_after_paint: Reopen the saved conversations in the loop turn after the
            first paint, not before it (the app's window; see :meth:`_open_saved_tabs`).

    Signals:
        tab_opened(str): A conversation id got a tab.
        closed(): The window closed and every conversation was shut down.
        first_painted(): The window has painted once; heavy work may start now.
        conversations_shown(): The saved conversations are open and the current one
            takes typing (at once, or after the first paint with ``tabs_after_paint``).
    """

    tab_opened = Signal(str)
    closed = Signal()
    first_painted = Signal()
    conversations_shown = Signal()

    menu_actions: WindowActions

    def __init__(self, store: Store, *, tools: ToolCatalog | None = None,
                 approval_timeout: float | None = 300.0, discover_on_start: bool = True,
                 window_settings: QSettings | None = None,
                 tabs_after_paint: bool = False) -> None:
        super().__init__()
        self.setWindowTitle("Desktop Agent")
        self.setObjectName("mainWindow")
        self.resize(1200, 800)
        self.store = store
        self.tools = tools or ToolCatalog()
        # One HTTP pool per model server for every tab (not one per conversation).
        self.connection_pool = ConnectionPool()
        self.approval_timeout = approval_timeout
        self.controllers: dict[str, ConversationController] = {}
        self._closing_tasks: set[asyncio.Future[None]] = set()
        self._closed = False
        self.window_settings = window_settings or default_window_settings()
        self.tabs = QTabWidget()
        self.open_tabs = OpenTabs(self.tabs, self.controllers)

        self.approvals = ApprovalQueue(self)
        self.catalog = ServerCatalog(store, self, connection_pool=self.connection_pool)
        # The window's jobs, each in an object of its own that gets only what it uses.
        self.persistence = WindowPersistence(
            self, self.open_tabs, store, self.window_settings,
            reopen=lambda record, shown: self.open_record(record, make_current=shown),
            new_conversation=self.new_conversation)
        self.servers = ServerChoice(
            self.open_tabs, self.catalog, store, self.statusBar(), parent=self,
            new_conversation=self.new_conversation,
            show_model=lambda text: self.menu_actions.server_action.setText(text))
        self.local_models = WindowModels(
            self.open_tabs, self.catalog, self.servers, store, self.statusBar(), parent=self,
            new_conversation=self.new_conversation)
        self.chrome = WindowChrome(self, self.open_tabs, self.catalog, self.servers, store,
                                   Preferences.load(store), self._use_preferences)
        if self.chrome.preferences.theme != "system" or \
                self.chrome.preferences.font_pt != DEFAULT_FONT_PT:
            self.chrome.apply_looks()
        # Model menus first: a conversation given a server next ticks its model there.
        self.catalog.servers_changed.connect(self.chrome.fill_model_menus)
        self.catalog.servers_changed.connect(self.servers.on_servers_changed)
        self.catalog.discovery_started.connect(self.servers.refresh_notices)

        self.notice = NoticeBar()
        self.tabs.setObjectName("conversationTabs")
        self.tabs.setMovable(True)
        self.tabs.setTabsClosable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.tabBar().setDrawBase(False)
        self.tabs.tabCloseRequested.connect(lambda i: self.close_tab(i))
        self.tabs.currentChanged.connect(self._on_current_tab)
        self.tabs.tabBarDoubleClicked.connect(self._rename_tab_at)
        self.tabs.tabBar().tabMoved.connect(lambda _a, _b: self.persistence.save_open_tabs())
        self._stack = QStackedWidget()
        self.empty_page = EmptyStatePage()
        self.empty_page.new_requested.connect(lambda: self.new_conversation())
        self._stack.addWidget(self.empty_page)
        self._stack.addWidget(self.tabs)
        self.conversations_ready = False  # see _open_saved_tabs
        self.opening_page: OpeningPage | None = None
        if tabs_after_paint:
            self.opening_page = OpeningPage()
            self._stack.addWidget(self.opening_page)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.notice)
        layout.addWidget(self._stack, 1)
        self.setCentralWidget(central)

        self.approval_dock = ApprovalDock(self.approvals, self)
        self.approval_dock.conversation_requested.connect(self.open_conversation)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.approval_dock)
        self.sidebar = ConversationSidebar(store, self)
        self.sidebar.open_requested.connect(self.open_conversation)
        self.sidebar.delete_requested.connect(self.delete_conversation)
        self._transfer: WindowTransfer | None = None  # made for the first import or export
        self.sidebar.export_requested.connect(lambda ids: self.transfer.ask_export_selected(ids))
        self.sidebar.rename_requested.connect(self.rename_conversation)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.sidebar)
        self.resizeDocks([self.sidebar, self.approval_dock], [240, 340],
                         Qt.Orientation.Horizontal)
        icon = QApplication.windowIcon()
        self.notifier = ApprovalNotifier(self, icon if not icon.isNull() else
                                         self.style().standardIcon(
                                             QStyle.StandardPixmap.SP_MessageBoxQuestion))
        self.approval_view = ApprovalRouting(self.open_tabs, self.approvals, self.approval_dock,
                                             self.statusBar(), self.notifier.notify)
        self.approvals.pending_count_changed.connect(self.approval_view.on_pending_count)

        self._sidebar_refresh = QTimer(self)
        self._sidebar_refresh.setSingleShot(True)
        self._sidebar_refresh.setInterval(300)
        self._sidebar_refresh.timeout.connect(self.sidebar.refresh)
        # Conversations written by the REST server or an import appear without a restart.
        self.store_watcher = StoreWatcher(store, self)
        self.store_watcher.changed_elsewhere.connect(self._on_store_changed_elsewhere)
        self.store_watcher.start()

        self.menu_actions = build_actions(self, ActionSlots(
            new_conversation=self.new_conversation, close_tab=self.close_current_tab,
            import_files=lambda: self.transfer.ask_import(),
            export_conversation=lambda: self.transfer.ask_export_current(),
            export_markdown=lambda: self.transfer.ask_export_markdown(),
            export_all=lambda: self.transfer.ask_export_all(), quit=self.close,
            stop=self.stop_current,
            regenerate=self.regenerate_current, rename=self.rename_current,
            settings=self.open_settings, choose_server=self.servers.open_server_picker,
            models=self.local_models.open_models_window, mcp_servers=self.open_mcp_servers,
            rediscover=self.catalog.refresh, focus_approvals=self.approval_view.focus_approvals,
            preferences=self.chrome.open_preferences, shortcuts=self.chrome.show_shortcuts,
            about=self.chrome.show_about),
            [self.approval_dock.toggleViewAction(), self.sidebar.toggleViewAction()])
        # A slot of the window itself (not of its part): Qt disconnects it when the
        # window is deleted, and the app-wide theme signal outlives every window.
        theme_signals().changed.connect(self._on_theme_changed)  # system or Preferences
        style_chrome(self.menuBar(), self.menu_actions.toolbar, self.sidebar,
                     self.tabs.tabBar(), self.statusBar())
        # Hidden in an idle window (nothing to approve, tabs open, no notice): styled when shown.
        style_chrome_when_shown(self.approval_dock, self.notice, self.empty_page)
        self._update_actions()
        self.statusBar().showMessage("Ready")
        self.persistence.restore_layout()
        self.approval_view.hide_idle_approvals()
        self._painted = False
        self.installEventFilter(self)
        if self.opening_page is not None:
            self._stack.setCurrentWidget(self.opening_page)
            self._update_actions()
            # Connected first: the server search and the context estimates use the tabs.
            self.first_painted.connect(self._open_saved_tabs)
        else:
            self._open_saved_tabs()
        if discover_on_start:
            # Discovery imports the openai SDK and the provider code: only after the first paint.
            self.first_painted.connect(self.catalog.refresh)
        self.first_painted.connect(self._estimate_restored_contexts)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Notice the first paint, then stop watching."""
        if watched is self and event.type() == QEvent.Type.Paint and not self._painted:
            self._painted = True
            self.removeEventFilter(self)
            QTimer.singleShot(0, self.first_painted.emit)
        return super().eventFilter(watched, event)

    def _open_saved_tabs(self) -> None:
        """Reopen last time's tabs (or one new conversation) and show the current one.

        With ``tabs_after_paint`` this runs in the loop turn after the first paint:
        importing the transcript and the session for the first tab and building it
        took about a third of the CPU to the window's first paint, which now shows
        the menus, the toolbar and the Conversations list without waiting for them.
        Until then the saved tabs are not saved over (closing the window that soon
        keeps them: ``WindowPersistence.save_open_tabs``).
        """
        if self._closed:
            return  # closed before its first paint was handled: nothing to show
        self.persistence.restore_tabs()
        if (shown := self.current_tab()) is not None:
            shown.ensure_loaded()  # the current tab of last time was not among them
            shown.focus_composer()
        self.conversations_ready = True
        if self.opening_page is not None:
            self._stack.removeWidget(self.opening_page)
            self.opening_page.deleteLater()
            self.opening_page = None
        self._update_empty_state()
        self.conversations_shown.emit()

    # -- tabs -------------------------------------------------------------------

    def current_controller(self) -> ConversationController | None:
        """The controller of the visible tab."""
        return self.open_tabs.current_controller()

    def current_tab(self) -> ConversationTab | None:
        """The visible tab."""
        return self.open_tabs.current()

    def tab_for(self, conversation_id: str) -> ConversationTab | None:
        """The tab showing a conversation, if it is open."""
        return self.open_tabs.tab_for(conversation_id)

    def new_conversation(self, *, same_folder: bool = False) -> ConversationController:
        """Create a conversation (with the last used server and model) and show it.

        ``same_folder``: in the visible conversation's working folder, even one the
        app made for it (``/clear``: the person goes on with the same files).
        """
        settings: dict[str, Any] = {}
        last = self.store.get_setting(LAST_SERVER_KEY) or {}
        pre = self.catalog.preselection
        if pre.base_url and pre.model:
            settings = {"base_url": pre.base_url, "model": pre.model}
        elif isinstance(last, dict) and last.get("model") and \
                (last.get("base_url") or last.get("server")):  # a server, or this computer
            settings = {k: v for k, v in last.items() if v is not None}
        record = create_conversation(self.store, self.chrome.preferences.work_root(),
                                     settings={**settings,
                                               **self._folder_to_carry_on(same_folder)})
        controller = self.open_record(record)
        self.sidebar.refresh()
        return controller

    def _folder_to_carry_on(self, always: bool = False) -> dict[str, Any]:
        """The visible tab's working folder, when the person chose it (for a new conversation).

        Why: a person working on one project picked its folder again for every
        new conversation. A folder the app made for one conversation
        (``Chat <date>``) is not carried on: a new conversation gets its own,
        unless ``always`` (``/clear`` goes on in the same folder, whoever made it).
        """
        shown = self.current_controller()
        workdir = shown.settings.get("workdir") if shown is not None else None
        if not isinstance(workdir, str) or not workdir or (
                not always and is_new_work_folder(workdir, self.chrome.preferences.work_root())):
            return {}
        return {"workdir": workdir}

    def open_conversation(self, conversation_id: str) -> ConversationController | None:
        """Show a stored conversation (switches to its tab if already open)."""
        tab = self.tab_for(conversation_id)
        if tab is not None:
            self.tabs.setCurrentWidget(tab)
            return tab.controller
        record = self.store.get_conversation(conversation_id)
        if record is None:
            self.statusBar().showMessage("That conversation no longer exists.", 5000)
            return None
        return self.open_record(record)

    def _on_theme_changed(self, dark: bool) -> None:
        self.chrome.retint_icons(dark)
        for controller in list(self.controllers.values()):
            self.approval_view.update_tab_title(controller)  # the badge icons' colours

    def _use_preferences(self, prefs: Preferences) -> None:
        """New Preferences were saved: the next conversations opened use their timeout."""
        self.approval_timeout = prefs.timeout()

    def open_record(self, record: Any, *, make_current: bool = True) -> ConversationController:
        from desktop_agent.gui.conversation.conversation_controller import (
            ConversationController,
        )
        from desktop_agent.gui.conversation.conversation_tab import ConversationTab

        controller = ConversationController(self.store, record, self.approvals, self.tools,
                                            approval_timeout=self.approval_timeout,
                                            connection_pool=self.connection_pool,
                                            local_servers=self.local_models, parent=self)
        if make_current:
            self.sidebar.follow(record.id)
        self.controllers[record.id] = controller
        tab = ConversationTab(controller, self.approvals, lazy=not make_current)
        tab.choose_server_requested.connect(self.servers.open_server_picker)
        tab.retry_discovery_requested.connect(self.catalog.refresh)
        tab.enter_url_requested.connect(lambda: self.servers.open_server_picker(focus_url=True))
        tab.run_local_requested.connect(self.local_models.run_on_this_computer)
        tab.restart_engine_requested.connect(self.local_models.restart)
        tab.new_conversation_requested.connect(lambda: self.new_conversation(same_folder=True))
        tab.when_built(lambda: self._wire_parts(tab))
        tab.branch_requested.connect(
            lambda key, offset, c=controller: self.switch_branch(c, key, offset))
        index = self.tabs.addTab(tab, record.title)
        close = QToolButton()
        close.setObjectName("tabClose")
        set_icon(close, "x")
        close.setToolTip("Close this conversation (Ctrl+W)")
        close.setAccessibleName("Close conversation")
        close.clicked.connect(lambda: self.close_tab(self.tabs.indexOf(tab)))
        self.tabs.tabBar().setTabButton(index, QTabBar.ButtonPosition.RightSide, close)
        retitle = self.approval_view.update_tab_title
        controller.title_changed.connect(lambda _t, c=controller: retitle(c))
        controller.title_changed.connect(lambda _t: self._sidebar_refresh.start())
        controller.busy_changed.connect(lambda _b, c=controller: retitle(c))
        controller.busy_changed.connect(lambda _b: self._update_actions())
        controller.busy_changed.connect(lambda _b: self._sidebar_refresh.start())
        controller.settings_changed.connect(lambda _s: self.servers.refresh_notices())
        controller.settings_changed.connect(lambda _s: self.servers.update_server_button())
        controller.approval_requested.connect(self.approval_view.on_approval_requested)
        controller.notice.connect(self.notice.show_message)
        controller.window_fixed.connect(
            lambda model, _problem, c=controller: self.servers.show_model_made(c, model))
        if make_current:
            self.tabs.setCurrentIndex(index)
        self._update_empty_state()
        self.persistence.save_open_tabs()
        self.servers.refresh_notices()
        self.tab_opened.emit(record.id)
        return controller

    def _wire_parts(self, tab: ConversationTab) -> None:
        """Connect a tab's widgets to the window once they exist (see ``ConversationTab``)."""
        self.chrome.wire_header(tab)
        tab.header.instructions_clicked.connect(self.open_settings)
        tab.transcript.set_branch_source(self.store.branch_position)
        self.servers.refresh_notice(tab)
        tab.controller.doctor_notice.connect(tab.doctor.show_notice)
        tab.doctor.settings_requested.connect(self.open_settings)

    def delete_conversation(self, conversation_id: str) -> None:
        """Close the conversation's tab (denying its approvals) and delete it from the store."""
        tab = self.tab_for(conversation_id)
        closing = self.close_tab(self.tabs.indexOf(tab)) if tab is not None else None

        async def delete_after_close() -> None:
            if closing is not None:
                await closing  # its turn writes its last words before the rows go
            from desktop_agent.session import delete_conversation

            # Rows and the conversation's keyring secrets, as the REST server does.
            await delete_conversation(self.store, conversation_id)
            if not self._closed:
                self.sidebar.refresh()
                self.statusBar().showMessage("Conversation deleted.", 5000)

        self._track(asyncio.ensure_future(delete_after_close()))

    async def _prune_left_behind(self) -> None:
        """Remove what a deletion cut short left in the data folder (checkpoints, previews).

        When the window closes, off the UI thread (``serve`` does it at start): a crash
        between deleting a conversation's rows and its folders would otherwise keep
        them for ever. Not at start: an idle window loads nothing it does not show
        (the checkpoint modules), and closing already waits on the app's own work.
        """
        from desktop_agent.session import prune_left_behind

        try:
            await asyncio.to_thread(prune_left_behind, self.store)
        except Exception as exc:  # noqa: BLE001 - closing must go on (a full disk, a closed store)
            log.warning("could not remove a deleted conversation's checkpoints: %s", exc)

    def _track(self, task: asyncio.Future[Any]) -> None:
        """Keep a reference to a background task until it is done (shutdown awaits it)."""
        self._closing_tasks.add(task)
        task.add_done_callback(self._closing_tasks.discard)

    def close_current_tab(self) -> None:
        """Close the visible tab (Ctrl+W)."""
        if self.tabs.count():
            self.close_tab(self.tabs.currentIndex())

    def close_tab(self, index: int) -> asyncio.Future[None] | None:
        """Close a tab: deny its pending approvals, stop its turn, forget empty chats.

        Returns the task that shuts the conversation down.
        """
        tab = self._tab_at(index)
        if tab is None:
            return None
        controller = tab.controller
        self.tabs.removeTab(index)
        self.controllers.pop(controller.conversation_id, None)
        task = asyncio.ensure_future(self._dispose(controller, tab))
        self._track(task)
        self._update_empty_state()
        self.persistence.save_open_tabs()
        return task

    async def _dispose(self, controller: ConversationController, tab: ConversationTab) -> None:
        await controller.close()
        with contextlib.suppress(Exception):  # already deleted, or the store closed
            if controller.title == DEFAULT_TITLE and controller.is_empty():
                self.store.delete_conversation(controller.conversation_id)
                release_work_folder(controller.settings, self.chrome.preferences.work_root())
        tab.deleteLater()
        controller.deleteLater()
        if not self._closed:
            self._sidebar_refresh.start()

    def _on_current_tab(self, _index: int) -> None:
        self._update_actions()
        self.servers.update_server_button()
        self.servers.refresh_notices()
        tab = self.current_tab()
        self.sidebar.follow(tab.controller.conversation_id if tab is not None else None)
        if tab is not None:
            self.approval_dock.show_conversation(tab.controller.conversation_id)
            if self.persistence.restoring:
                # While tabs are restored the first one added is current for a moment:
                # loading it then built its widgets and transcript for nothing (1.7 MiB
                # RSS with 40 messages, bench/startup.py); the tab that was current
                # loads instead.
                return
            tab.ensure_loaded()
            tab.focus_composer()

    def _update_empty_state(self) -> None:
        if self.conversations_ready:  # while they reopen, no tab is shown (nor built)
            self._stack.setCurrentIndex(1 if self.tabs.count() else 0)
        self._update_actions()

    def _update_actions(self) -> None:
        controller = self.current_controller()
        has = controller is not None
        busy = bool(controller and controller.busy)
        acts = self.menu_actions
        for action in (acts.close_action, acts.export_action, acts.export_md_action,
                       acts.rename_action, acts.settings_action, acts.server_action):
            action.setEnabled(has)
        acts.stop_action.setEnabled(busy)
        acts.regenerate_action.setEnabled(bool(controller and controller.can_regenerate))

    # -- conversation actions ------------------------------------------------------

    def stop_current(self) -> None:
        """Stop the visible conversation's reply."""
        if (c := self.current_controller()) is not None:
            c.stop()

    def regenerate_current(self) -> None:
        """Answer the last message of the visible conversation again."""
        if (c := self.current_controller()) is not None:
            c.regenerate()

    def switch_branch(self, controller: ConversationController, message_id: str,
                      offset: int) -> bool:
        """Show the previous (-1) or next (+1) version of a message (not during a reply)."""
        if controller.busy or not switch_branch(self.store, controller.conversation_id,
                                                message_id, offset):
            return False
        controller.refresh_from_store()
        return True

    def rename_conversation(self, conversation_id: str) -> None:
        """Rename from the sidebar: open the conversation, then ask for the title."""
        if self.open_conversation(conversation_id) is not None:
            self.rename_current()

    def rename_current(self) -> None:
        """Ask for a new title for the visible conversation."""
        self._rename_tab_at(self.tabs.currentIndex())

    def _tab_at(self, index: int) -> ConversationTab | None:
        """The conversation tab at ``index`` of the tab bar, if there is one."""
        widget = self.tabs.widget(index)
        return next((tab for tab in self.open_tabs.all() if tab is widget), None)

    def _rename_tab_at(self, index: int) -> None:
        tab = self._tab_at(index)
        if tab is None:
            return
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Rename conversation")
        dialog.setLabelText("Title:")
        dialog.setTextValue(tab.controller.title)
        dialog.textValueSelected.connect(tab.controller.rename)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()

    @property
    def transfer(self) -> WindowTransfer:
        """File → Import / Export, made when first used.

        Why lazy: its dialogs and the store's import and export modules are not an
        idle window's (``tests/gui/test_idle_imports.py``).
        """
        if self._transfer is None:
            from desktop_agent.gui.window.window_transfer import WindowTransfer

            self._transfer = WindowTransfer(
                self, self.open_tabs, self.store, self.window_settings, self.notice,
                open_record=self.open_record, list_changed=self.sidebar.refresh)
        return self._transfer

    def open_mcp_servers(self) -> QDialog:
        """Server → MCP servers…: the servers' states and logs (one panel, raised if open)."""
        # Imported when first opened: an idle window has no MCP panel.
        from desktop_agent.gui.servers.mcp_servers_panel import McpServersPanel
        from desktop_agent.session import McpServerBoard

        panel = self.findChild(McpServersPanel, "mcpServersPanel")
        if panel is None:
            panel = McpServersPanel(McpServerBoard(self.tools), self)
            panel.finished.connect(panel.deleteLater)
        panel.show()
        panel.raise_()
        return panel

    def open_settings(self) -> ConversationSettingsDialog | None:
        """Open the visible conversation's settings (non-modal)."""
        controller = self.current_controller()
        if controller is None:
            return None
        # Imported when first opened: the dialog and its boxes are not an idle window's.
        from desktop_agent.gui.window.settings_opener import open_conversation_settings

        return open_conversation_settings(self, controller, self.tools, self.store, self._track)

    def _on_store_changed_elsewhere(self) -> None:
        """Another process wrote: list new conversations, show idle open ones again."""
        self._sidebar_refresh.start()
        for controller in list(self.controllers.values()):
            controller.refresh_from_store()

    def _estimate_restored_contexts(self) -> None:
        """Count restored conversations' tokens one after another, in one worker at a time.

        Each reads its branch from the store in a worker thread and guesses the count
        without the tokenizer (see ``session.context_estimate``); run side by side,
        each worker thread kept its own allocator arena.
        """
        async def one_by_one() -> None:
            for controller in list(self.controllers.values()):
                await controller.estimate_context()

        self._track(asyncio.ensure_future(one_by_one()))

    # -- lifecycle ------------------------------------------------------------------------

    def show_error_notice(self, text: str) -> None:
        """Show an unexpected error without blocking (the error sink calls this)."""
        self.notice.show_message(text)

    async def shutdown(self) -> None:
        """Deny pending approvals, cancel every turn and discovery, release clients."""
        if not self._closed:
            self.persistence.save_state()
        self._closed = True
        self._sidebar_refresh.stop()
        self.store_watcher.stop()
        await self.catalog.close()
        await self.local_models.close()  # no model outlives the window
        controllers = list(self.controllers.values())
        self.controllers.clear()
        await asyncio.gather(*(c.close() for c in controllers), return_exceptions=True)
        others = [t for t in self._closing_tasks if t is not asyncio.current_task()]
        if others:
            await asyncio.gather(*others, return_exceptions=True)
        await self._prune_left_behind()  # every deletion this window started is done
        await self.connection_pool.aclose()
        try:
            await self.tools.aclose()
        except Exception as exc:  # noqa: BLE001 - a server that will not stop must not block closing
            log.warning("MCP servers did not stop cleanly: %s", exc)
        self.closed.emit()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Save state and deny pending approvals before the window goes."""
        if not self._closed:
            self.persistence.save_state()
            for controller in self.controllers.values():
                self.approvals.cancel_conversation(controller.conversation_id)
            self._closed = True
            self._track(asyncio.ensure_future(self.shutdown()))
        super().closeEvent(event)

