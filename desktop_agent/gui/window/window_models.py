"""The main window's side of running models itself: the engine, the Models window, the picker.

The app's engine service (``session.LocalEngine``) is made when first needed: when
the Models window opens, the banner's "Run a model on this computer" is clicked, or
a conversation whose model runs on this computer starts a turn (the service then
loads the model itself). An idle window that never runs a model loads none of it,
and the first need loads the engine's modules (the hub client's progress bars, the
library, the runner: over a second on a busy machine) in a worker thread, so the
window does not stall while they load.
This part opens the Models window, lists the models of this computer in the server
catalog as "On this computer", points the visible conversation at a model once it is
ready, shows each conversation's banner when its model crashed (with Restart), and
stops every model when the window closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from desktop_agent.gui.loop_work import OwnedTasks

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStatusBar, QWidget

    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.open_tabs import OpenTabs
    from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge
    from desktop_agent.gui.models.models_window import ModelsWindow
    from desktop_agent.gui.servers.server_catalog import ServerCatalog
    from desktop_agent.gui.window.window_servers import ServerChoice
    from desktop_agent.session import LocalServer, ModelCrashed, SessionEvent
    from desktop_agent.store import Store


class WindowModels:
    """The models the window runs, and the window that lists them.

    Also the engine conversations' turns use (the session's ``LocalServers``): the
    window hands this object to every conversation, and the engine is made at the
    first turn that needs it.

    Args:
        tabs: The window's open conversations.
        catalog: Where "On this computer" is listed beside the servers found.
        servers: Applies a model to a conversation (and remembers it for new ones).
        store: Where the engine keeps the person's engine preferences.
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
        self._preparing: asyncio.Future[None] | None = None
        self._tasks = OwnedTasks()
        self.models_window: ModelsWindow | None = None
        self._crash_shown: ModelCrashed | None = None
        servers.stopped_engine = self.stopped_engine

    @property
    def bridge(self) -> LocalModelsBridge:
        """The window's view of the engine service, made (and a first scan started) now.

        Prefer :meth:`ready`, which loads the engine's modules off the GUI thread first.
        """
        if self._bridge is None:
            from desktop_agent.appdata.paths import data_dir
            from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge
            from desktop_agent.session import LocalEngine

            bridge = LocalModelsBridge(LocalEngine(data_dir(), store=self._store), self._parent)
            bridge.models_changed.connect(self._list_local)
            bridge.library_changed.connect(self._list_local)
            bridge.model_ready.connect(self._on_ready)
            bridge.start_failed.connect(
                lambda _path, error: self._status.showMessage(str(error), 10000))
            bridge.scan()
            self._bridge = bridge
        return self._bridge

    async def ready(self) -> LocalModelsBridge:
        """The bridge, made once the engine's modules are loaded in a worker thread."""
        if self._bridge is None:
            if self._preparing is None:
                self._preparing = asyncio.ensure_future(asyncio.to_thread(_load_engine_modules))
            await asyncio.shield(self._preparing)
        return self.bridge

    @contextlib.asynccontextmanager
    async def use(self, model: str,
                  emit: Callable[[SessionEvent], None]) -> AsyncIterator[LocalServer]:
        """The running server for a conversation's turn, started if need be (``LocalServers``)."""
        bridge = await self.ready()
        async with bridge.use(model, emit) as server:
            yield server

    def open_models_window(self) -> ModelsWindow | None:
        """Show the Models window (the one already open, if any).

        The first time, the engine's modules load in a worker thread first: the
        window opens when they are in (None is returned meanwhile).
        """
        if self.models_window is not None and self.models_window.isVisible():
            self.models_window.raise_()
            self.models_window.activateWindow()
            return self.models_window
        if self._bridge is None:
            self._status.showMessage("Opening the models on this computer…", 3000)
            self._soon(self._open_when_ready())
            return None
        return self._open()

    async def _open_when_ready(self, *, downloads: bool = False) -> None:
        await self.ready()
        window = self.open_models_window()
        if window is not None and downloads:
            window.show_downloads()

    def _open(self) -> ModelsWindow:
        from desktop_agent.gui.models.models_window import ModelsWindow

        window = ModelsWindow(self.bridge, self._parent)
        window.use_requested.connect(self.use_model)
        window.finished.connect(window.deleteLater)
        window.finished.connect(lambda _result: self._forget_window(window))
        window.show()
        self.models_window = window
        return window

    def run_on_this_computer(self) -> None:
        """The banner's offer: the Models window on its Download page, the best pick selected.

        One more click there downloads that model (its size on the button) and runs it;
        the conversation then uses it.
        """
        if self._bridge is None:
            self._soon(self._open_when_ready(downloads=True))
            return
        window = self.open_models_window()
        if window is not None:
            window.show_downloads()

    def use_model(self, server: LocalServer) -> None:
        """Point the visible conversation (a new one if none is open) at a running model."""
        from desktop_agent.session import LOCAL_SERVER

        controller = self._tabs.current_controller() or self._new_conversation()
        self._servers.use_server(controller, LOCAL_SERVER, server.name, None,
                                 server.context_length)

    def stopped_engine(self, settings: Mapping[str, Any]) -> str | None:
        """How the model this computer ran for a conversation crashed; None otherwise.

        Args:
            settings: The conversation's settings (its server and model).
        """
        from desktop_agent.session import runs_locally

        crash = self._bridge.last_crash if self._bridge is not None else None
        if crash is None or not runs_locally(settings):
            return None
        model = str(settings.get("model") or "")
        return crash.message if model in (crash.name, str(crash.path)) else None

    def restart(self) -> None:
        """Run the model that crashed again (the banner's Restart)."""
        self.bridge.restart()

    async def close(self) -> None:
        """Stop every model and cancel every download (the window is closing)."""
        self._tasks.cancel()
        if self._preparing is not None:
            with contextlib.suppress(BaseException):
                await self._preparing  # a worker thread's import cannot be cancelled
        if self._bridge is not None:
            await self._bridge.close()
            self._catalog.set_local_servers([])

    def _on_ready(self, server: LocalServer, asked: bool) -> None:
        """A model answers: those on it get its context; asked for here, the visible one uses it.

        A model a conversation's turn loaded (``asked`` False) leaves the visible
        conversation on its own server.
        """
        from desktop_agent.session import runs_locally

        if asked:
            self.use_model(server)
        for controller in list(self._tabs.controllers.values()):
            settings = controller.settings
            if runs_locally(settings) and settings.get("model") == server.name and \
                    settings.get("context_length") != server.context_length:
                controller.update_settings(context_length=server.context_length)

    def _list_local(self, _entries: object = None) -> None:
        """"On this computer" in the catalog: the model running, then the others it can run.

        Also refreshes the banners, for a model that crashed or started again.
        """
        from desktop_agent.gui.models.local_models_bridge import LOCAL_SERVER_NAME
        from desktop_agent.gui.servers.server_catalog import ModelChoice, ServerEntry
        from desktop_agent.session import LOCAL_SERVER

        assert self._bridge is not None
        running = [ModelChoice(server.name, server.context_length)
                   for server in self._bridge.servers]
        names = {choice.id for choice in running}
        others = [ModelChoice(entry.display_name, entry.fit.context if entry.fit else None)
                  for entry in self._bridge.entries
                  if entry.problem is None and entry.display_name not in names]
        self._catalog.set_local_servers(
            [ServerEntry(LOCAL_SERVER_NAME, LOCAL_SERVER, True, (*running, *others), local=True)]
            if running or others else [])
        crash = self._bridge.last_crash
        if crash != self._crash_shown:  # the banners change only when a crash does
            self._crash_shown = crash
            self._servers.refresh_notices()

    def _soon(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self._tasks.start(coroutine)

    def _forget_window(self, window: ModelsWindow) -> None:
        if self.models_window is window:
            self.models_window = None


def _load_engine_modules() -> None:
    """Import what the engine service and the Models window need (a worker thread)."""
    import desktop_agent.gui.models.local_models_bridge
    import desktop_agent.gui.models.models_window  # noqa: F401 - loading them is the work
    from desktop_agent.session import LocalEngine

    del LocalEngine  # resolved through the session's door: its module is now loaded
