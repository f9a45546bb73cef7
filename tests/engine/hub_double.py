"""A stand-in for the Hugging Face hub and its file CDN, on two 127.0.0.1 ports.

``huggingface_hub`` talks to it as to the real hub when ``HF_ENDPOINT`` (or the
``endpoint`` argument) points at :attr:`HubDouble.endpoint`. It answers the
resolve protocol as the hub does:

- ``HEAD|GET /{repo}/resolve/{revision}/{file}`` for a stored (LFS) file: ``302`` to
  the CDN with ``X-Repo-Commit``, ``X-Linked-Etag`` (the sha256, quoted),
  ``X-Linked-Size`` and the pointer's ``ETag``; the CDN is another origin, so the
  client does not follow it on HEAD and drops the Authorization header on GET.
- a gated repository: ``401`` without a token, ``403`` with a token that was not
  granted, each with ``X-Error-Code: GatedRepo`` and the hub's ``X-Error-Message``.
- a missing repository, revision or file: ``404`` with ``X-Error-Code:
  RepoNotFound`` / ``RevisionNotFound`` / ``EntryNotFound``.
- the CDN serves ``Range: bytes=N-`` with ``206`` and ``Content-Range``.

Faults a test can switch on: cut the CDN's body after some bytes, refuse every CDN
connection from then on (the network went away), serve bytes that do not match the
published checksum, or pace the body so a test can cancel mid-way.
The header names are literals as the hub sends them; ``test_hub_double.py`` checks
them against ``huggingface_hub.constants`` so this double cannot drift silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

#: Header names as the hub sends them (checked against huggingface_hub.constants).
HEADER_REPO_COMMIT = "X-Repo-Commit"
HEADER_LINKED_ETAG = "X-Linked-Etag"
HEADER_LINKED_SIZE = "X-Linked-Size"
HEADER_ERROR_CODE = "X-Error-Code"
HEADER_ERROR_MESSAGE = "X-Error-Message"

CHUNK = 64 * 1024


@dataclass
class HubRepo:
    """One model repository at one commit."""

    commit: str
    files: dict[str, bytes] = field(default_factory=dict)
    #: Tokens granted access; None means the repository is public.
    granted_tokens: set[str] | None = None


@dataclass
class CdnFaults:
    """What goes wrong on the CDN; tests flip these while a download runs."""

    #: Close the connection after sending this many body bytes (once), then clear.
    cut_after: int | None = None
    #: Refuse every connection from the moment the body is cut (the network is gone).
    down_after_cut: bool = False
    down: bool = False
    #: Serve these bytes instead of the published ones (a corrupted mirror).
    wrong_content: bytes | None = None
    #: Seconds to wait between body chunks.
    pace: float = 0.0


@dataclass
class SeenRequest:
    """A request as the double saw it; header names lower-cased (HTTP ignores case)."""

    server: str
    method: str
    path: str
    headers: dict[str, str]


class HubDouble:
    """The hub on :attr:`endpoint` and its CDN on :attr:`cdn`; use as a context manager."""

    def __init__(self) -> None:
        self.repos: dict[str, HubRepo] = {}
        self.faults = CdnFaults()
        self.requests: list[SeenRequest] = []
        #: X-Linked-Size to announce instead of the real one, by file name.
        self.announced_sizes: dict[str, int] = {}
        self._lock = threading.Lock()
        self._hub = _Server(self, "hub")
        self._cdn = _Server(self, "cdn")

    @property
    def endpoint(self) -> str:
        return self._hub.url

    @property
    def cdn(self) -> str:
        return self._cdn.url

    def add_file(self, repo_id: str, filename: str, content: bytes, *,
                 granted_tokens: set[str] | None = None) -> str:
        """Publish ``content``; returns its sha256 (the hub's X-Linked-Etag)."""
        repo = self.repos.setdefault(repo_id, HubRepo(commit=_commit_for(repo_id)))
        repo.files[filename] = content
        repo.granted_tokens = granted_tokens
        return hashlib.sha256(content).hexdigest()

    def blob(self, sha256: str) -> bytes | None:
        for repo in self.repos.values():
            for content in repo.files.values():
                if hashlib.sha256(content).hexdigest() == sha256:
                    return content
        return None

    def record(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> HubDouble:
        self._hub.start()
        self._cdn.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._hub.stop()
        self._cdn.stop()


class _Server:
    def __init__(self, hub: HubDouble, role: str) -> None:
        handler = type(f"{role}Handler", (_Handler,), {"hub": hub, "role": role})
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join(timeout=10)


class _Handler(BaseHTTPRequestHandler):
    hub: HubDouble
    role: str
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        self.hub.record(SeenRequest(self.role, self.command, self.path,
                                     {k.lower(): v for k, v in self.headers.items()}))
        if self.role == "cdn":
            self._cdn(body=body)
        else:
            self._resolve()

    # -- the hub ------------------------------------------------------------------------

    def _resolve(self) -> None:
        parts = unquote(urlsplit(self.path).path).strip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            self._error(404, "RepoNotFound", "Repository not found")
            return
        repo_id, revision, filename = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
            return
        if repo.granted_tokens is not None and not self._granted(repo, repo_id):
            return
        if revision not in ("main", repo.commit):
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return
        content = repo.files.get(filename)
        if content is None:
            self._error(404, "EntryNotFound", "Entry not found", commit=repo.commit)
            return
        sha256 = hashlib.sha256(content).hexdigest()
        pointer = (f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\n"
                   f"size {len(content)}\n").encode()
        self.send_response(302)
        self.send_header("Location", f"{self.hub.cdn}/blobs/{sha256}?X-Amz-Signature=abc")
        self.send_header("ETag", f'"{_git_oid(pointer)}"')
        self.send_header(HEADER_LINKED_ETAG, f'"{sha256}"')
        self.send_header(HEADER_LINKED_SIZE,
                         str(self.hub.announced_sizes.get(filename, len(content))))
        self.send_header(HEADER_REPO_COMMIT, repo.commit)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _granted(self, repo: HubRepo, repo_id: str) -> bool:
        authorization = self.headers.get("Authorization", "")
        token = authorization.removeprefix("Bearer ").strip()
        if not token:
            self._error(401, "GatedRepo", (
                f"Access to model {repo_id} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in."))
            return False
        if token not in (repo.granted_tokens or set()):
            self._error(403, "GatedRepo", (
                f"Access to model {repo_id} is restricted and you are not in the authorized "
                f"list. Visit https://huggingface.co/{repo_id} to ask for access."))
            return False
        return True

    def _error(self, status: int, code: str, message: str, commit: str | None = None) -> None:
        body = f'{{"error": "{message}"}}'.encode()
        self.send_response(status)
        self.send_header(HEADER_ERROR_CODE, code)
        self.send_header(HEADER_ERROR_MESSAGE, message)
        if commit:
            self.send_header(HEADER_REPO_COMMIT, commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # -- the CDN ------------------------------------------------------------------------

    def _cdn(self, *, body: bool) -> None:
        faults = self.hub.faults
        if faults.down:
            self._hang_up()
            return
        sha256 = urlsplit(self.path).path.rsplit("/", 1)[-1]
        content = self.hub.blob(sha256)
        if content is None:
            self.send_error(404)
            return
        if faults.wrong_content is not None:
            content = faults.wrong_content
        start = _range_start(self.headers.get("Range"))
        if start is not None and start >= len(content):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(content)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        self.send_header("Content-Length", str(len(content) - (start or 0)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if body:
            self._send_body(content[start or 0:])

    def _send_body(self, data: bytes) -> None:
        faults = self.hub.faults
        sent = 0
        while sent < len(data):
            chunk = data[sent:sent + CHUNK]
            if faults.cut_after is not None and sent + len(chunk) > faults.cut_after:
                self.wfile.write(chunk[:max(0, faults.cut_after - sent)])
                faults.cut_after = None
                faults.down = faults.down_after_cut
                self._hang_up()
                return
            self.wfile.write(chunk)
            sent += len(chunk)
            if faults.pace:
                time.sleep(faults.pace)

    def _hang_up(self) -> None:
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _range_start(header: str | None) -> int | None:
    if not header or not header.startswith("bytes="):
        return None
    first = header.removeprefix("bytes=").split("-", 1)[0]
    return int(first) if first.isdigit() else None


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _commit_for(repo_id: str) -> str:
    return hashlib.sha1(repo_id.encode()).hexdigest()
