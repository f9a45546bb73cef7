"""The window's view of the app's engine service: its events as Qt signals, its calls as tasks.

The engine (``session.LocalEngine``: the library, the catalogue, downloads, the
models running) decides everything; the widgets show what this bridge's signals
say and forward what the person asks for, never calling the engine themselves.
The engine's methods run on the event loop (which is the GUI thread: an engine
started from it is stopped by the kernel if the app is killed) and do their
blocking work (scans, downloads, the keyring) in worker threads, so the window
never waits on them. What the person clicks becomes a task this bridge owns.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from desktop_agent.gui.loop_work import OwnedTasks
from desktop_agent.gui.models.run_state import resolved

if TYPE_CHECKING:
    from desktop_agent.engine import LibraryEntry, RunSettings
    from desktop_agent.session import (
        CatalogChoice,
        EngineEvent,
        LocalEngine,
        LocalServer,
        ModelCrashed,
        ModelDownload,
        SessionEvent,
    )

log = logging.getLogger("desktop_agent.gui.models")

#: What the server picker and the header call the models the app runs itself.
LOCAL_SERVER_NAME = "On this computer"
FIGURES_INTERVAL_MS = 2000


class LocalModelsBridge(QObject):
    """The engine service for the window's widgets.

    Args:
        engine: The app's one engine service.

    Signals:
        library_changed(list): A scan ended; the ``LibraryEntry`` list.
        scanning_changed(bool): A scan started (True) or ended.
        download_started(object): A ``ModelDownload`` began.
        download_progress(object): A ``DownloadProgress`` report of the download shown.
        download_finished(object, bool): The downloaded model's path, and whether it
            is being started now (the one-click "download and run").
        download_failed(object): The engine's ``DownloadError`` (typed: the view picks the
            action by its class; ``str()`` is the sentence).
        download_refused(str): What was asked for is not a model on the hub (the sentence).
        token_saved(bool): The hub token is kept (True: in the keyring; False: only until
            the app quits).
        models_changed(): A model is starting, ready, stopped or crashed, or its memory
            figure changed.
        model_ready(object, bool): A model answers: its ``LocalServer``, and whether the
            window asked for it (Run, download and run, Restart) rather than a turn.
        start_failed(object, object): A model did not start: its path and the engine's
            typed error (``ModelTooBigError`` asks for a second click).
        model_crashed(object): The engine ended unasked: the ``ModelCrashed`` report.
    """

    library_changed = Signal(list)
    scanning_changed = Signal(bool)
    download_started = Signal(object)
    download_progress = Signal(object)
    download_finished = Signal(object, bool)
    download_failed = Signal(object)
    download_refused = Signal(str)
    token_saved = Signal(bool)
    models_changed = Signal()
    model_ready = Signal(object, bool)
    start_failed = Signal(object, object)
    model_crashed = Signal(object)

    def __init__(self, engine: LocalEngine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self._scan_task: asyncio.Task[None] | None = None
        self._rescan = False
        self._folders_changing = 0  # folder changes on their way to the engine (a scan follows)
        self._starting: Path | None = None
        self._download: ModelDownload | None = None
        self._run_after: set[tuple[str, str]] = set()  # (repo, file) to run once downloaded
        self._asked: set[Path] = set()  # model files the window asked to run
        self._rss: int | None = None
        self._tasks = OwnedTasks()
        self._unsubscribe = engine.subscribe(self._on_engine_event)
        self._figures = QTimer(self)
        self._figures.setInterval(FIGURES_INTERVAL_MS)
        self._figures.timeout.connect(self._read_figures)

    # -- the library -------------------------------------------------------------------

    @property
    def entries(self) -> list[LibraryEntry]:
        """The models the last scan found."""
        return self.engine.entries

    @property
    def scanning(self) -> bool:
        """Whether a scan is running (or about to, for folders just added or removed)."""
        return self._folders_changing > 0 or (
            self._scan_task is not None and not self._scan_task.done())

    def scan(self) -> None:
        """Scan the model folders (a scan running now runs once more after it)."""
        if self._scan_task is not None and not self._scan_task.done():
            self._rescan = True
            return
        self.scanning_changed.emit(True)
        self._scan_task = self._track(self._scan())

    async def wait_for_scan(self) -> None:
        """Return when no scan is running."""
        while self._scan_task is not None and not self._scan_task.done():
            await asyncio.shield(self._scan_task)

    async def _scan(self) -> None:
        try:
            while True:
                self._rescan = False
                await self.engine.scan()
                if not self._rescan:
                    break
        except Exception:
            log.warning("The model library scan failed", exc_info=True)
        self.scanning_changed.emit(False)
        self.library_changed.emit(self.engine.entries)

    def folders(self) -> tuple[Path, ...]:
        """The folders the person added."""
        return self.engine.preferences.folders

    def add_folder(self, folder: Path) -> None:
        """Look in ``folder`` too, from now on, and scan again."""
        if folder not in self.folders():
            self._set_folders((*self.folders(), folder))

    def remove_folder(self, folder: Path) -> None:
        """Stop looking in ``folder`` and scan again."""
        self._set_folders(tuple(path for path in self.folders() if path != folder))

    def _set_folders(self, folders: tuple[Path, ...]) -> None:
        async def apply() -> None:
            try:
                await self.engine.set_preferences(
                    dataclasses.replace(self.engine.preferences, folders=folders))
            finally:
                self._folders_changing -= 1
            self.scan()

        self._folders_changing += 1
        self.scanning_changed.emit(True)  # the scan that follows is as good as started
        self._track(apply())

    def machine_text(self) -> str:
        """What this computer offers models now: free memory and cores, in words."""
        from desktop_agent.engine import machine_memory, physical_cores
        from desktop_agent.gui.models.model_texts import size_text

        memory, cores = machine_memory(), physical_cores()
        free = (f"{size_text(memory.available_bytes)} of {size_text(memory.total_bytes)} "
                "memory free" if memory.available_bytes is not None else "free memory unknown")
        return f"{free} · {cores} CPU core{'s' if cores != 1 else ''}"

    # -- downloads --------------------------------------------------------------------

    def catalog(self) -> list[CatalogChoice]:
        """The suggested downloads, each judged against the memory free now."""
        return self.engine.catalog()

    @property
    def downloading(self) -> ModelDownload | None:
        """The download the window shows while it runs."""
        download = self._download
        return download if download is not None and download.state == "downloading" else None

    def download(self, source: str, *, run_after: bool = False) -> None:
        """Download ``source`` (a catalogue id, ``owner/repo[/file.gguf]``); maybe run it after."""
        async def start() -> None:
            from desktop_agent.engine import DownloadError

            try:
                download = await self.engine.download(source)
            except ValueError as error:
                self.download_refused.emit(str(error))
                return
            except DownloadError as error:
                self.download_failed.emit(error)
                return
            self._download = download
            if run_after:
                self._run_after.add((download.repo_id, download.filename))
            self.download_started.emit(download)
            if download.progress is not None:
                self.download_progress.emit(download.progress)

        self._track(start())

    def retry(self, download: ModelDownload) -> None:
        """Download the same file again: a kept part resumes (and it runs after, if asked)."""
        self.download(f"{download.repo_id}/{download.filename}",
                      run_after=(download.repo_id, download.filename) in self._run_after)

    def cancel_download(self) -> None:
        """Stop the download shown; what arrived stays on disk, and downloading resumes."""
        if self._download is not None:
            self._download.cancel()

    def set_hub_token(self, token: str) -> None:
        """Keep a Hugging Face access token in the keyring (a worker thread: it may wait)."""
        from desktop_agent.session import set_hub_token

        async def keep() -> None:
            self.token_saved.emit(await asyncio.to_thread(set_hub_token, token))

        self._track(keep())

    # -- running models ---------------------------------------------------------------

    @property
    def servers(self) -> list[LocalServer]:
        """The models running now."""
        return self.engine.servers

    @property
    def starting(self) -> Path | None:
        """The model file loading now, if any."""
        return self._starting

    @property
    def last_crash(self) -> ModelCrashed | None:
        """The last crash not followed by a start of that model (what Restart restarts)."""
        return self.engine.last_crash

    @property
    def rss_bytes(self) -> int | None:
        """The running engine's resident memory, read every few seconds."""
        return self._rss

    @property
    def idle_minutes(self) -> int:
        """Minutes without use after which a model is unloaded (0: never)."""
        minutes = self.engine.preferences.idle_unload_minutes
        return round(minutes) if minutes else 0

    def set_idle_minutes(self, minutes: int) -> None:
        """Unload a model after ``minutes`` without use (0: never)."""
        self._track(self.engine.set_preferences(dataclasses.replace(
            self.engine.preferences, idle_unload_minutes=float(minutes) if minutes else None)))

    def settings_for(self, path: Path) -> RunSettings:
        """The run settings the person saved for ``path`` (fields left open: chosen at start)."""
        return self.engine.preferences.settings_for(path)

    def run(self, path: Path, settings: RunSettings | None = None, *,
            allow_too_big: bool = False) -> None:
        """Run ``path`` (stopping the other model): with ``settings``, kept for next time."""
        async def start() -> None:
            from desktop_agent.engine import EngineError
            from desktop_agent.engine.errors import ModelTooBigError

            if settings is not None:
                await self.engine.set_preferences(
                    self.engine.preferences.with_settings_for(path, settings))
            self._asked.add(resolved(path))
            try:
                await self.engine.run(str(path), settings, allow_too_big=allow_too_big)
            except ModelTooBigError as error:  # refused before anything started
                self.start_failed.emit(path, error)
            except EngineError:
                pass  # the engine told every listener (ModelStartFailed)

        self._track(start())

    def stop(self, path: Path) -> None:
        """Stop the model running from ``path``."""
        self._track(self.engine.stop(str(path)))

    def restart(self) -> None:
        """Start again the model that crashed last, with its settings."""
        from desktop_agent.engine import EngineError

        async def again() -> None:
            crash = self.engine.last_crash
            if crash is not None:
                self._asked.add(resolved(crash.path))
            with contextlib.suppress(EngineError):  # told as ModelStartFailed
                await self.engine.restart()

        self._track(again())

    def use(self, model: str,
            emit: Callable[[SessionEvent], None]) -> AbstractAsyncContextManager[LocalServer]:
        """The running server for a conversation's turn (the session's ``LocalServers``)."""
        return self.engine.use(model, emit)

    async def close(self) -> None:
        """Stop every model and download (the app quits)."""
        self._figures.stop()
        self._unsubscribe()
        await self.engine.close()
        self._tasks.cancel()

    # -- the engine's events ----------------------------------------------------------

    def _on_engine_event(self, event: EngineEvent) -> None:
        from desktop_agent.session import (
            DownloadFailed,
            DownloadFinished,
            DownloadProgressed,
            ModelCrashed,
            ModelReady,
            ModelStartFailed,
            ModelStarting,
        )

        shown = self._download.id if self._download is not None else None
        if isinstance(event, DownloadProgressed):
            if event.download_id == shown:
                self.download_progress.emit(event.progress)
        elif isinstance(event, DownloadFinished):
            self._downloaded(event.download_id, event.path, shown)
        elif isinstance(event, DownloadFailed):
            if event.download_id == shown:
                self.download_failed.emit(event.error)
        else:
            if isinstance(event, ModelStarting):
                self._starting = event.path
            elif isinstance(event, ModelReady | ModelStartFailed):
                self._starting = None
            if isinstance(event, ModelReady):
                self._figures.start()
                self._read_figures()
                asked = resolved(event.server.path) in self._asked
                self._asked.discard(resolved(event.server.path))
                self.model_ready.emit(event.server, asked)
            elif isinstance(event, ModelStartFailed):
                self._asked.discard(resolved(event.path))
                self.start_failed.emit(event.path, event.error)
            elif isinstance(event, ModelCrashed):
                self.model_crashed.emit(event)
            self.models_changed.emit()

    def _downloaded(self, download_id: str, path: Path, shown: str | None) -> None:
        download = self.engine.download_of(download_id)
        key = (download.repo_id, download.filename) if download is not None else None
        run = key is not None and key in self._run_after
        if download_id == shown:
            self.download_finished.emit(path, run)
        self.scan()
        if key is not None and run:
            self._run_after.discard(key)

            async def run_when_listed() -> None:
                await self.wait_for_scan()  # the context that fits comes from the scan
                await self._run_quietly(path)

            self._track(run_when_listed())

    async def _run_quietly(self, path: Path) -> None:
        from desktop_agent.engine import EngineError
        from desktop_agent.engine.errors import ModelTooBigError

        self._asked.add(resolved(path))
        try:
            await self.engine.run(str(path))
        except ModelTooBigError as error:
            self.start_failed.emit(path, error)
        except EngineError:
            pass  # told as ModelStartFailed

    def _read_figures(self) -> None:
        if not self.engine.servers:
            self._figures.stop()
            self._rss = None
        else:
            self._rss = self.engine.rss_bytes()
        self.models_changed.emit()

    def _track(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = self._tasks.start(coroutine)
        return task
