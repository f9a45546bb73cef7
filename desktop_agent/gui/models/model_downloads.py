"""Downloads for the window: the curated list, any hub file, progress and Cancel.

A download runs in a worker thread (network, and hashing gigabytes at the end); its
progress comes back to the GUI thread as signals, at most ten times a second. Cancel
keeps what arrived, as a lost network or a full disk do, and the next download of
the same file resumes. The Hugging Face token lives in the keyring under
:data:`HUB_TOKEN_NAME` and is read in the worker thread, at the moment of use.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from desktop_agent.engine import CatalogModel, DownloadProgress

#: The keyring name of the person's Hugging Face access token (gated repositories).
HUB_TOKEN_NAME = "huggingface:token"


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


@dataclass
class _Download:
    target: DownloadTarget
    cancel: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[None] | None = None


class ModelDownloads(QObject):
    """One download at a time, from the curated list or any repository on the hub.

    Signals:
        download_started(object): A :class:`DownloadTarget` began.
        download_progress(object): A ``DownloadProgress`` report.
        download_finished(object, object): The downloaded file's path, and its
            :class:`DownloadTarget`.
        download_failed(object): The engine's ``DownloadError`` (typed: the view picks
            the action by its class; ``str()`` is the sentence).
    """

    download_started = Signal(object)
    download_progress = Signal(object)
    download_finished = Signal(object, object)
    download_failed = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._download: _Download | None = None

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
        self._download.task = asyncio.ensure_future(self._fetch(self._download))
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
        self.download_finished.emit(path, target)

    def _report_progress(self, download: _Download, progress: DownloadProgress) -> None:
        if self._download is download:
            self.download_progress.emit(progress)

    async def close(self) -> None:
        """Cancel the running download and wait for its thread to let go of the file."""
        download = self._download
        if download is None:
            return
        download.cancel.set()
        if download.task is not None:
            with contextlib.suppress(BaseException):
                await download.task


def _download_file(target: DownloadTarget, report: Any, cancel: threading.Event) -> Path:
    """Fetch one model (every part of a split one) into the hub cache (a worker thread)."""
    from desktop_agent.appdata.secrets import get_secret
    from desktop_agent.engine import DownloadRequest, download_model

    request = DownloadRequest(target.repo_id, target.filename, token=get_secret(HUB_TOKEN_NAME))
    return download_model(request, progress=report, cancel=cancel)
