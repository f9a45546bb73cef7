"""Files in the conversation's workdir: list, download, upload, delete.

Every path is checked as text (:func:`checked_parts`: relative, no ``..``, no
over-long names) and then opened through
:mod:`desktop_agent.core.tooling.builtin.confined_fs`: component by component
from the workdir's descriptor with ``O_NOFOLLOW``, so swapping a folder for a
symlink while a request runs cannot lead it outside, and FIFOs, sockets and
devices are refused before they are opened. Uploads go to a temporary file in
the target's folder (opened through the same descriptor) and are renamed over
the target only when complete and within the size limit, so a too-large or
broken upload never replaces an existing file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Depends, File, Form, Query, Request, Response, UploadFile, status
from fastapi.responses import StreamingResponse

from desktop_agent.core.tooling.builtin.confined_fs import (
    NotAFileError,
    Opened,
    open_dir,
    open_file,
)
from desktop_agent.core.tooling.builtin.workdir import (
    BuiltinToolError,
    OutsideWorkdirError,
    Workdir,
)
from desktop_agent.server.api_errors import ApiError
from desktop_agent.server.api_models import ErrorBody, FileEntry, FileList, FileWritten
from desktop_agent.server.app_services import AppServices, services
from desktop_agent.server.workdir_paths import checked_parts, open_workdir

router = APIRouter(tags=["files"])
T = TypeVar("T")

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "The path is absolute, climbs out, is a link out, "
                                             "has an over-long name, or is not a regular file."},
    404: {"model": ErrorBody, "description": "No such conversation or file."},
}
MAX_ENTRIES = 10_000
_CHUNK = 1 << 20
PathQuery = Query(max_length=4096, description="A path relative to the workdir.")


async def _workdir(svc: AppServices, conversation_id: str) -> Workdir:
    record = await asyncio.to_thread(svc.conversation, conversation_id)
    return open_workdir(svc.workdir_of(record))


async def _in_thread(path: str, func: Callable[..., T], /, *args: Any) -> T:
    """Run a file operation off the loop; an OS error becomes a sentence, not a 500."""
    try:
        return await asyncio.to_thread(func, *args)
    except ApiError:
        raise
    except BuiltinToolError as exc:
        raise _refusal(exc, path, f"No file {path!r} in the workdir.") from exc
    except OSError as exc:
        raise ApiError(409, "file_changed",
                       f"{path!r} could not be used ({exc.strerror or exc}); it may have changed "
                       "while the request ran. Try again.") from exc


def _refusal(exc: BuiltinToolError, path: str, missing: str) -> ApiError:
    """The API's answer for a confined-open failure."""
    if isinstance(exc, OutsideWorkdirError):
        return ApiError(400, "bad_path", "The path leads outside the workdir (through a link).")
    if isinstance(exc, NotAFileError):
        return ApiError(400, "not_a_file", str(exc))
    if "does not exist" in str(exc):
        return ApiError(404, "not_found", missing)
    return ApiError(400, "bad_path", str(exc))


def _list(workdir: Workdir, parts: list[str], path: str) -> tuple[str, list[FileEntry]]:
    try:
        folder = open_dir(workdir, "/".join(parts) or ".")
    except BuiltinToolError as exc:
        raise _refusal(exc, path, f"No folder {path!r} in the workdir.") from exc
    with folder:
        if not stat.S_ISDIR(folder.info.st_mode):
            raise ApiError(404, "not_found", f"No folder {path!r} in the workdir.")
        with os.scandir(folder.fd) as listing:
            found = sorted(listing, key=lambda e: e.name)[:MAX_ENTRIES]
        entries = []
        for entry in found:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if workdir.is_hidden(info):  # the app's data folder: absent here too
                continue
            entries.append(FileEntry(
                path="/".join([*folder.parts, entry.name]), name=entry.name,
                is_dir=stat.S_ISDIR(info.st_mode), size=info.st_size, modified=info.st_mtime,
            ))
        return folder.relative, entries


@router.get("/conversations/{conversation_id}/files", response_model=FileList, responses=ERRORS)
async def list_files(conversation_id: str, path: str = Query(".", max_length=4096),
                     svc: AppServices = Depends(services)) -> FileList:  # noqa: B008
    """The entries of a folder in the workdir (the workdir itself by default)."""
    workdir = await _workdir(svc, conversation_id)
    parts = checked_parts(path, allow_root=True)
    shown, entries = await _in_thread(path, _list, workdir, parts, path)
    return FileList(path=shown, entries=entries)


def _open_for_download(workdir: Workdir, parts: list[str], path: str) -> Opened:
    try:
        return open_file(workdir, "/".join(parts), "read")
    except BuiltinToolError as exc:
        if isinstance(exc, NotAFileError) and "folder" in str(exc):
            raise ApiError(404, "not_found", f"No file {path!r} in the workdir.") from exc
        raise _refusal(exc, path, f"No file {path!r} in the workdir.") from exc


def _chunks(opened: Opened) -> Iterator[bytes]:
    try:
        while chunk := os.read(opened.fd, _CHUNK):
            yield chunk
    finally:
        opened.close()


@router.get("/conversations/{conversation_id}/files/content", response_class=StreamingResponse,
            responses={200: {"content": {"application/octet-stream": {}},
                             "description": "The file's bytes."}, **ERRORS})
async def download_file(conversation_id: str, path: str = PathQuery,
                        svc: AppServices = Depends(services)  # noqa: B008
                        ) -> StreamingResponse:
    """Download one file (streamed from the descriptor that was checked)."""
    workdir = await _workdir(svc, conversation_id)
    parts = checked_parts(path)
    opened = await _in_thread(path, _open_for_download, workdir, parts, path)
    headers = {"Content-Length": str(opened.info.st_size),
               "Content-Disposition": f"attachment; filename*=utf-8''{quote(opened.name)}"}
    return StreamingResponse(_chunks(opened), media_type="application/octet-stream",
                             headers=headers)


def _parent_and_name(workdir: Workdir, parts: list[str], path: str, *,
                     create: bool) -> tuple[Opened, str]:
    """The folder holding the target (walked safely) and the target's name in it."""
    try:
        parent = open_dir(workdir, "/".join(parts[:-1]) or ".", create=create)
    except BuiltinToolError as exc:
        if "is a file" in str(exc):
            raise ApiError(409, "bad_target",
                           f"Cannot write {path!r}: a file is in the way.") from exc
        raise _refusal(exc, path, f"No file {path!r} in the workdir.") from exc
    name = parts[-1]
    try:
        info = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
    except FileNotFoundError:
        return parent, name
    if stat.S_ISLNK(info.st_mode):
        # The link itself is replaced or removed (never followed); one leading out is refused.
        where = workdir.root.joinpath(*parent.parts, name)
        if not workdir.contains(where):
            parent.close()
            raise ApiError(400, "bad_path", "The path leads outside the workdir (through a link).")
    return parent, name


def _write(upload: UploadFile, workdir: Workdir, parts: list[str], path: str,
           limit: int) -> tuple[str, int]:
    parent, name = _parent_and_name(workdir, parts, path, create=True)
    with parent:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.stat(name, dir_fd=parent.fd, follow_symlinks=False).st_mode):
                raise ApiError(409, "is_a_folder", f"{path!r} is a folder in the workdir.")
        temp = f".upload-{secrets.token_hex(8)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=parent.fd)
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := upload.file.read(_CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise ApiError(413, "too_large",
                                       f"The upload is larger than the limit of {limit} bytes.")
                    out.write(chunk)
            os.replace(temp, name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent.fd)
            raise
        return "/".join([*parent.parts, name]), size


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
    parts = checked_parts(path)
    shown, size = await _in_thread(path, _write, file, workdir, parts, path, svc.upload_limit)
    return FileWritten(path=shown, size=size)


def _delete(workdir: Workdir, parts: list[str], path: str, recursive: bool) -> None:
    parent, name = _parent_and_name(workdir, parts, path, create=False)
    with parent:
        try:
            info = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
        except FileNotFoundError:
            raise ApiError(404, "not_found", f"No file {path!r} in the workdir.") from None
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=parent.fd)
        elif recursive:
            # rmtree with dir_fd walks descriptors and never follows a symlink.
            shutil.rmtree(name, dir_fd=parent.fd)
        else:
            try:
                os.rmdir(name, dir_fd=parent.fd)
            except OSError as exc:
                raise ApiError(409, "folder_not_empty",
                               f"{path!r} is a folder that is not empty; pass recursive=true."
                               ) from exc


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
    parts = checked_parts(path)
    await _in_thread(path, _delete, workdir, parts, path, recursive)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
