"""Files in the conversation's workdir: list, download, upload, delete.

Every path goes through :func:`confined_path`: relative only, no ``..``, and
no symlink that leads out of the workdir. Uploads are streamed to a temporary
file next to the target and refused past the size limit, so a too-large or
broken upload never replaces an existing file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from pathlib import Path as FsPath
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, Response, UploadFile, status
from fastapi.responses import FileResponse

from ..api_errors import ApiError
from ..api_models import ErrorBody, FileEntry, FileList, FileWritten
from ..app_services import AppServices, services
from ..workdir_paths import confined_path, open_workdir

router = APIRouter(tags=["files"])

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "The path is absolute, climbs out or is a link out."},
    404: {"model": ErrorBody, "description": "No such conversation or file."},
}
MAX_ENTRIES = 10_000
PathQuery = Query(max_length=4096, description="A path relative to the workdir.")


async def _workdir(svc: AppServices, conversation_id: str):  # type: ignore[no-untyped-def]
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    return open_workdir(svc.workdir_of(record))


def _list(root: FsPath, target: FsPath) -> list[FileEntry]:
    entries = []
    with os.scandir(target) as it:
        for entry in sorted(it, key=lambda e: e.name)[:MAX_ENTRIES]:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            entries.append(FileEntry(
                path=FsPath(entry.path).relative_to(root).as_posix(), name=entry.name,
                is_dir=entry.is_dir(follow_symlinks=False), size=info.st_size,
                modified=info.st_mtime,
            ))
    return entries


@router.get("/conversations/{conversation_id}/files", response_model=FileList, responses=ERRORS)
async def list_files(conversation_id: str, path: str = Query(".", max_length=4096),
                     svc: AppServices = Depends(services)) -> FileList:  # noqa: B008
    """The entries of a folder in the workdir (the workdir itself by default)."""
    workdir = await _workdir(svc, conversation_id)
    target = confined_path(workdir, path, allow_root=True)
    if not target.is_dir():
        raise ApiError(404, "not_found", f"No folder {path!r} in the workdir.")
    entries = await asyncio.to_thread(_list, workdir.root, target)
    return FileList(path=workdir.display(target), entries=entries)


@router.get("/conversations/{conversation_id}/files/content", response_class=FileResponse,
            responses={200: {"content": {"application/octet-stream": {}},
                             "description": "The file's bytes."}, **ERRORS})
async def download_file(conversation_id: str, path: str = PathQuery,
                        svc: AppServices = Depends(services)) -> FileResponse:  # noqa: B008
    """Download one file."""
    workdir = await _workdir(svc, conversation_id)
    target = confined_path(workdir, path)
    if not target.is_file():
        raise ApiError(404, "not_found", f"No file {path!r} in the workdir.")
    return FileResponse(target, media_type="application/octet-stream", filename=target.name)


def _write(upload: UploadFile, target: FsPath, limit: int) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=".upload-", dir=target.parent)
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := upload.file.read(1 << 20):
                size += len(chunk)
                if size > limit:
                    raise ApiError(413, "too_large",
                                   f"The upload is larger than the limit of {limit} bytes.")
                out.write(chunk)
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return size


@router.post("/conversations/{conversation_id}/files", status_code=status.HTTP_201_CREATED,
             response_model=FileWritten,
             responses={413: {"model": ErrorBody, "description": "Over the size limit."},
                        **ERRORS})
async def upload_file(
    request: Request,
    conversation_id: str,
    path: str = Form(max_length=4096, description="Where to put it, relative to the workdir."),
    file: UploadFile = File(description="The file's content."),  # noqa: B008
    svc: AppServices = Depends(services),  # noqa: B008
) -> FileWritten:
    """Upload (or replace) a file; folders on the way are created."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > svc.upload_limit + 64 * 1024:
        raise ApiError(413, "too_large",
                       f"The upload is larger than the limit of {svc.upload_limit} bytes.")
    workdir = await _workdir(svc, conversation_id)
    target = confined_path(workdir, path)
    if target.is_dir():
        raise ApiError(409, "is_a_folder", f"{path!r} is a folder in the workdir.")
    try:
        size = await asyncio.to_thread(_write, file, target, svc.upload_limit)
    except (NotADirectoryError, FileExistsError) as exc:
        raise ApiError(409, "bad_target", f"Cannot write {path!r}: a file is in the way.") from exc
    return FileWritten(path=workdir.display(target), size=size)


@router.delete("/conversations/{conversation_id}/files", status_code=status.HTTP_204_NO_CONTENT,
               response_class=Response,
               responses={409: {"model": ErrorBody, "description": "A non-empty folder."},
                          **ERRORS})
async def delete_file(
    conversation_id: str,
    path: str = PathQuery,
    recursive: bool = Query(False, description="Delete a folder with everything in it."),
    svc: AppServices = Depends(services),  # noqa: B008
) -> Response:
    """Delete a file, or a folder (non-empty ones only with ``recursive``)."""
    workdir = await _workdir(svc, conversation_id)
    target = confined_path(workdir, path)
    if target.is_dir():
        if recursive:
            await asyncio.to_thread(shutil.rmtree, target)
        else:
            try:
                target.rmdir()
            except OSError as exc:
                raise ApiError(409, "folder_not_empty",
                               f"{path!r} is a folder that is not empty; pass recursive=true."
                               ) from exc
    elif target.exists():
        target.unlink()
    else:
        raise ApiError(404, "not_found", f"No file {path!r} in the workdir.")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
