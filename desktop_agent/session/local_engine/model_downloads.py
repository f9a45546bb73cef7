"""Downloads of models from the Hugging Face hub, each in a worker thread, reported as events.

A download runs ``engine.downloads.download_model`` (resumable, checksum-checked,
into the hub's own cache) in a thread so the window stays responsive; its progress
and its end come back as engine events on the event loop. Cancel keeps the partial
file, and starting the same download again resumes it. The access token is read
from the keyring in the worker thread, at the moment the download starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from desktop_agent.engine.download_progress import DownloadProgress
from desktop_agent.engine.errors import DownloadCancelledError, DownloadError
from desktop_agent.session.local_engine.engine_events import (
    DownloadFailed,
    DownloadFinished,
    DownloadProgressed,
    EngineEvent,
)

DownloadState = Literal["downloading", "done", "failed"]


@dataclass
class ModelDownload:
    """One download, as the Models window and ``GET /local-models/downloads`` show it.

    Attributes:
        id: Its id (``d1``, ``d2``...), for cancelling and in events.
        repo_id: The hub repository.
        filename: The file (the first part, for a split model).
        revision: Branch, tag or commit.
        state: Downloading, done, or failed (cancelled counts as failed, with
            :class:`DownloadCancelledError`).
        progress: The latest report, if any.
        path: The model file once done.
        error: Why it failed.
    """

    id: str
    repo_id: str
    filename: str
    revision: str
    state: DownloadState = "downloading"
    progress: DownloadProgress | None = None
    path: Path | None = None
    error: DownloadError | None = None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def cancel(self) -> None:
        """Stop it; the partial file is kept and downloading again resumes."""
        self._cancel.set()

    async def wait(self) -> Path:
        """Wait for the end; the model file.

        Raises:
            DownloadError: It failed (cancelled: :class:`DownloadCancelledError`).
        """
        if self._task is not None:
            await asyncio.shield(self._task)
        if self.error is not None:
            raise self.error
        assert self.path is not None  # done without an error
        return self.path


Fetch = Callable[[str, str, str, "Callable[[DownloadProgress], None]", threading.Event], Path]
"""Downloads (repo, file, revision, progress, cancel) in the calling thread."""


class ModelDownloads:
    """The downloads this app runs; finished ones are kept listed until the app closes.

    Args:
        fetch: Does one download (blocking): the engine's, with the hub token.
        emit: Reports engine events (called on the event loop).
    """

    def __init__(self, fetch: Fetch, emit: Callable[[EngineEvent], None]) -> None:
        self._fetch = fetch
        self._emit = emit
        self._downloads: dict[str, ModelDownload] = {}
        self._ids = itertools.count(1)

    @property
    def all(self) -> list[ModelDownload]:
        """Every download started, oldest first."""
        return list(self._downloads.values())

    def get(self, download_id: str) -> ModelDownload | None:
        """The download with this id, if any."""
        return self._downloads.get(download_id)

    def start(self, repo_id: str, filename: str, revision: str = "main") -> ModelDownload:
        """Start downloading (call on the event loop); the one running for that file if any."""
        for running in self._downloads.values():
            if (running.state == "downloading" and running.repo_id == repo_id
                    and running.filename == filename and running.revision == revision):
                return running
        download = ModelDownload(f"d{next(self._ids)}", repo_id, filename, revision)
        self._downloads[download.id] = download
        download._task = asyncio.get_running_loop().create_task(
            self._run(download), name=f"download {filename}")
        return download

    async def close(self) -> None:
        """Cancel every download still running and wait for their threads to let go."""
        running = [d for d in self._downloads.values() if d.state == "downloading"]
        for download in running:
            download.cancel()
        for download in running:
            if download._task is not None:
                with contextlib.suppress(Exception):
                    await download._task

    async def _run(self, download: ModelDownload) -> None:
        loop = asyncio.get_running_loop()

        def report(progress: DownloadProgress) -> None:  # in the worker thread
            loop.call_soon_threadsafe(self._progressed, download, progress)

        try:
            path = await asyncio.to_thread(self._fetch, download.repo_id, download.filename,
                                           download.revision, report, download._cancel)
        except DownloadError as error:
            download.state, download.error = "failed", error
            self._emit(DownloadFailed(download.id, error))
        except asyncio.CancelledError:
            download.cancel()
            download.state = "failed"
            download.error = DownloadCancelledError(download.repo_id, download.filename,
                                                    f"Download of {download.filename} stopped.")
            raise
        else:
            download.state, download.path = "done", path
            self._emit(DownloadFinished(download.id, path))

    def _progressed(self, download: ModelDownload, progress: DownloadProgress) -> None:
        if download.state != "downloading":
            return  # a report that crossed the end
        download.progress = progress
        self._emit(DownloadProgressed(download.id, progress))
