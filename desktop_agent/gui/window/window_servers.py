"""The main window's side of choosing servers and models.

The catalog finds servers; the picker lets a person choose. This part of the window ties
them to the open conversations: open the picker for the visible one, apply a
choice (and remember it for new chats), give conversations without a server
the discovered one, fill in context lengths, and keep each tab's "no server
yet" notice and the toolbar's model button up to date.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.gui.servers.server_picker import ServerPicker

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar, QWidget

    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.conversation_tab import ConversationTab
    from desktop_agent.gui.conversation.open_tabs import OpenTabs
    from desktop_agent.gui.servers.server_catalog import ServerCatalog
    from desktop_agent.store import Store

LAST_SERVER_KEY = "last_server"


class ServerChoice:
    """Server and model choice for the main window's conversations.

    Args:
        tabs: The window's open conversations.
        catalog: The servers found and added.
        store: Where the last choice is remembered for new conversations.
        status: The window's status bar.
        parent: The window the picker opens over.
        new_conversation: Makes a conversation when the picker is asked for with
            none open.
        show_model: Puts a text on the Server menu's "Choose server and model"
            action: the visible conversation's model, or that invitation.

    Attributes:
        picker: The picker opened last (None before the first).
    """

    def __init__(self, tabs: OpenTabs, catalog: ServerCatalog, store: Store,
                 status: QStatusBar, *, parent: QWidget,
                 new_conversation: Callable[[], ConversationController],
                 show_model: Callable[[str], None]) -> None:
        self._tabs = tabs
        self._catalog = catalog
        self._store = store
        self._status = status
        self._parent = parent
        self._new_conversation = new_conversation
        self._show_model = show_model
        self.picker: ServerPicker | None = None

    def open_server_picker(self, *, focus_url: bool = False) -> ServerPicker | None:
        """Open the server and model picker for the visible conversation."""
        controller = self._tabs.current_controller() or self._new_conversation()
        picker = ServerPicker(self._catalog, self._parent)
        picker.set_current(controller.settings.get("base_url"), controller.settings.get("model"))
        picker.chosen.connect(lambda url, model, key, ctx: self.use_server(
            controller, url, model, key, ctx))
        picker.finished.connect(picker.deleteLater)
        picker.open()
        if focus_url:
            picker.focus_url()
        if not self._catalog.searched and not self._catalog.searching:
            self._catalog.refresh()
        self.picker = picker
        return picker

    def use_server(self, controller: ConversationController, base_url: str, model: str,
                   api_key_name: str | None = None, context_length: int | None = None) -> None:
        """Point a conversation at a server and model, and remember it for new ones."""
        server = self._catalog.find(base_url)
        found = server.model(model) if server is not None else None
        controller.set_server(base_url, model, api_key_name=api_key_name,
                              context_length=context_length,
                              vision=found.vision if found is not None else None)
        self._store.set_setting(LAST_SERVER_KEY, {"base_url": base_url, "model": model,
                                                  "api_key_name": api_key_name,
                                                  "context_length": context_length})
        self._status.showMessage(f"Using {model} at {base_url}", 5000)

    def show_model_made(self, controller: ConversationController, model: str | None) -> None:
        """The window fix switched ``controller`` to ``model`` (None: it failed): say so."""
        if model is not None:
            base_url = controller.settings.get("base_url") or "its server"
            self._status.showMessage(f"Using {model} at {base_url}", 5000)

    def on_servers_changed(self, _servers: list[Any]) -> None:
        """Give conversations without a server the one found; fill in what models say.

        The headers' model menus are filled by the window, which connects them to
        the catalog before this.
        """
        choice = self._catalog.preselected_choice() or self._only_model()
        if choice is not None:
            for controller in list(self._tabs.controllers.values()):
                if not controller.has_server:
                    self.use_server(controller, choice[0], choice[1], None, choice[2])
        self.refresh_notices()
        for controller in self._tabs.controllers.values():
            settings = controller.settings
            server = self._catalog.find(str(settings.get("base_url") or ""))
            found = server.model(str(settings.get("model") or "")) if server else None
            if found is None:
                continue
            if settings.get("context_length") is None and found.context_length:
                controller.update_settings(context_length=found.context_length)
            if settings.get("vision") is None and found.vision is not None:
                controller.update_settings(vision=found.vision)

    def _only_model(self) -> tuple[str, str, int | None] | None:
        """The one model of the one running server, when a search found exactly that."""
        models = [(s.base_url, m.id, m.context_length) for s in self._catalog.up_servers()
                  for m in s.models]
        return models[0] if len(models) == 1 else None

    def refresh_notices(self) -> None:
        """Each tab's "no server yet" notice, as the search stands.

        A tab whose widgets are not made yet (restored in the background) gets its
        notice when they are (:meth:`refresh_notice`).
        """
        for tab in self._tabs.all():
            if tab.built:
                self.refresh_notice(tab)

    def refresh_notice(self, tab: ConversationTab) -> None:
        """One tab's "no server yet" notice, as the search stands."""
        if tab.controller.has_server:
            tab.notice.show_state("hidden")
        elif self._catalog.searching or not self._catalog.searched:
            tab.notice.show_state("searching")
        elif not self._catalog.up_servers():
            tab.notice.show_state("nothing_running")
        else:
            tab.notice.show_state("choose")

    def update_server_button(self) -> None:
        """Name the visible conversation's model on the toolbar's server button."""
        controller = self._tabs.current_controller()
        model = controller.settings.get("model") if controller else None
        self._show_model(
            f"Model: {model}" if model else "Choose server and model…")
