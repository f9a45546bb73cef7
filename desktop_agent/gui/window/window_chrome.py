"""The window's side of each conversation header, Preferences and the Help menu.

This part of the window ties a tab's :class:`~.conversation_header.ConversationHeader` to
its controller (model, folder, sandbox, network all become settings), keeps
the model menus filled from the server catalog (and the folder menus from the
folders picked lately), and applies Preferences.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QApplication

from desktop_agent.gui.icons import icon, retint
from desktop_agent.gui.loop_work import when_loop_runs
from desktop_agent.gui.theme import set_preferences
from desktop_agent.gui.window.preferences import Preferences
from desktop_agent.gui.window.recent_folders import RecentFolders

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from desktop_agent.gui.conversation.conversation_tab import ConversationTab
    from desktop_agent.gui.conversation.open_tabs import OpenTabs
    from desktop_agent.gui.servers.server_catalog import ServerCatalog
    from desktop_agent.gui.window.preferences_dialog import PreferencesDialog
    from desktop_agent.gui.window.window_servers import ServerChoice
    from desktop_agent.store import Store


def work_folder(conversation_id: str, settings: dict[str, Any]) -> Path:
    """The folder a conversation's tools use (without creating it)."""
    chosen = settings.get("workdir")
    if chosen:
        return Path(str(chosen)).expanduser()
    from desktop_agent.appdata.paths import workdirs_dir

    return workdirs_dir() / conversation_id


def _sandbox_statuses() -> dict[str, Any]:
    """Each level's SandboxStatus here (blocking: ~1 s of imports and a bwrap probe)."""
    from desktop_agent.session import sandbox_status

    return {level: sandbox_status({"sandbox": level})
            for level in ("workdir", "read_only", "off")}


class WindowChrome:
    """Headers, Preferences and Help for the main window.

    Args:
        window: The main window: the dialogs' parent, the holder of the actions
            whose shortcuts are listed and whose icons follow the theme.
        tabs: The window's open conversations.
        catalog: The servers found and added (the headers' model menus).
        servers: Server and model choice, which a header's model menu uses.
        store: Where Preferences are kept.
        preferences: The Preferences in use.
        preferences_applied: Called with new Preferences after they are saved,
            so the window uses them for what comes next (the approval timeout).

    Attributes:
        preferences: The Preferences in use.
    """

    def __init__(self, window: QWidget, tabs: OpenTabs, catalog: ServerCatalog,
                 servers: ServerChoice, store: Store, preferences: Preferences,
                 preferences_applied: Callable[[Preferences], None]) -> None:
        self._window = window
        self._tabs = tabs
        self._catalog = catalog
        self._servers = servers
        self._store = store
        self.preferences = preferences
        self._preferences_applied = preferences_applied
        self.recent_folders = RecentFolders(store)
        self._sandbox: dict[str, Any] | None = None  # SandboxStatus per level, once probed
        self._sandbox_task: asyncio.Future[None] | None = None

    def wire_header(self, tab: ConversationTab) -> None:
        """Make a tab's header choices (model, mode, folder, sandbox, network) its settings.

        Shift+Tab in the message box steps the permission mode too (as in Claude Code).
        """
        controller = tab.controller
        header = tab.header
        servers = self._servers
        header.model_chosen.connect(
            lambda url, model, ctx: servers.use_server(controller, url, model, None, ctx))
        header.add_server_requested.connect(lambda: servers.open_server_picker(focus_url=True))
        header.rediscover_requested.connect(self._catalog.refresh)
        header.folder_chosen.connect(  # by its real path: the working-folder rule pins it
            lambda path: controller.update_settings(workdir=os.path.realpath(path)))
        header.folder_chosen.connect(self.remember_folder)
        header.sandbox_chosen.connect(lambda level: self._change(tab, sandbox=level))
        header.permission_mode_chosen.connect(controller.set_permission_mode)
        tab.composer_box.mode_cycle_requested.connect(controller.cycle_permission_mode)
        header.network_toggled.connect(lambda on: controller.update_settings(network=on))
        controller.settings_changed.connect(lambda _s: self.show_header(tab))
        # AGENTS.md may have changed during a turn: the next turn reads it again, so look again
        controller.busy_changed.connect(lambda busy: None if busy else self.show_header(tab))
        header.set_servers(self._catalog.servers)
        self.show_header(tab)

    @staticmethod
    def _change(tab: ConversationTab, **changes: Any) -> None:
        """Change settings from the header; a refusal (a sandbox bypass needs) is told."""
        from desktop_agent.session import SettingsError

        try:
            tab.controller.update_settings(**changes)
        except SettingsError as exc:
            tab.controller.notice.emit(str(exc))
            tab.header.show_settings(tab.controller.settings, None)

    def show_header(self, tab: ConversationTab) -> None:
        """Show a conversation's settings in its header."""
        settings = tab.controller.settings
        tab.header.show_settings(settings, work_folder(tab.controller.conversation_id, settings))
        tab.header.set_recent_folders(self.recent_folders.paths())
        self._show_sandbox(tab)
        tab.header.set_servers(tab.header._servers)  # re-tick the current model
        tab.header.show_instructions(tab.controller.project_instructions())

    def remember_folder(self, folder: str) -> None:
        """A folder was picked: first in every header's recent folders from now on."""
        self.recent_folders.remember(folder)
        for tab in self._tabs.all():
            if tab.built:
                tab.header.set_recent_folders(self.recent_folders.paths())

    def _show_sandbox(self, tab: ConversationTab) -> None:
        """Name the sandbox that will apply; "checking" until the probe has answered."""
        level = str(tab.controller.settings.get("sandbox") or "workdir")
        if self._sandbox is None:
            tab.header.show_sandbox(level, "Checking…",
                                    "Looking for bubblewrap; this names the sandbox that will "
                                    "apply in a moment.", False)
            self._probe_sandbox()
            return
        status = self._sandbox.get(level) or self._sandbox["workdir"]
        tab.header.show_sandbox(status.level, status.label, status.detail, status.sandboxed)

    def _probe_sandbox(self) -> None:
        """Find out once, off the UI thread, which sandbox each level gets here."""
        if self._sandbox_task is not None:
            return

        async def probe() -> None:
            loop = asyncio.get_running_loop()
            self._sandbox = await loop.run_in_executor(None, _sandbox_statuses)
            for tab in self._tabs.all():
                if tab.built:  # the others show it when their header is made
                    self._show_sandbox(tab)

        def start() -> None:
            if self._sandbox_task is None:
                self._sandbox_task = asyncio.ensure_future(probe())

        when_loop_runs(self._window, start)

    def fill_model_menus(self, _servers: object = None) -> None:
        """Give every header's model menu the servers the catalog knows now.

        A tab restored in the background has no header until it is needed; it gets
        the servers then (:meth:`wire_header`).
        """
        for tab in self._tabs.all():
            if tab.built:
                tab.header.set_servers(self._catalog.servers)

    # -- Preferences and Help ------------------------------------------------------

    def apply_preferences(self, prefs: Preferences) -> None:
        """Use (and remember) new preferences: theme and size at once, the rest for new chats."""
        self.preferences = prefs
        prefs.save(self._store)
        self._preferences_applied(prefs)
        self.apply_looks()

    def apply_looks(self) -> None:
        """Use the theme and text size of the Preferences in use."""
        app = QApplication.instance()
        if isinstance(app, QApplication):  # icons follow: theme signal
            set_preferences(app, self.preferences.theme, self.preferences.font_pt)

    def retint_icons(self, _dark: bool = False) -> None:
        """Icons are drawn in the theme's colours: make them again after a switch."""
        for action in self._window.actions():
            name = action.property("lucideIcon")
            if isinstance(name, str):
                action.setIcon(icon(name))
        for tab in self._tabs.all():
            if tab.built:
                self.show_header(tab)
        retint(self._window)

    def open_preferences(self) -> PreferencesDialog:
        """Open Preferences (non-modal); OK applies them."""
        # The dialogs' module is imported when one opens: an idle window never shows one.
        from desktop_agent.gui.window.preferences_dialog import PreferencesDialog

        dialog = PreferencesDialog(self.preferences, self._window)
        dialog.applied.connect(self.apply_preferences)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()
        return dialog

    def shortcut_rows(self) -> list[tuple[str, str]]:
        """(action, keys) for every action that has a shortcut, plus the composer's keys."""
        rows = [(a.text().replace("&", ""), a.shortcut().toString())
                for a in self._window.actions() if not a.shortcut().isEmpty()]
        rows += [("Send the message", "Enter"), ("New line in the message", "Shift+Enter"),
                 ("Stop the reply", "Esc"), ("Allow the tool call shown", "Ctrl+Shift+Return"),
                 ("Deny the tool call shown", "Ctrl+Shift+Backspace"),
                 ("Move between controls", "Tab / Shift+Tab")]
        return rows

    def show_shortcuts(self) -> Any:
        """Open the keyboard-shortcut sheet."""
        from desktop_agent.gui.window.preferences_dialog import shortcuts_dialog

        dialog = shortcuts_dialog(self.shortcut_rows(), self._window)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()
        return dialog

    def show_about(self) -> Any:
        """Open About."""
        from importlib.metadata import PackageNotFoundError, version

        from desktop_agent.gui.window.preferences_dialog import about_dialog

        try:
            number = version("desktop-agent")
        except PackageNotFoundError:
            number = ""
        dialog = about_dialog(number, self._window)
        dialog.finished.connect(dialog.deleteLater)
        dialog.open()
        return dialog
