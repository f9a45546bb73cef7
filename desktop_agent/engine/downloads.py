"""Download a model file from the Hugging Face hub into the hub's own cache, resumably.

The file ends where ``hf_hub_download`` puts it (``models--owner--repo/blobs`` and a
snapshot link), so the Hugging Face tools, llama.cpp's ``-hf`` and the library all
see one copy. ``hf_hub_download`` alone cannot be the whole download: since
huggingface_hub 1.18 it writes each attempt to a new temporary file and deletes it
on failure (upstream issue #4196), so a dropped connection after 3 GB of a 4 GB
model would start again from nothing. So the bytes come through the hub's own
pieces, kept apart only where it matters:

1. ``get_hf_file_metadata``: the commit, the file's sha256 (its LFS ETag), its size
   and where the bytes are (a CDN), with the hub's errors for gated, missing or
   unreachable repositories;
2. ``http_get`` (the function ``hf_hub_download`` itself streams with, retrying a
   dropped connection with ``Range``) into ``blobs/<sha256>.incomplete``, which
   stays on failure or cancellation, so the next call resumes from its length; the
   Authorization header is not sent to another host, as the hub client does;
3. the sha256 checked here (the hub client checks only the size); a mismatch
   deletes the file;
4. the blob moved in place and ``hf_hub_download`` called to link the snapshot and
   record the revision, as for any file it finds already in its blobs.

Runs in the caller's thread (the window calls it from a worker thread); progress
goes to a callback, and a ``threading.Event`` cancels.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import shutil
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import httpx2
from filelock import FileLock, Timeout
from huggingface_hub import (
    get_hf_file_metadata,
    hf_hub_download,
    hf_hub_url,
    try_to_load_from_cache,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import http_get, repo_folder_name

# Public (documented, in utils' lazy __all__), but re-exported in a way mypy does not see.
from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

from desktop_agent.engine.download_progress import (
    DownloadCancelled,
    ProgressCallback,
    ProgressMeter,
    progress_bar_class,
)
from desktop_agent.engine.errors import (
    ChecksumMismatchError,
    DiskFullError,
    DownloadCancelledError,
    DownloadError,
    DownloadInterruptedError,
    GatedModelError,
    HubEntryNotFoundError,
)
from desktop_agent.engine.fit import gigabytes
from desktop_agent.engine.gguf_info import split_parts
from desktop_agent.engine.model_folders import hugging_face_cache

logger = logging.getLogger("desktop_agent.engine.downloads")

DEFAULT_ENDPOINT = "https://huggingface.co"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_GIT_SHA1 = re.compile(r"[0-9a-f]{40}")
_HASH_CHUNK = 8 * 1024 * 1024
_NETWORK_ERRORS = (httpx2.TransportError,)
#: What the hub client raises (its HTTP errors are OSErrors) and our cancellation.
_HUB_ERRORS = (OSError, ValueError, EntryNotFoundError, httpx2.HTTPError, DownloadCancelled)


@dataclass(frozen=True)
class DownloadRequest:
    """One file to fetch.

    Attributes:
        repo_id: ``owner/repo`` on the hub.
        filename: The file inside the repository.
        revision: Branch, tag or commit.
        token: A Hugging Face access token for gated or private repositories; the
            caller resolves it (from the keyring) and it is never stored or shown.
        cache_dir: The hub cache; None resolves it as huggingface_hub does, now.
        endpoint: The hub's address; None reads ``HF_ENDPOINT`` now.
    """

    repo_id: str
    filename: str
    revision: str = "main"
    token: str | None = field(default=None, repr=False)
    cache_dir: Path | None = None
    endpoint: str | None = None

    def resolved_cache(self) -> Path:
        return self.cache_dir or hugging_face_cache()

    def resolved_endpoint(self) -> str:
        return (self.endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


@dataclass(frozen=True)
class _Remote:
    commit: str
    etag: str
    size: int | None
    location: str


def download_model_file(request: DownloadRequest, *, progress: ProgressCallback | None = None,
                        cancel: threading.Event | None = None) -> Path:
    """Fetch ``request``'s file into the hub cache and return its snapshot path.

    A file already in the cache is returned at once, without the network.

    Raises:
        GatedModelError: The repository needs a token with granted access.
        HubEntryNotFoundError: No such repository, revision or file.
        DownloadInterruptedError: The network failed; the partial file is kept.
        DiskFullError: Not enough room; the partial file is kept.
        ChecksumMismatchError: The bytes were not the published ones; deleted.
        DownloadCancelledError: ``cancel`` was set; the partial file is kept.
        DownloadError: Any other refusal from the hub or the CDN.
    """
    cache = request.resolved_cache()
    cached = try_to_load_from_cache(request.repo_id, request.filename, cache_dir=cache,
                                    revision=request.revision)
    if isinstance(cached, str):
        return Path(cached)
    remote = _remote_file(request)
    storage = cache / repo_folder_name(repo_id=request.repo_id, repo_type="model")
    blob = storage / "blobs" / remote.etag
    if not blob.exists():
        _fetch_blob(request, remote, blob, ProgressMeter(request.filename, progress), cancel)
    return _link_snapshot(request)


def download_model(request: DownloadRequest, *, progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None) -> Path:
    """Fetch a model: every part when ``request.filename`` names a split model's part.

    Parts are fetched in order, each resumable on its own, and land side by side in
    the same snapshot, where llama.cpp and :func:`read_model_info` find them. Progress
    reports name the part being fetched. Returns the first part's path.

    Raises:
        DownloadError: As :func:`download_model_file`, for the part that failed.
    """
    parts = split_parts(PurePosixPath(request.filename)) or (PurePosixPath(request.filename),)
    paths = [download_model_file(replace(request, filename=str(part)), progress=progress,
                                 cancel=cancel)
             for part in parts]
    return paths[0]


def partial_path(blob: Path) -> Path:
    """Where the bytes of an unfinished download wait (the name older hubs resumed from)."""
    return blob.with_name(f"{blob.name}.incomplete")


def _remote_file(request: DownloadRequest) -> _Remote:
    endpoint = request.resolved_endpoint()
    url = hf_hub_url(request.repo_id, request.filename, revision=request.revision,
                     endpoint=endpoint)
    try:
        meta = get_hf_file_metadata(url, token=request.token or False, endpoint=endpoint)
    except _HUB_ERRORS as error:
        raise _translate(error, request, bytes_kept=0) from None
    if meta.commit_hash is None or meta.etag is None:
        raise DownloadError(request.repo_id, request.filename, (
            f"{endpoint} did not answer as a Hugging Face hub does (no commit or checksum "
            "for the file): check the hub address."))
    return _Remote(meta.commit_hash, meta.etag, meta.size, meta.location)


def _fetch_blob(request: DownloadRequest, remote: _Remote, blob: Path, meter: ProgressMeter,
                cancel: threading.Event | None) -> None:
    blob.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(blob)
    lock_path = (request.resolved_cache() / ".locks" / blob.parent.parent.name
                 / f"{remote.etag}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(lock_path), timeout=0):
            _stream(request, remote, partial, meter, cancel)
            _verify(request, remote, partial, meter, cancel)
            os.replace(partial, blob)
    except Timeout:
        raise DownloadError(request.repo_id, request.filename, (
            f"{request.filename} is already being downloaded by another program or window; "
            "wait for it to finish.")) from None


def _stream(request: DownloadRequest, remote: _Remote, partial: Path, meter: ProgressMeter,
            cancel: threading.Event | None) -> None:
    if remote.size is not None and _size(partial) > remote.size:
        partial.unlink()  # more than the file: not a prefix of it
    _check_space(request, remote, partial)
    headers = build_hf_headers(token=request.token or False)
    if _origin(remote.location) != _origin(request.resolved_endpoint()):
        headers.pop("authorization", None)  # the token never leaves the hub for a CDN
    try:
        with partial.open("ab") as file:
            resume = file.tell()
            if remote.size is not None and resume == remote.size:
                return
            http_get(remote.location, file, resume_size=resume, headers=headers,
                     expected_size=remote.size, displayed_filename=request.filename,
                     tqdm_class=progress_bar_class(meter, cancel))
    except _HUB_ERRORS as error:
        if isinstance(error, OSError) and remote.size is not None and \
                _size(partial) > remote.size:
            _discard(partial)
            raise _mismatch(request) from None
        raise _translate(error, request, bytes_kept=_size(partial), folder=partial.parent,
                         total=remote.size) from None


def _verify(request: DownloadRequest, remote: _Remote, partial: Path, meter: ProgressMeter,
            cancel: threading.Event | None) -> None:
    """Hash the finished file against the ETag (sha256 for LFS files, git's sha1 otherwise)."""
    size = _size(partial)
    if _SHA256.fullmatch(remote.etag):
        digest = hashlib.sha256()
    elif _GIT_SHA1.fullmatch(remote.etag):
        digest = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False)
    else:
        logger.info("No checksum to verify %s against (ETag %r)", request.filename, remote.etag)
        return
    hashed = 0
    with partial.open("rb") as file:
        while chunk := file.read(_HASH_CHUNK):
            if cancel is not None and cancel.is_set():
                raise _cancelled(request, size)
            digest.update(chunk)
            hashed += len(chunk)
            meter.verifying(hashed)
    if digest.hexdigest() != remote.etag or (remote.size is not None and size != remote.size):
        _discard(partial)
        raise _mismatch(request)


def _link_snapshot(request: DownloadRequest) -> Path:
    """Let the hub client link the finished blob into its snapshot and record the revision."""
    try:
        return Path(hf_hub_download(
            request.repo_id, request.filename, revision=request.revision,
            cache_dir=request.resolved_cache(), token=request.token or False,
            endpoint=request.resolved_endpoint()))
    except _HUB_ERRORS as error:
        raise _translate(error, request, bytes_kept=0) from None


def _check_space(request: DownloadRequest, remote: _Remote, partial: Path) -> None:
    if remote.size is None:
        return
    needed = remote.size - _size(partial)
    free = shutil.disk_usage(partial.parent).free
    if needed > free:
        raise DiskFullError(request.repo_id, request.filename, (
            f"Not enough disk space for {request.filename}: it needs {gigabytes(needed)} more "
            f"and {gigabytes(free)} is free in {partial.parent}."))


def _translate(error: Exception, request: DownloadRequest, *, bytes_kept: int,
               folder: Path | None = None, total: int | None = None) -> DownloadError:
    """The engine's error, with a sentence, for whatever the hub client raised."""
    repo, name = request.repo_id, request.filename
    if isinstance(error, DownloadCancelled):
        return _cancelled(request, bytes_kept)
    if isinstance(error, GatedRepoError):
        return GatedModelError(repo, name, (
            f"Your Hugging Face token has no access to {repo} yet: accept its terms on its "
            "page, then try again (approval can take a while)." if request.token else
            f"{repo} is gated: accept its terms on its Hugging Face page and add an access "
            "token."))
    if isinstance(error, RepositoryNotFoundError):
        return HubEntryNotFoundError(repo, name, (
            f"There is no model {repo} on the hub (or it is private and needs a token)."))
    if isinstance(error, RevisionNotFoundError):
        return HubEntryNotFoundError(repo, name, f"{repo} has no revision {request.revision}.")
    if isinstance(error, EntryNotFoundError):
        return HubEntryNotFoundError(repo, name, f"{repo} has no file {name}.")
    if isinstance(error, _NETWORK_ERRORS):
        host = urlsplit(request.resolved_endpoint()).netloc
        if not bytes_kept:
            return DownloadInterruptedError(repo, name, (
                f"Cannot reach {host} to download {name}: check the network connection."), 0)
        return DownloadInterruptedError(repo, name, (
            f"The connection to {host} was lost while downloading {name}; "
            f"{gigabytes(bytes_kept)} of {gigabytes(total)} is kept and downloading again "
            "resumes from there."), bytes_kept)
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        where = folder or request.resolved_cache()
        return DiskFullError(repo, name, (
            f"The disk filled up while downloading {name} into {where}; free some space and "
            f"download again ({gigabytes(bytes_kept)} is kept)."))
    if isinstance(error, HfHubHTTPError):
        status = error.response.status_code if error.response is not None else "no"
        return DownloadError(repo, name, (
            f"The hub refused {name} from {repo} (HTTP {status}); try again later."))
    logger.warning("Download of %s from %s failed: %r", name, repo, error)
    return DownloadError(repo, name, f"Downloading {name} from {repo} failed: {error}.")


def _cancelled(request: DownloadRequest, bytes_kept: int) -> DownloadCancelledError:
    return DownloadCancelledError(request.repo_id, request.filename, (
        f"Download of {request.filename} cancelled; {gigabytes(bytes_kept)} is kept for "
        "next time."))


def _mismatch(request: DownloadRequest) -> ChecksumMismatchError:
    return ChecksumMismatchError(request.repo_id, request.filename, (
        f"{request.filename} did not match the checksum {request.repo_id} publishes (the "
        "download was corrupted on the way); it was deleted: download it again."))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
