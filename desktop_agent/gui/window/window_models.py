"""The main window's side of running models itself: the Models window and "On this computer".

The bridge to the engine is made when first needed (an idle window that never
opens *Server → Models…* loads none of it). This part opens the Models window,
lists a running model in the server catalog as "On this computer" (its address,
the name of its key, the context it really runs with), points the visible
conversation at a model once it is ready, and stops every model when the window
closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar, QWidget

    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.open_tabs import OpenTabs
    from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge
    from desktop_agent.gui.models.model_runs import RunningModel
    from desktop_agent.gui.models.models_window import ModelsWindow
    from desktop_agent.gui.servers.server_catalog import ServerCatalog
    from desktop_agent.gui.window.window_servers import ServerChoice
    from desktop_agent.store import Store


class WindowModels:
    """The models the window runs, and the window that lists them.

    Args:
        tabs: The window's open conversations.
        catalog: Where "On this computer" is listed beside the servers found.
        servers: Applies a model to a conversation (and remembers it for new ones).
        store: Where the bridge keeps the added folders and the idle time.
        status: The window's status bar.
        parent: The window the Models window opens over.
        new_conversation: Makes a conversation when a model is ready and none is open.

    Attributes:
        models_window: The Models window opened last (None before the first).
    """

    def __init__(self, tabs: OpenTabs, catalog: ServerCatalog, servers: ServerChoice,
                 store: Store, status: QStatusBar, *, parent: QWidget,
                 new_conversation: Callable[[], ConversationController]) -> None:
        self._tabs = tabs
        self._catalog = catalog
        self._servers = servers
        self._store = store
        self._status = status
        self._parent = parent
        self._new_conversation = new_conversation
        self._bridge: LocalModelsBridge | None = None
        self.models_window: ModelsWindow | None = None
        self._states: dict[str, bool] = {}
        self._tasks: set[asyncio.Future[None]] = set()
        servers.stopped_engine = self.stopped_engine

    @property
    def bridge(self) -> LocalModelsBridge:
        """The bridge to the engine, made (and a first scan started) on first use."""
        if self._bridge is None:
            from desktop_agent.appdata.paths import data_dir
            from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge

            bridge = LocalModelsBridge(self._store, data_dir(), self._parent)
            bridge.runs.models_changed.connect(self._list_running)
            bridge.runs.started.connect(self.use_model)
            bridge.runs.start_failed.connect(
                lambda path, why: self._status.showMessage(why, 10000))
            bridge.scan()
            self._bridge = bridge
        return self._bridge

    def open_models_window(self) -> ModelsWindow:
        """Show the Models window (the one already open, if any)."""
        if self.models_window is not None and self.models_window.isVisible():
            self.models_window.raise_()
            self.models_window.activateWindow()
            return self.models_window
        from desktop_agent.gui.models.models_window import ModelsWindow

        window = ModelsWindow(self.bridge, self._parent)
        window.use_requested.connect(self.use_model)
        window.finished.connect(window.deleteLater)
        window.finished.connect(lambda _result: self._forget_window(window))
        window.show()
        self.models_window = window
        return window

    def run_on_this_computer(self) -> ModelsWindow:
        """The banner's offer: the Models window on its Download page, the best pick selected.

        One more click there downloads that model (its size on the button) and runs it;
        the conversation then uses it.
        """
        window = self.open_models_window()
        window.show_downloads()
        return window

    def use_model(self, model: RunningModel) -> None:
        """Point the visible conversation (a new one if none is open) at a running model.

        Conversations left on a model of this computer that no longer runs (one model
        runs at a time: it was switched, or unloaded) follow it too, when idle.
        """
        from desktop_agent.gui.models.model_runs import ENGINE_KEY_NAME

        self._list_running()
        visible = self._tabs.current_controller() or self._new_conversation()
        live = {m.base_url for m in self.bridge.runs.running() if m.running}
        for controller in list(self._tabs.controllers.values()):
            settings = controller.settings
            stale = (settings.get("api_key_name") == ENGINE_KEY_NAME
                     and settings.get("base_url") not in live and not controller.busy)
            if controller is visible or stale:
                self._servers.use_server(controller, model.base_url, model.name,
                                         ENGINE_KEY_NAME, model.context_length)

    def note_turn(self, controller: ConversationController, busy: bool) -> None:
        """A conversation's turn began or ended: its model here stays loaded meanwhile."""
        if self._bridge is None:
            return
        if busy:
            self._bridge.runs.hold(controller.conversation_id,
                              str(controller.settings.get("base_url") or ""))
        else:
            self._bridge.runs.release(controller.conversation_id)

    def stopped_engine(self, settings: Mapping[str, Any]) -> str | None:
        """How the model this computer ran for a conversation stopped; None while it runs.

        Args:
            settings: The conversation's settings (its server, model and key name).
        """
        from desktop_agent.gui.models.model_runs import ENGINE_KEY_NAME

        base_url = str(settings.get("base_url") or "")
        if settings.get("api_key_name") != ENGINE_KEY_NAME or not base_url:
            return None
        if self._bridge is None:  # the app was started again since
            return "It is not running now: the app stops it when it quits."
        model = self._model_at(base_url)
        if model is not None:
            return model.crash or "It stopped." if not model.running else None
        if self._bridge.runs.unloaded(base_url) is not None:
            minutes = self._bridge.runs.idle_minutes
            return (f"It was unloaded after {minutes} minute{'s' if minutes != 1 else ''} "
                    "unused, giving its memory back.")
        return "It is not running now."

    def restart_for(self, settings: Mapping[str, Any]) -> None:
        """Run a conversation's stopped model again (a crashed one at the same address).

        A model no longer known by its address (unloaded, or run before the app was
        started again) is found in the library by its name and run anew; the
        conversation then follows it.
        """
        base_url = str(settings.get("base_url") or "")
        model = self._model_at(base_url) if self._bridge is not None else None
        if model is None and self._bridge is not None:
            model = self._bridge.runs.unloaded(base_url)
        if model is not None:
            self.bridge.runs.restart(model.path)
            return
        self._tasks.add(task := asyncio.ensure_future(self._run_by_name(str(
            settings.get("model") or ""))))
        task.add_done_callback(self._tasks.discard)

    async def _run_by_name(self, name: str) -> None:
        bridge = self.bridge
        await bridge.wait_for_scan()
        found = next((entry for entry in bridge.entries
                      if entry.path.name.removesuffix(".gguf") == name), None)
        if found is None:
            self._status.showMessage(f"{name} is no longer among the models on this "
                                     "computer; choose one in Server → Models….", 10000)
            self.open_models_window()
            return
        await bridge.runs.run(found.path)

    def _model_at(self, base_url: str) -> RunningModel | None:
        assert self._bridge is not None
        wanted = base_url.rstrip("/")
        return next((model for model in self._bridge.runs.running()
                     if model.base_url.rstrip("/") == wanted), None)

    async def close(self) -> None:
        """Stop every model and cancel a download (the window is closing)."""
        for task in list(self._tasks):
            task.cancel()
        if self._bridge is not None:
            await self._bridge.close()
            self._catalog.set_local_servers([])

    def _list_running(self) -> None:
        """Refresh "On this computer" in the catalog, and the banners when a model stopped."""
        from desktop_agent.gui.models.model_runs import ENGINE_KEY_NAME, LOCAL_SERVER_NAME
        from desktop_agent.gui.servers.server_catalog import ModelChoice, ServerEntry

        assert self._bridge is not None
        models = self._bridge.runs.running()
        states = {model.base_url: model.running for model in models}
        if states != self._states:  # not on each memory figure: only when one starts or stops
            self._states = states
            self._servers.refresh_notices()
        self._catalog.set_local_servers([
            ServerEntry(LOCAL_SERVER_NAME, model.base_url, True,
                        (ModelChoice(model.name, model.context_length),),
                        api_key_name=ENGINE_KEY_NAME)
            for model in models if model.running])

    def _forget_window(self, window: ModelsWindow) -> None:
        if self.models_window is window:
            self.models_window = None
