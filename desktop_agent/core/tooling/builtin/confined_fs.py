"""Opening paths inside the workdir with no window between the check and the use.

Resolving a path to text and then opening that text (check, then use) loses
to a person or program that swaps a folder for a symlink in between: the open
follows the new link out of the workdir. Here a path is walked one component
at a time, each opened with ``O_NOFOLLOW`` relative to the file descriptor of
the folder before it, starting from a descriptor of the workdir. A component
that is a symlink is never followed by the kernel: its target is read with
``readlink`` and walked the same way, from the workdir's descriptor, so a link
that leads out (``..`` above the workdir, or an absolute target outside it)
is refused and a swap mid-walk makes the open fail instead of escaping.

Before a file is opened its type is checked without opening it
(``fstatat(AT_SYMLINK_NOFOLLOW)``) and again on the open descriptor (opened
with ``O_NONBLOCK``): FIFOs, sockets and devices are refused, so reading one
never blocks a worker thread. Writes refuse a file with more than one hard
link, which might be a file outside the workdir linked in.

On systems without ``openat`` (Windows) the walk falls back to resolving the
path and checking it, which narrows but does not close the race.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from desktop_agent.core.tooling.builtin.workdir import (
    BuiltinToolError,
    OutsideWorkdirError,
    Workdir,
)

#: Longest file or folder name, in bytes (Linux, macOS and Windows all stop here).
MAX_NAME_BYTES = 255
#: Symlinks followed in one path before it is called a loop (as the kernel does).
MAX_SYMLINK_HOPS = 40

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
#: True where every open can be made relative to a folder descriptor.
FD_WALK = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd \
    and os.stat in os.supports_dir_fd and os.readlink in os.supports_dir_fd

Mode = Literal["read", "write", "update"]


class NotAFileError(BuiltinToolError):
    """The path names a FIFO, socket, device or folder where a file was wanted."""


class MissingFileError(BuiltinToolError):
    """The named file (or a folder on its way) does not exist: to a diff, a new file."""


class HardLinkError(BuiltinToolError):
    """A write was refused because the file has other hard links."""


def kind_of(mode: int) -> str:
    """A word for a file type, for messages."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


def path_parts(workdir: Workdir, path: str) -> list[str]:
    """The components of ``path`` relative to the workdir, checked as text.

    Absolute paths are accepted when they lie inside the workdir (as text).

    Raises:
        BuiltinToolError: empty, NUL byte, or a component longer than 255 bytes.
        OutsideWorkdirError: an absolute path outside the workdir.
    """
    if not isinstance(path, str) or not path.strip():
        raise BuiltinToolError("a path is required")
    if "\x00" in path:
        raise BuiltinToolError("the path contains a NUL character")
    text = os.path.expanduser(path) if path.startswith("~") else path
    pure = Path(text)
    if pure.is_absolute():
        try:
            pure = pure.relative_to(workdir.root)
        except ValueError:
            raise OutsideWorkdirError(
                f"{path!r} is outside the working directory {str(workdir.root)!r}; "
                "file tools only work inside it") from None
    parts = [p for p in PurePosixPath(pure.as_posix()).parts if p not in ("", ".")]
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise BuiltinToolError(
                f"a name in {path!r} is longer than {MAX_NAME_BYTES} bytes, the most a file "
                "system allows")
    return parts


@dataclass
class Opened:
    """An open file or folder inside the workdir; close it (or use ``with``).

    Attributes:
        fd: The descriptor of the file or folder itself.
        parent_fd: The descriptor of the folder holding it (None for the workdir).
        name: Its name in that folder ('' for the workdir).
        parts: Its path from the workdir, symlinks resolved.
        info: ``fstat`` of ``fd``.
        created: True when opening for ``write`` made a new file.
    """

    fd: int
    parent_fd: int | None
    name: str
    parts: list[str]
    info: os.stat_result
    created: bool = False

    @property
    def relative(self) -> str:
        """The path as the model should see it ('.' for the workdir)."""
        return "/".join(self.parts) or "."

    def close(self) -> None:
        """Close both descriptors."""
        for fd in (self.fd, self.parent_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Walk:
    """One walk from the workdir's descriptor; holds the descriptors of the folders on the way."""

    def __init__(self, workdir: Workdir, shown: str) -> None:
        self.workdir = workdir
        self.shown = shown
        self.fds: list[int] = []
        self.names: list[str] = []
        self.hops = 0
        self.fds.append(os.open(workdir.root, _DIR_FLAGS))
        try:
            workdir.check_pinned(os.fstat(self.fds[0]))
        except BuiltinToolError:
            self.close()
            raise

    @property
    def fd(self) -> int:
        return self.fds[-1]

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()

    def up(self) -> None:
        if not self.names:
            raise OutsideWorkdirError(
                f"{self.shown!r} is outside the working directory "
                f"{str(self.workdir.root)!r}; file tools only work inside it")
        os.close(self.fds.pop())
        self.names.pop()

    def enter(self, name: str, fd: int) -> None:
        if self.workdir.is_hidden(os.fstat(fd)):  # the data folder: absent for the tools
            os.close(fd)
            raise BuiltinToolError(
                f"{self.shown!r} does not exist (no folder {'/'.join([*self.names, name])!r})")
        self.fds.append(fd)
        self.names.append(name)

    def follow(self, name: str, pending: list[str]) -> None:
        """Replace ``name`` (a symlink in the current folder) by its target's components."""
        self.hops += 1
        if self.hops > MAX_SYMLINK_HOPS:
            raise BuiltinToolError(f"{self.shown!r} goes through too many symlinks (a loop?)")
        try:
            target = os.readlink(name, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.ENOENT):
                pending.insert(0, name)  # no longer a link: it changed under us, walk it again
                return
            raise
        if os.path.isabs(target):
            try:
                relative = Path(target).relative_to(self.workdir.root)
            except ValueError:
                raise OutsideWorkdirError(
                    f"{self.shown!r} is outside the working directory "
                    f"{str(self.workdir.root)!r} (through a link); file tools only work "
                    "inside it") from None
            while self.names:
                self.up()
            target = relative.as_posix()
        pending[:0] = [p for p in PurePosixPath(target).parts if p not in ("", ".")]

    def is_symlink(self, name: str) -> bool:
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode)
        except OSError:
            return False


def _walk_folders(walk: _Walk, pending: list[str], *, create: bool, keep_last: bool) -> str | None:
    """Walk ``pending`` folder by folder; return the last name unwalked when ``keep_last``."""
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            walk.up()
            continue
        if keep_last and not pending:
            return name
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=walk.fd)
        except FileNotFoundError:
            if not create:
                raise MissingFileError(
                    f"{walk.shown!r} does not exist (no folder {'/'.join([*walk.names, name])!r})"
                ) from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=walk.fd)
            pending.insert(0, name)  # open what was made (or what raced us) the same way
            continue
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP) and walk.is_symlink(name):
                walk.follow(name, pending)
                continue
            if exc.errno == errno.ENOTDIR:
                raise BuiltinToolError(
                    f"{'/'.join([*walk.names, name])!r} in {walk.shown!r} is a file, not a folder"
                ) from None
            raise
        walk.enter(name, fd)
    return None


def open_dir(workdir: Workdir, path: str, *, create: bool = False) -> Opened:
    """Open a folder inside the workdir (the workdir itself for ``.``).

    Raises:
        BuiltinToolError: it does not exist, is not a folder, or leads out.
    """
    parts = path_parts(workdir, path)
    if not FD_WALK:  # pragma: no cover - Windows
        return _fallback_dir(workdir, path)
    walk = _Walk(workdir, path)
    try:
        _walk_folders(walk, parts, create=create, keep_last=False)
        fd = walk.fds.pop()
        name = walk.names[-1] if walk.names else ""
        parent = walk.fds.pop() if walk.fds else None
        return Opened(fd, parent, name, list(walk.names), os.fstat(fd))
    finally:
        walk.close()


def open_file(workdir: Workdir, path: str, mode: Mode = "read", *,
              create_parents: bool = False) -> Opened:
    """Open a regular file inside the workdir for ``read``, ``write`` or ``update``.

    ``write`` creates the file if missing; ``update`` reads and writes an
    existing one. The file is not truncated here: callers check :attr:`Opened.info` first
    and truncate the descriptor themselves.

    Raises:
        NotAFileError: it is a folder, FIFO, socket or device.
        HardLinkError: ``write``/``update`` on a file with other hard links.
        BuiltinToolError: it does not exist (``read``/``update``), or leads out.
    """
    parts = path_parts(workdir, path)
    if not parts:
        raise NotAFileError(f"{path!r} is the working directory itself; name a file in it")
    if not FD_WALK:  # pragma: no cover - Windows
        return _fallback_file(workdir, path, mode, create_parents)
    flags = {"read": os.O_RDONLY, "write": os.O_WRONLY | os.O_CREAT,
             "update": os.O_RDWR}[mode] | _NOFOLLOW | _NONBLOCK | _CLOEXEC
    walk = _Walk(workdir, path)
    pending = list(parts)
    try:
        while True:
            name = _walk_folders(walk, pending, create=create_parents, keep_last=True)
            if name is None:  # the path ended in '..' or a link to a folder
                raise NotAFileError(f"{path!r} is a folder, not a file")
            try:
                before = os.stat(name, dir_fd=walk.fd, follow_symlinks=False)
            except FileNotFoundError:
                if mode != "write":
                    raise MissingFileError(f"{path!r} does not exist") from None
                before = None
            if before is not None and stat.S_ISLNK(before.st_mode):
                walk.follow(name, pending)
                continue
            if before is not None and not stat.S_ISREG(before.st_mode):
                raise NotAFileError(f"{path!r} is {kind_of(before.st_mode)}; not opened")
            try:
                fd = os.open(name, flags, 0o666, dir_fd=walk.fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK) and walk.is_symlink(name):
                    walk.follow(name, pending)  # swapped for a link after the check
                    continue
                if exc.errno == errno.EISDIR:
                    raise NotAFileError(f"{path!r} is a folder, not a file") from None
                if exc.errno == errno.ENXIO:
                    raise NotAFileError(f"{path!r} is not a regular file; not opened") from None
                raise
            opened = Opened(fd, walk.fds.pop(), name, [*walk.names, name], os.fstat(fd),
                            created=before is None)
            try:
                _check_opened(opened, path, mode)
            except BaseException:
                opened.close()
                raise
            return opened
    finally:
        walk.close()


def _check_opened(opened: Opened, path: str, mode: Mode) -> None:
    if not stat.S_ISREG(opened.info.st_mode):
        raise NotAFileError(f"{path!r} is {kind_of(opened.info.st_mode)}; not opened")
    if mode != "read" and opened.info.st_nlink > 1:
        raise HardLinkError(
            f"{path!r} has {opened.info.st_nlink} hard links; writing it would also change "
            "the other names, which may lie outside the working directory. Refused: delete "
            "it and write a new file instead")


@contextlib.contextmanager
def reading(workdir: Workdir, path: str) -> Iterator[Opened]:
    """An open regular file for reading, closed when the ``with`` block ends."""
    opened = open_file(workdir, path, "read")
    try:
        yield opened
    finally:
        opened.close()


def read_bytes(opened: Opened, limit: int) -> bytes:
    """Up to ``limit`` bytes from the start of an open file."""
    chunks = []
    left = limit
    offset = 0
    while left > 0:
        chunk = os.pread(opened.fd, min(left, 1 << 20), offset)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def replace_content(opened: Opened, data: bytes) -> None:
    """Truncate an open file and write ``data`` into it."""
    os.ftruncate(opened.fd, 0)
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(opened.fd, view[offset:offset + (1 << 20)], offset)


# -- Windows: no openat; resolve and check (the race is narrowed, not closed) ----------
def _fallback_dir(workdir: Workdir, path: str) -> Opened:  # pragma: no cover - Windows
    target = workdir.resolve(path)
    if not target.is_dir():
        raise BuiltinToolError(f"{path!r} is not a folder")
    fd = os.open(target, os.O_RDONLY)
    return Opened(fd, None, target.name, _parts_of(workdir, target), os.fstat(fd))


def _fallback_file(workdir: Workdir, path: str, mode: Mode,
                   create_parents: bool) -> Opened:  # pragma: no cover - Windows
    target = workdir.resolve(path)
    if create_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not target.is_file():
        raise NotAFileError(f"{path!r} is not a regular file; not opened")
    flags = {"read": os.O_RDONLY, "write": os.O_WRONLY | os.O_CREAT, "update": os.O_RDWR}[mode]
    try:
        fd = os.open(target, flags | getattr(os, "O_BINARY", 0), 0o666)
    except FileNotFoundError:
        raise BuiltinToolError(f"{path!r} does not exist") from None
    opened = Opened(fd, None, target.name, _parts_of(workdir, target), os.fstat(fd))
    try:
        _check_opened(opened, path, mode)
    except BaseException:
        opened.close()
        raise
    return opened


def _parts_of(workdir: Workdir, target: Path) -> list[str]:  # pragma: no cover - Windows
    return [p for p in target.relative_to(workdir.root).parts if p not in ("", ".")]
