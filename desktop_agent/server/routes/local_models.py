"""Models on this computer: the library, the catalogue, run and stop, downloads, events.

What the window's Models window does, over HTTP: list the GGUF models the library
finds (the records ``desktop-agent models --json`` prints), see the suggested
downloads with their fit, download one (``POST``, then follow its progress on the
engine's event stream or by polling), run and stop a model. A conversation uses a
running model with the settings ``{"server": "local", "model": NAME}``; the
engine's own address and key stay inside the server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from desktop_agent.server.api_errors import ApiError, not_found
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.routes.events import KEEPALIVE_FRAME, KEEPALIVE_SECONDS, SSE_HEADERS
from desktop_agent.session import (
    CatalogChoice,
    DownloadFailed,
    DownloadFinished,
    DownloadProgressed,
    EngineEvent,
    LocalEngine,
    LocalServer,
    ModelCrashed,
    ModelDownload,
    ModelReady,
    ModelStartFailed,
    ModelStarting,
    ModelStopped,
)

router = APIRouter(tags=["local models"])


class RunningModelOut(BaseModel):
    """A model running on this computer (its key is never sent)."""

    name: str
    path: str
    model: str = Field(description="The name the engine answers to.")
    context_length: int | None = Field(description="Tokens per conversation, as applied.")
    parallel: int | None
    threads: int | None
    supports_tools: bool | None
    chat_template: str = Field(description="'model', 'tool template' or 'custom'.")
    pid: int | None
    rss_bytes: int | None = Field(default=None, description="The engine's resident memory.")


class CrashOut(BaseModel):
    """The engine's last crash, until that model starts again (POST /local-models/restart)."""

    name: str
    path: str
    message: str
    signal: str | None


class LibraryOut(BaseModel):
    """The models the library finds, what runs, and the last crash."""

    models: list[dict[str, Any]] = Field(
        description="One record per model (as `desktop-agent models --json`): name, source, "
                    "path, parts, size_bytes, architecture, parameters, size_label, "
                    "quantization, context_length, supports_tools, fit, problem.")
    running: list[RunningModelOut]
    crash: CrashOut | None


class CatalogOut(BaseModel):
    """One suggested download."""

    id: str
    title: str
    source: str = Field(description="repo/file, as POST /local-models/downloads takes it.")
    size_bytes: int
    parameters: int
    context_length: int
    supports_tools: bool
    note: str
    fit: dict[str, Any]
    best: bool = Field(description="The pick preselected for this machine.")
    downloaded: str | None = Field(description="Its file when it is on this computer.")


class RunRequest(BaseModel):
    """Which model to run and, optionally, how (left out: the saved settings)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=4000,
                       description="A path, a library name, a file name, an Ollama "
                                   "name:tag or a catalog id.")
    context_length: int | None = Field(default=None, ge=512, le=10_000_000)
    threads: int | None = Field(default=None, ge=1, le=1024)
    parallel: int | None = Field(default=None, ge=1, le=64)
    allow_too_big: bool = Field(default=False, description="Start even when it needs more "
                                                           "memory than is free now.")


class StopRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, max_length=4000,
                              description="Which model; left out: the current one.")


class DownloadRequestIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1, max_length=2000,
                        description="owner/repo/file.gguf, owner/repo (its Q4_K_M file) or a "
                                    "catalog id.")


class DownloadOut(BaseModel):
    """A download and where it stands."""

    id: str
    repo_id: str
    filename: str
    state: str = Field(description="'downloading', 'done' or 'failed'.")
    downloaded_bytes: int
    total_bytes: int | None
    bytes_per_second: float | None
    seconds_left: float | None
    path: str | None
    error: str | None = Field(description="Why it failed (cancelled: the partial file is "
                                          "kept; POST the same source again to resume).")
    error_kind: str | None


def _engine(svc: AppServices) -> LocalEngine:
    return svc.local_engine


def running_out(server: LocalServer, rss: int | None = None) -> RunningModelOut:
    return RunningModelOut(name=server.name, path=str(server.path), model=server.model,
                           context_length=server.context_length, parallel=server.parallel,
                           threads=server.threads, supports_tools=server.supports_tools,
                           chat_template=server.chat_template_source, pid=server.pid,
                           rss_bytes=rss)


def download_out(download: ModelDownload) -> DownloadOut:
    progress = download.progress
    return DownloadOut(
        id=download.id, repo_id=download.repo_id, filename=download.filename,
        state=download.state, downloaded_bytes=progress.downloaded_bytes if progress else 0,
        total_bytes=progress.total_bytes if progress else None,
        bytes_per_second=progress.bytes_per_second if progress else None,
        seconds_left=progress.seconds_left if progress else None,
        path=str(download.path) if download.path else None,
        error=str(download.error) if download.error else None,
        error_kind=type(download.error).__name__ if download.error else None)


def catalog_out(choice: CatalogChoice) -> CatalogOut:
    model, fit = choice.model, choice.fit
    return CatalogOut(
        id=model.id, title=model.title, source=model.source, size_bytes=model.size_bytes,
        parameters=model.parameters, context_length=model.context_length,
        supports_tools=model.template_offers_tools, note=model.note,
        fit={"verdict": fit.verdict.value, "context": fit.context,
             "needed_bytes": fit.needed_bytes, "available_bytes": fit.available_bytes,
             "sentence": fit.sentence},
        best=choice.best, downloaded=str(choice.downloaded) if choice.downloaded else None)


def _as_http(error: Exception) -> ApiError:
    """The engine's typed refusals as 4xx answers with their sentence."""
    from desktop_agent.engine.errors import (
        EngineNotInstalled,
        ModelFileError,
        ModelNotFoundError,
        ModelTooBigError,
    )

    if isinstance(error, ModelNotFoundError):
        return ApiError(404, "model_not_found", str(error))
    if isinstance(error, ModelTooBigError):
        return ApiError(409, "model_too_big", str(error))
    if isinstance(error, ModelFileError):
        return ApiError(422, "model_file_unusable", str(error))
    if isinstance(error, EngineNotInstalled):
        return ApiError(501, "engine_not_installed", str(error))
    return ApiError(409, "engine_failed", str(error))


@router.get("/local-models", response_model=LibraryOut)
async def list_local_models(svc: AppServices = Depends(services)) -> LibraryOut:  # noqa: B008
    """Every model on this computer (scanned now: changed files only are read again)."""
    engine = _engine(svc)
    entries = await engine.scan()
    crash = engine.last_crash
    current = engine.current
    return LibraryOut(
        models=[entry.to_json() for entry in entries],
        running=[running_out(s, engine.rss_bytes() if s == current else None)
                 for s in engine.servers],
        crash=None if crash is None else CrashOut(name=crash.name, path=str(crash.path),
                                                  message=crash.message,
                                                  signal=crash.signal_name))


@router.get("/local-models/catalog", response_model=list[CatalogOut])
async def list_catalog(svc: AppServices = Depends(services)) -> list[CatalogOut]:  # noqa: B008
    """Suggested downloads with their fit on this machine; ``best`` is the preselected one."""
    return [catalog_out(choice) for choice in _engine(svc).catalog()]


@router.post("/local-models/run", response_model=RunningModelOut)
async def run_model(body: RunRequest,
                    svc: AppServices = Depends(services)) -> RunningModelOut:  # noqa: B008
    """Start a model (one at a time unless the preferences say otherwise); ready when answered."""
    from dataclasses import replace

    from desktop_agent.engine.errors import EngineError

    engine = _engine(svc)
    try:
        path, _name = await engine.resolve(body.model)
        settings = engine.preferences.settings_for(path)
        asked = replace(
            settings, context_length=body.context_length or settings.context_length,
            threads=body.threads or settings.threads, parallel=body.parallel or settings.parallel)
        server = await engine.run(str(path), asked, allow_too_big=body.allow_too_big)
    except EngineError as error:
        raise _as_http(error) from error
    return running_out(server, engine.rss_bytes())


@router.post("/local-models/stop", status_code=status.HTTP_204_NO_CONTENT)
async def stop_model(body: StopRequest,
                     svc: AppServices = Depends(services)) -> None:  # noqa: B008
    """Stop a model (its memory back to the system); nothing running is not an error."""
    from desktop_agent.engine.errors import EngineError

    try:
        await _engine(svc).stop(body.model)
    except EngineError as error:
        raise _as_http(error) from error


@router.post("/local-models/restart", response_model=RunningModelOut)
async def restart_model(svc: AppServices = Depends(services)) -> RunningModelOut:  # noqa: B008
    """Start again the model that crashed (or the current one)."""
    from desktop_agent.engine.errors import EngineError

    engine = _engine(svc)
    try:
        return running_out(await engine.restart(), engine.rss_bytes())
    except EngineError as error:
        raise _as_http(error) from error


@router.get("/local-models/downloads", response_model=list[DownloadOut])
async def list_downloads(svc: AppServices = Depends(services)) -> list[DownloadOut]:  # noqa: B008
    """Downloads started since the server started, oldest first."""
    return [download_out(d) for d in _engine(svc).downloads]


@router.post("/local-models/downloads", response_model=DownloadOut,
             status_code=status.HTTP_202_ACCEPTED)
async def start_download(body: DownloadRequestIn,
                         svc: AppServices = Depends(services)) -> DownloadOut:  # noqa: B008
    """Start (or resume) a download; the same file already downloading is that download."""
    from desktop_agent.engine.errors import DownloadError

    try:
        download = await _engine(svc).download(body.source)
    except ValueError as error:
        raise ApiError(422, "bad_source", str(error)) from error
    except DownloadError as error:
        raise ApiError(409, "download_refused", str(error)) from error
    return download_out(download)


@router.get("/local-models/downloads/{download_id}", response_model=DownloadOut)
async def get_download(download_id: str,
                       svc: AppServices = Depends(services)) -> DownloadOut:  # noqa: B008
    """One download and where it stands."""
    return download_out(_download(svc, download_id))


@router.delete("/local-models/downloads/{download_id}", response_model=DownloadOut)
async def cancel_download(download_id: str,
                          svc: AppServices = Depends(services)) -> DownloadOut:  # noqa: B008
    """Cancel it; the partial file is kept and starting it again resumes."""
    download = _download(svc, download_id)
    download.cancel()
    return download_out(download)


def _download(svc: AppServices, download_id: str) -> ModelDownload:
    download = _engine(svc).download_of(download_id)
    if download is None:
        raise not_found("download", download_id)
    return download


@router.get("/local-models/events/stream", responses={
    200: {"description": "A text/event-stream of engine events (model_starting, "
                         "model_ready, model_stopped, model_start_failed, model_crashed, "
                         "download_progress, download_finished, download_failed).",
          "content": {"text/event-stream": {"schema": {"type": "string"}}}}})
async def stream_engine_events(
        svc: AppServices = Depends(services)) -> StreamingResponse:  # noqa: B008
    """Follow the engine live: downloads' progress, models starting, stopping, crashing."""
    engine = _engine(svc)
    queue: asyncio.Queue[EngineEvent] = asyncio.Queue(maxsize=1000)

    def heard(event: EngineEvent) -> None:
        if queue.full() and isinstance(event, DownloadProgressed):
            return  # a slow reader loses progress reports, never an end
        queue.put_nowait(event)

    unsubscribe = engine.subscribe(heard)

    async def follow() -> AsyncIterator[bytes]:
        try:
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield KEEPALIVE_FRAME
                    continue
                kind, data = engine_event_json(event)
                yield f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()
        finally:
            unsubscribe()

    return StreamingResponse(follow(), media_type="text/event-stream", headers=SSE_HEADERS)


def engine_event_json(event: EngineEvent) -> tuple[str, dict[str, Any]]:
    """An engine event as the stream's event name and JSON data (no key, ever)."""
    if isinstance(event, DownloadProgressed):
        p = event.progress
        return "download_progress", {
            "id": event.download_id, "filename": p.filename,
            "downloaded_bytes": p.downloaded_bytes, "total_bytes": p.total_bytes,
            "bytes_per_second": p.bytes_per_second, "seconds_left": p.seconds_left,
            "verifying": p.verifying}
    if isinstance(event, DownloadFinished):
        return "download_finished", {"id": event.download_id, "path": str(event.path)}
    if isinstance(event, DownloadFailed):
        return "download_failed", {"id": event.download_id, "message": str(event.error),
                                   "kind": type(event.error).__name__}
    if isinstance(event, ModelReady):
        return "model_ready", running_out(event.server).model_dump()
    if isinstance(event, ModelCrashed):
        return "model_crashed", {"name": event.name, "path": str(event.path),
                                 "message": event.message, "signal": event.signal_name}
    if isinstance(event, ModelStartFailed):
        return "model_start_failed", {"name": event.name, "path": str(event.path),
                                      "message": str(event.error),
                                      "kind": type(event.error).__name__}
    if isinstance(event, ModelStopped):
        return "model_stopped", {"name": event.name, "path": str(event.path),
                                 "reason": event.reason}
    assert isinstance(event, ModelStarting)
    return "model_starting", {"name": event.name, "path": str(event.path)}
