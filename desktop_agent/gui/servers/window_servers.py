"""The main window's side of choosing servers and models.

The catalog finds servers; the picker lets a person choose. This part of the window ties
them to the open conversations: open the picker for the visible one, apply a
choice (and remember it for new chats), give conversations without a server
the discovered one, fill in context lengths, and keep each tab's "no server
yet" notice and the toolbar's model button up to date.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from desktop_agent.gui.conversation.conversation_tab import ConversationTab
from desktop_agent.gui.servers.server_picker import ServerPicker

if TYPE_CHECKING:


    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.window.main_window import MainWindow

LAST_SERVER_KEY = "last_server"


class ServerChoice:
    """Server and model choice for :class:`~desktop_agent.gui.window.main_window.MainWindow`."""

    def __init__(self, window: MainWindow) -> None:
        self._window = window

    def open_server_picker(self, *, focus_url: bool = False) -> ServerPicker | None:
        """Open the server and model picker for the visible conversation."""
        controller = self._window.current_controller() or self._window.new_conversation()
        picker = ServerPicker(self._window.catalog, self._window)
        picker.set_current(controller.settings.get("base_url"), controller.settings.get("model"))
        picker.chosen.connect(lambda url, model, key, ctx: self.use_server(
            controller, url, model, key, ctx))
        picker.finished.connect(picker.deleteLater)
        picker.open()
        if focus_url:
            picker.focus_url()
        if not self._window.catalog.searched and not self._window.catalog.searching:
            self._window.catalog.refresh()
        self.picker = picker
        return picker

    def use_server(self, controller: ConversationController, base_url: str, model: str,
                   api_key_name: str | None = None, context_length: int | None = None) -> None:
        """Point a conversation at a server and model, and remember it for new ones."""
        server = self._window.catalog.find(base_url)
        found = server.model(model) if server is not None else None
        controller.set_server(base_url, model, api_key_name=api_key_name,
                              context_length=context_length,
                              vision=found.vision if found is not None else None)
        self._window.store.set_setting(LAST_SERVER_KEY, {"base_url": base_url, "model": model,
                                                 "api_key_name": api_key_name,
                                                 "context_length": context_length})
        self._window.statusBar().showMessage(f"Using {model} at {base_url}", 5000)

    def on_servers_changed(self, _servers: list[Any]) -> None:
        choice = self._window.catalog.preselected_choice() or self._only_model()
        if choice is not None:
            for controller in list(self._window.controllers.values()):
                if not controller.has_server:
                    self.use_server(controller, choice[0], choice[1], None, choice[2])
        self.refresh_notices()
        self._window.chrome.fill_model_menus()
        for controller in self._window.controllers.values():
            settings = controller.settings
            server = self._window.catalog.find(str(settings.get("base_url") or ""))
            found = server.model(str(settings.get("model") or "")) if server else None
            if found is None:
                continue
            if settings.get("context_length") is None and found.context_length:
                controller.update_settings(context_length=found.context_length)
            if settings.get("vision") is None and found.vision is not None:
                controller.update_settings(vision=found.vision)

    def _only_model(self) -> tuple[str, str, int | None] | None:
        """The one model of the one running server, when a search found exactly that."""
        models = [(s.base_url, m.id, m.context_length) for s in self._window.catalog.up_servers()
                  for m in s.models]
        return models[0] if len(models) == 1 else None

    def refresh_notices(self) -> None:
        for i in range(self._window.tabs.count()):
            tab = self._window.tabs.widget(i)
            if not isinstance(tab, ConversationTab):
                continue
            if tab.controller.has_server:
                tab.notice.show_state("hidden")
            elif self._window.catalog.searching or not self._window.catalog.searched:
                tab.notice.show_state("searching")
            elif not self._window.catalog.up_servers():
                tab.notice.show_state("nothing_running")
            else:
                tab.notice.show_state("choose")

    def update_server_button(self) -> None:
        controller = self._window.current_controller()
        model = controller.settings.get("model") if controller else None
        self._window.server_action.setText(
            f"Model: {model}" if model else "Choose server and model…")
