"""LocalEngine: the app's one engine service (library, catalogue, downloads, running models).

The window's Models window, banner and server picker, ``serve``'s REST routes and
every turn of a conversation set to ``server: "local"`` share one instance, so one
model runs for all of them, one download is not started twice, and a crash is told
once to everyone it concerns: to the app (:class:`ModelCrashed`, with Restart) and
to each conversation whose reply it cut (:class:`LocalModelCrashed`).

All methods run on the app's event loop; what blocks (a library scan, a header
read, a download, the keyring) runs in worker threads. Start it from the thread
that runs the loop for the app's whole life (see ``engine.runner``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from desktop_agent.engine.catalog import CATALOG, PICK_CONTEXT, CatalogModel, best_pick
from desktop_agent.engine.download_progress import DownloadProgress
from desktop_agent.engine.errors import (
    EngineCrashed,
    EngineError,
    ModelNotFoundError,
    ModelTooBigError,
)
from desktop_agent.engine.fit import FitEstimate, FitVerdict, estimate_fit, fit_of
from desktop_agent.engine.library import LibraryEntry, ModelLibrary
from desktop_agent.engine.machine import machine_memory, physical_cores
from desktop_agent.engine.model_names import resolve_model, served_name
from desktop_agent.engine.run_settings import RunSettings
from desktop_agent.engine.runner import LocalModel
from desktop_agent.engine.running_models import RunningModels
from desktop_agent.session.events import LocalModelCrashed, LocalModelStarting, SessionEvent
from desktop_agent.session.local_engine.engine_events import (
    EngineEvent,
    LocalServer,
    ModelCrashed,
    ModelReady,
    ModelStartFailed,
    ModelStarting,
    ModelStopped,
)
from desktop_agent.session.local_engine.engine_preferences import (
    EnginePreferences,
    load_preferences,
    save_preferences,
)
from desktop_agent.session.local_engine.model_downloads import (
    Fetch,
    ModelDownload,
    ModelDownloads,
)
from desktop_agent.session.turn.local_server import LocalModelUnavailableError

if TYPE_CHECKING:
    from desktop_agent.engine.model_folders import ModelFolders
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.session.local_engine")

EngineListener = Callable[[EngineEvent], None]
LOG_FOLDER = "engine-logs"


@dataclass(frozen=True)
class CatalogChoice:
    """A suggested download as the Models window lists it.

    Attributes:
        model: The catalogue entry (title, repository, file, size, note).
        fit: How it would sit in memory now, at the catalogue's context.
        best: The one preselected for this machine.
        downloaded: Its file when it is in the library already.
    """

    model: CatalogModel
    fit: FitEstimate
    best: bool
    downloaded: Path | None


class LocalEngine:
    """The models on this computer, for every front end of one app.

    Args:
        data_folder: The app's data folder (the library's header cache and the
            engines' logs live there).
        store: Where the person's preferences are kept (app settings); None keeps
            them in memory (``preferences`` or the defaults).
        preferences: Start with these instead of the stored ones.
        folders: Where the library looks; None: the usual programs' folders plus
            the person's (tests pass their own layouts).
        fetch: Does one download (blocking); None: :func:`hub_download`, from the hub
            ``HF_ENDPOINT`` names into the hub's own cache, with the keyring's token.

    Attributes:
        default_model: The model a conversation without a server uses
            (``serve --model``), or None.
    """

    def __init__(self, data_folder: Path, *, store: Store | None = None,
                 preferences: EnginePreferences | None = None,
                 folders: ModelFolders | None = None,
                 fetch: Fetch | None = None) -> None:
        self._store = store
        self._preferences = preferences or (load_preferences(store) if store is not None
                                            else EnginePreferences())
        self._data_folder = data_folder
        self._folders = folders
        self._library = self._make_library()
        self._entries: list[LibraryEntry] = []
        self._running = RunningModels(one_at_a_time=self._preferences.one_at_a_time,
                                      idle_unload_after=self._preferences.idle_unload_seconds,
                                      log_dir=data_folder / LOG_FOLDER)
        self._running.on_unloaded(self._unloaded)
        self._listeners: list[EngineListener] = []
        self._downloads = ModelDownloads(fetch or hub_download, self._emit)
        self._names: dict[Path, str] = {}
        self._uses: dict[Path, list[Callable[[SessionEvent], None]]] = {}
        self._watched: weakref.WeakSet[LocalModel] = weakref.WeakSet()
        self._current: Path | None = None
        self._last_crash: ModelCrashed | None = None
        self.default_model: str | None = None

    # -- listening ----------------------------------------------------------------------
    def subscribe(self, listener: EngineListener) -> Callable[[], None]:
        """Call ``listener`` with every engine event (on the loop); returns an undo."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: EngineEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # one listener's bug must not stop the others hearing
                log.exception("an engine listener failed on %s", type(event).__name__)

    # -- preferences ----------------------------------------------------------------------
    @property
    def preferences(self) -> EnginePreferences:
        """The person's engine preferences now."""
        return self._preferences

    async def set_preferences(self, preferences: EnginePreferences) -> None:
        """Apply and store new preferences (folders take effect at the next scan)."""
        if self._store is not None:
            await asyncio.to_thread(save_preferences, self._store, preferences)
        folders_changed = preferences.folders != self._preferences.folders
        self._preferences = preferences
        self._running.one_at_a_time = preferences.one_at_a_time
        self._running.idle_unload_after = preferences.idle_unload_seconds
        if folders_changed:
            self._library = self._make_library()

    def _make_library(self) -> ModelLibrary:
        return ModelLibrary(self._data_folder, folders=self._folders,
                            extra_folders=self._preferences.folders)

    # -- the library and the catalogue ------------------------------------------------------
    @property
    def entries(self) -> list[LibraryEntry]:
        """The library as last scanned (empty before the first :meth:`scan`)."""
        return list(self._entries)

    async def scan(self) -> list[LibraryEntry]:
        """Every model on this computer now, with its facts and fit (a worker thread)."""
        self._entries = await asyncio.to_thread(self._library.scan)
        return list(self._entries)

    def catalog(self) -> list[CatalogChoice]:
        """The suggested downloads, each judged against the memory free now."""
        memory, cores = machine_memory(), physical_cores()  # once: /proc/cpuinfo is long
        pick = best_pick(memory, cores)
        on_disk = {entry.path.name.lower(): entry.path for entry in self._entries}
        return [CatalogChoice(model, fit_of(model.memory_needed(), PICK_CONTEXT, memory=memory,
                                            cores=cores),
                              model is pick, on_disk.get(model.filename.lower()))
                for model in CATALOG]

    async def resolve(self, name: str) -> tuple[Path, str]:
        """The file ``name`` means and the name a person knows it by (scanning if need be).

        Raises:
            ModelNotFoundError: See :func:`~desktop_agent.engine.model_names.resolve_model`.
        """
        try:
            found = resolve_model(name, self._entries)
        except ModelNotFoundError:
            await self.scan()  # a model added since the last scan, or no scan yet
            found = resolve_model(name, self._entries)
        if isinstance(found, Path):
            known = next((e for e in self._entries if e.path == found), None)
            return found, known.display_name if known else served_name(found)
        return found.path, found.display_name

    # -- downloads ------------------------------------------------------------------------
    @property
    def downloads(self) -> list[ModelDownload]:
        """Every download of this app's life, oldest first."""
        return self._downloads.all

    def download_of(self, download_id: str) -> ModelDownload | None:
        """The download with this id, if any."""
        return self._downloads.get(download_id)

    async def download(self, source: str) -> ModelDownload:
        """Start downloading ``source``: a catalogue id, or ``owner/repo[/file.gguf]``.

        Raises:
            ValueError: ``source`` is neither.
            DownloadError: The repository's files could not be listed, or no file
                in it is the obvious one (the sentence lists them).
        """
        from desktop_agent.engine.hub_files import choose_file, parse_source, repo_files

        picked = next((m for m in CATALOG if source.strip().lower() == m.id), None)
        if picked is not None:
            return self._downloads.start(picked.repo_id, picked.filename)
        repo_id, filename, revision = parse_source(source)
        if filename is None:
            files = await asyncio.to_thread(_listed_files, repo_files, repo_id, revision)
            filename = choose_file(repo_id, files)
        return self._downloads.start(repo_id, filename, revision)

    # -- running ----------------------------------------------------------------------------
    @property
    def current(self) -> LocalServer | None:
        """The model run or used last, while it runs: "On this computer" in the picker."""
        engine = self._running.find(self._current) if self._current is not None else None
        return self._server(engine) if engine is not None and engine.running else None

    @property
    def servers(self) -> list[LocalServer]:
        """Every model running now."""
        return [self._server(engine) for engine in self._running.models if engine.running]

    @property
    def last_crash(self) -> ModelCrashed | None:
        """The last crash not followed by a start of that model (what Restart restarts)."""
        return self._last_crash

    def rss_bytes(self) -> int | None:
        """The current engine's resident memory, for the Models window."""
        engine = self._running.find(self._current) if self._current is not None else None
        return engine.rss_bytes() if engine is not None else None

    async def run(self, name: str, settings: RunSettings | None = None, *,
                  allow_too_big: bool = False) -> LocalServer:
        """Start ``name`` (stopping the other model when one runs at a time) and return it.

        Args:
            name: A path or a name the library knows.
            settings: How to run it; None: the person's saved settings for it.
            allow_too_big: Start even when it needs more memory than is free (the
                second click after :class:`ModelTooBigError`).

        Raises:
            ModelNotFoundError: No such model.
            ModelTooBigError: Too big for the memory free now.
            ModelFileError, EngineError: The file or the engine refused (the
                engine's typed errors; see ``LocalModel.start``).
        """
        path, display = await self.resolve(name)
        wanted = settings or self._preferences.settings_for(path)
        fit = await self._fit(path, wanted)
        if fit is not None and fit.verdict is FitVerdict.TOO_BIG and not allow_too_big:
            raise ModelTooBigError(path, f"{display}: {fit.sentence} Run it anyway only after "
                                         "closing other programs.",
                                   fit.needed_bytes, fit.available_bytes)
        self._refuse_switch_while_busy(path)
        before = {engine.path.resolve(): engine for engine in self._running.models}
        self._names[path.resolve()] = display
        self._emit(ModelStarting(display, path))
        try:
            engine = await self._running.run(
                path, wanted, alias=served_name(path, display),
                fits_context=fit.context if fit is not None and wanted.context_length is None
                else None)
        except EngineError as error:
            self._emit(ModelStartFailed(display, path, error))
            raise
        for other_path, other in before.items():
            if other_path != path.resolve() and self._running.find(other_path) is None:
                self._emit(ModelStopped(self._names.get(other_path, other.alias), other.path,
                                        "switched"))
        self._watch(engine)
        self._current = path.resolve()
        if self._last_crash is not None and self._last_crash.path.resolve() == path.resolve():
            self._last_crash = None
        server = self._server(engine)
        self._emit(ModelReady(server))
        return server

    async def restart(self) -> LocalServer:
        """Start again the model that crashed last (or the current one), with its settings.

        Raises:
            ModelNotFoundError: Nothing ran yet.
            EngineError: As :meth:`run`.
        """
        path = self._last_crash.path if self._last_crash is not None else self._current
        if path is None:
            raise ModelNotFoundError("", "No model ran yet: choose one to run.")
        held = self._running.find(path)
        return await self.run(str(path), held.settings if held is not None else None,
                              allow_too_big=True)

    async def stop(self, name: str | None = None) -> None:
        """Stop ``name`` (the current model when None); nothing running is not an error."""
        path = (await self.resolve(name))[0] if name else self._current
        engine = self._running.find(path) if path is not None else None
        if engine is None:
            return
        await self._running.stop(engine)
        self._emit(ModelStopped(self._names.get(engine.path.resolve(), engine.alias),
                                engine.path, "asked"))

    async def close(self) -> None:
        """Stop every model and download (the app quits)."""
        await self._downloads.close()
        running = [engine for engine in self._running.models if engine.running]
        await self._running.stop_all()
        for engine in running:
            self._emit(ModelStopped(self._names.get(engine.path.resolve(), engine.alias),
                                    engine.path, "quit"))

    # -- turns ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def use(self, model: str,
                  emit: Callable[[SessionEvent], None]) -> AsyncIterator[LocalServer]:
        """The running server for a turn: started if need be, kept loaded for the block.

        Raises:
            LocalModelUnavailableError: The model cannot serve (its sentence, with the
                engine's error as the cause).
        """
        try:
            path, display = await self.resolve(model)
            engine = self._running.find(path)
            if engine is None or not engine.running:
                emit(LocalModelStarting(display))
                await self.run(str(path))
                engine = self._running.find(path)
        except EngineError as error:
            raise LocalModelUnavailableError(str(error)) from error
        assert engine is not None  # run() holds it
        self._current = engine.path.resolve()
        users = self._uses.setdefault(self._current, [])
        users.append(emit)
        try:
            async with self._running.in_use(engine):
                yield self._server(engine)
        finally:
            # A reply the engine's death cut, raised or ended as a broken stream is: the
            # crash is told to this conversation too, before it stops listening (an
            # engine that still listens costs one local connection attempt).
            await engine.settle_after_failure()
            users.remove(emit)

    # -- inside ---------------------------------------------------------------------------
    def _server(self, engine: LocalModel) -> LocalServer:
        return LocalServer(
            name=self._names.get(engine.path.resolve(), engine.alias), path=engine.path,
            model=engine.model, base_url=engine.base_url, api_key=engine.api_key,
            context_length=engine.context_length, parallel=engine.parallel,
            threads=engine.threads, supports_tools=engine.supports_tools,
            chat_template_source=engine.chat_template_source, pid=engine.pid)

    async def _fit(self, path: Path, settings: RunSettings) -> FitEstimate | None:
        entry = next((e for e in self._entries if e.path == path and e.info is not None), None)
        if entry is None or entry.info is None:
            return None  # not read yet: the runner's own check reads it at start
        return await asyncio.to_thread(estimate_fit, entry.info, context=settings.context_length)

    def _refuse_switch_while_busy(self, path: Path) -> None:
        if not self._running.one_at_a_time:
            return
        for engine in self._running.models:
            if engine.path.resolve() != path.resolve() and self._running.users(engine):
                name = self._names.get(engine.path.resolve(), engine.alias)
                raise EngineError(f"{name} is answering a conversation now; wait for the reply "
                                  "(or stop it) before running another model.")

    def _watch(self, engine: LocalModel) -> None:
        if engine not in self._watched:
            self._watched.add(engine)
            engine.on_crash(lambda crash: self._crashed(engine, crash))

    def _crashed(self, engine: LocalModel, crash: EngineCrashed) -> None:
        path = engine.path.resolve()
        name = self._names.get(path, engine.alias)
        self._last_crash = ModelCrashed(name, engine.path, str(crash), crash.signal_name,
                                        crash.returncode, crash.log_tail)
        self._emit(self._last_crash)
        for emit in list(self._uses.get(path, ())):
            emit(LocalModelCrashed(name, str(crash), crash.signal_name, crash.returncode))

    def _unloaded(self, engine: LocalModel) -> None:
        self._emit(ModelStopped(self._names.get(engine.path.resolve(), engine.alias),
                                engine.path, "idle"))


def hub_download(repo_id: str, filename: str, revision: str,
                 progress: Callable[[DownloadProgress], None], cancel: threading.Event) -> Path:
    """One download from the hub ``HF_ENDPOINT`` names, with the keyring's token (blocking)."""
    from desktop_agent.engine.downloads import DownloadRequest, download_model

    return download_model(DownloadRequest(repo_id, filename, revision, token=_token()),
                          progress=progress, cancel=cancel)


def _listed_files(list_files: Callable[..., list[str]], repo_id: str, revision: str) -> list[str]:
    return list_files(repo_id, revision=revision, token=_token())


def _token() -> str | None:
    from desktop_agent.session.local_engine.hub_token import hub_token

    try:
        return hub_token()
    except Exception:  # no keyring: public repositories still download
        log.info("no Hugging Face token: the keyring could not be read", exc_info=True)
        return None
